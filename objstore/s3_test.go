package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// openMinIO opens a store on a fresh bucket of srv, under a key prefix so
// that prefix handling is exercised by every test.
func openMinIO(t testing.TB, srv *minio.Server, opts ...Option) (Store, string) {
	t.Helper()
	bucket := srv.NewBucket(t)
	return openBucket(t, srv.Endpoint, srv, bucket, opts...), bucket
}

// openBucket opens a store on bucket of srv, reached at endpoint (srv's,
// or a proxy's in front of it).
func openBucket(t testing.TB, endpoint string, srv *minio.Server, bucket string, opts ...Option) Store {
	t.Helper()
	u := fmt.Sprintf("s3://%s/pre/fix?endpoint=%s&path_style=true&region=%s&part_size=%d",
		bucket, endpoint, srv.Region, testPartSize)
	opts = append([]Option{StaticCredentials(srv.AccessKey, srv.SecretKey, "")}, opts...)
	s, err := Open(context.Background(), u, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestS3Store(t *testing.T) {
	srv := minio.Start(t)
	testStore(t, backend{
		name: "s3",
		open: func(t *testing.T, opts ...Option) Store {
			s, _ := openMinIO(t, srv, opts...)
			return s
		},
		pending: s3Pending,
		startUpload: func(t *testing.T, s Store, key string) {
			ss := s.(*s3Store)
			ctx := context.Background()
			up, err := ss.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
				Bucket: aws.String(ss.bucket), Key: aws.String(ss.prefix + key),
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: aws.String(ss.bucket), Key: aws.String(ss.prefix + key), UploadId: up.UploadId,
				PartNumber: aws.Int32(1), Body: strings.NewReader("partial"),
			}); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// s3Pending lists the keys of the store's unfinished multipart uploads
// under prefix.
func s3Pending(t *testing.T, s Store, prefix string) []string {
	t.Helper()
	var keys []string
	for up, err := range s.(*s3Store).uploads(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, aws.ToString(up.Key))
	}
	return keys
}

// TestMinIOConditionalWrites pins the server behaviour create-if-absent
// rests on, with plain SDK calls: MinIO refuses with 412 Precondition
// Failed both a PUT and a multipart completion carrying If-None-Match: *
// when the key exists.
func TestMinIOConditionalWrites(t *testing.T) {
	srv := minio.Start(t)
	bucket := srv.NewBucket(t)
	client := srv.Client()
	ctx := context.Background()
	key := aws.String("k")
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: key, Body: strings.NewReader("first"), IfNoneMatch: aws.String("*"),
	}); err != nil {
		t.Fatalf("first conditional PUT: %v", err)
	}
	_, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: key, Body: strings.NewReader("second"), IfNoneMatch: aws.String("*"),
	})
	if code := statusCode(err); code != http.StatusPreconditionFailed {
		t.Errorf("conditional PUT over an existing key: status %d (%v), want 412", code, err)
	}

	up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	part, err := client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: aws.String(bucket), Key: key, UploadId: up.UploadId, PartNumber: aws.Int32(1),
		Body: strings.NewReader("third"),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: key, UploadId: up.UploadId, IfNoneMatch: aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{completedPart(1, part)}},
	})
	if code := statusCode(err); code != http.StatusPreconditionFailed {
		t.Errorf("conditional CompleteMultipartUpload over an existing key: status %d (%v), want 412", code, err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var got bytes.Buffer
	got.ReadFrom(out.Body)
	if got.String() != "first" {
		t.Errorf("object = %q after refused writes, want %q", got.String(), "first")
	}
}

func TestS3Prefix(t *testing.T) {
	srv := minio.Start(t)
	s, bucket := openMinIO(t, srv)
	defer s.Close()
	ctx := context.Background()
	create(t, s, "a/b", []byte("x"))
	client := srv.Client()
	if _, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("pre/fix/a/b")}); err != nil {
		t.Errorf("object not stored under the URL's prefix: %v", err)
	}
	// Objects beside the prefix are not the store's.
	for _, k := range []string{"pre/fixed", "pre/other", "a/b"} {
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader("y")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := listKeys(t, s, ""); len(got) != 1 || got[0] != "a/b" {
		t.Errorf("List = %q, want [a/b]", got)
	}
}

func TestS3ReaderAtSeesReplacement(t *testing.T) {
	srv := minio.Start(t)
	s, _ := openMinIO(t, srv)
	defer s.Close()
	ctx := context.Background()
	create(t, s, "k", []byte("version one"))
	r, err := s.NewReaderAt(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	create(t, s, "k", []byte("version two"))
	if _, err := r.ReadAt(make([]byte, 4), 0); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("ReadAt after replacement: err = %v, want 'object changed'", err)
	}
}

func TestS3MissingBucket(t *testing.T) {
	srv := minio.Start(t)
	s, err := Open(context.Background(),
		fmt.Sprintf("s3://no-such-bucket?endpoint=%s&path_style=true", srv.Endpoint),
		StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, _, err = s.Get(context.Background(), "k")
	if err == nil || errors.Is(err, ErrNotExist) {
		t.Errorf("Get from a missing bucket: err = %v, want an error that is not ErrNotExist", err)
	}
}

func TestS3ServerSideEncryption(t *testing.T) {
	srv := minio.Start(t, minio.WithKMS())
	tests := []struct {
		opt     Option
		want    types.ServerSideEncryption
		wantKey string
	}{
		{SSES3(), types.ServerSideEncryptionAes256, ""},
		{SSEKMS(minio.KMSKeyID), types.ServerSideEncryptionAwsKms, minio.KMSKeyID},
	}
	for _, tt := range tests {
		s, _ := openMinIO(t, srv, tt.opt)
		ss := s.(*s3Store)
		for _, n := range []int{10, testPartSize + 10} {
			key := fmt.Sprintf("enc/%d", n)
			data := payload(n, 9)
			create(t, s, key, data)
			out, err := ss.client.HeadObject(context.Background(), &s3.HeadObjectInput{
				Bucket: aws.String(ss.bucket), Key: aws.String(ss.prefix + key),
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.ServerSideEncryption != tt.want {
				t.Errorf("%s, %d bytes: ServerSideEncryption = %q, want %q", tt.want, n, out.ServerSideEncryption, tt.want)
			}
			if tt.wantKey != "" && !strings.HasSuffix(aws.ToString(out.SSEKMSKeyId), tt.wantKey) {
				t.Errorf("%s, %d bytes: SSEKMSKeyId = %q, want %q", tt.want, n, aws.ToString(out.SSEKMSKeyId), tt.wantKey)
			}
			if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
				t.Errorf("%s, %d bytes: encrypted object reads back wrong", tt.want, n)
			}
		}
		s.Close()
	}
}
