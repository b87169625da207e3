package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// client is an S3 client that goes through p and never retries, so that
// every call is one request.
func client(srv *minio.Server, p *Proxy) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(p.URL),
		Region:       srv.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		Retryer:      aws.NopRetryer{},
	})
}

func put(ctx context.Context, c *s3.Client, bucket, key string, body []byte) error {
	_, err := c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		IfNoneMatch: aws.String("*"),
	})
	return err
}

// exists asks MinIO directly, past the proxy.
func exists(t *testing.T, srv *minio.Server, bucket, key string) bool {
	t.Helper()
	_, err := srv.Client().HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	var nf *types.NotFound
	switch {
	case err == nil:
		return true
	case errors.As(err, &nf):
		return false
	}
	t.Fatalf("HeadObject %s: %v", key, err)
	return false
}

func apiCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func TestProxy(t *testing.T) {
	srv := minio.Start(t)
	bucket := srv.NewBucket(t)
	ctx := context.Background()

	t.Run("PassThroughAndOperations", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 1)
		c := client(srv, p)
		body := []byte("through the proxy")
		if err := put(ctx, c, bucket, "pass/a", body); err != nil {
			t.Fatal(err)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("pass/a")})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, body) {
			t.Errorf("GetObject = %q, want %q", got, body)
		}
		if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("pass/a")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("pass/")}); err != nil {
			t.Fatal(err)
		}
		mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp")})
		if err != nil {
			t.Fatal(err)
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp"),
			UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp"), UploadId: mp.UploadId}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp"),
			UploadId: mp.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}}); err != nil {
			t.Fatal(err)
		}
		mp2, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp2")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("pass/mp2"), UploadId: mp2.UploadId}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("pass/a")}); err != nil {
			t.Fatal(err)
		}
		for op, n := range map[Op]int{PutObject: 1, GetObject: 1, HeadObject: 1, ListObjects: 1, CreateMultipartUpload: 2,
			UploadPart: 1, ListParts: 1, ListMultipartUploads: 1, CompleteMultipartUpload: 1, AbortMultipartUpload: 1, DeleteObject: 1} {
			if got := p.Requests(op); got != n || p.Count(op, Forwarded) != n {
				t.Errorf("%s: %d requests, %d forwarded; want %d each", op, got, p.Count(op, Forwarded), n)
			}
		}
		if n := p.Requests(Other); n != 0 {
			t.Errorf("%d requests not recognised:\n%s", n, p)
		}
		if !exists(t, srv, bucket, "pass/mp") || exists(t, srv, bucket, "pass/a") {
			t.Error("objects in MinIO do not match the calls made through the proxy")
		}
	})

	t.Run("EarlyAnswer", func(t *testing.T) {
		// MinIO refuses a conditional PUT of an existing key before it has
		// read the body. The proxy passes the refusal on whole, so that a
		// client sees only the faults that the proxy counts.
		p := Start(t, srv.Endpoint, 2)
		p.SetRates(Rates{Delay: 0.5, MaxDelay: 100 * time.Millisecond})
		c := client(srv, p)
		body := bytes.Repeat([]byte("e"), 6<<20) // sent with Expect: 100-continue
		if err := put(ctx, c, bucket, "early", body); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := put(ctx, c, bucket, "early", body); apiCode(err) != "PreconditionFailed" {
				t.Errorf("conditional PUT %d of an existing key: err = %v, want PreconditionFailed", i, err)
			}
		}
	})

	t.Run("Errors", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 2)
		c := client(srv, p)
		p.SetRatesFor(Rates{Error503: 1}, PutObject)
		p.SetRatesFor(Rates{Error500: 1}, HeadObject)
		err := put(ctx, c, bucket, "err/a", []byte("x"))
		if code := apiCode(err); code != "SlowDown" {
			t.Errorf("PutObject through 503: err = %v, want SlowDown", err)
		}
		var re interface{ HTTPStatusCode() int }
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusServiceUnavailable {
			t.Errorf("PutObject through 503: err = %v, want status 503", err)
		}
		_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("err/a")})
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusInternalServerError {
			t.Errorf("HeadObject through 500: err = %v, want status 500", err)
		}
		if exists(t, srv, bucket, "err/a") {
			t.Error("a PUT answered 503 by the proxy reached MinIO")
		}
		if p.Count(PutObject, Error503) != 1 || p.Count(HeadObject, Error500) != 1 || p.Count("", Forwarded) != 0 {
			t.Errorf("counts:\n%s", p)
		}
		j := p.Journal()
		if lines := strings.Split(strings.TrimSpace(j), "\n"); len(lines) != 2 ||
			!strings.Contains(lines[0], "PutObject") || !strings.Contains(lines[0], "503") || !strings.Contains(lines[0], "PUT /"+bucket+"/err/a") ||
			!strings.Contains(lines[1], "HeadObject") || !strings.Contains(lines[1], "500") || strings.Contains(j, "IN FLIGHT") {
			t.Errorf("journal:\n%s", j)
		}
	})

	t.Run("DropBefore", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 3)
		c := client(srv, p)
		p.SetRatesFor(Rates{DropBefore: 1}, PutObject)
		for i := range 4 {
			key := fmt.Sprintf("drop-before/%d", i)
			err := put(ctx, c, bucket, key, bytes.Repeat([]byte("y"), 3<<20))
			if err == nil || apiCode(err) != "" {
				t.Errorf("PUT cut short: err = %v, want a transport error", err)
			}
			if exists(t, srv, bucket, key) {
				t.Errorf("a PUT cut short by the proxy reached MinIO")
			}
		}
		if n := p.Count(PutObject, DropBefore); n != 4 {
			t.Errorf("%d drops counted, want 4", n)
		}
	})

	t.Run("DropAfter", func(t *testing.T) {
		// The request is carried out, the answer lost: the client sees a
		// failure for an object that exists.
		p := Start(t, srv.Endpoint, 4)
		c := client(srv, p)
		p.SetRatesFor(Rates{DropAfter: 1}, PutObject, CompleteMultipartUpload)
		// The SDK sends a body over 2 MiB with Expect: 100-continue, and the
		// server answers 100 Continue before its final answer.
		for _, size := range []int{1, 3 << 20} {
			key := fmt.Sprintf("drop-after/put-%d", size)
			body := bytes.Repeat([]byte("z"), size)
			p.SetRatesFor(Rates{DropAfter: 1}, PutObject)
			err := put(ctx, c, bucket, key, body)
			if err == nil || apiCode(err) != "" {
				t.Errorf("%d-byte PUT whose answer was dropped: err = %v, want a transport error", size, err)
			}
			if !exists(t, srv, bucket, key) {
				t.Errorf("%d-byte PUT whose answer was dropped did not reach MinIO", size)
			}
			// Its retry, conditional, is refused: the object is there.
			p.SetRatesFor(Rates{}, PutObject)
			if err := put(ctx, c, bucket, key, body); apiCode(err) != "PreconditionFailed" {
				t.Errorf("retried conditional %d-byte PUT: err = %v, want PreconditionFailed", size, err)
			}
		}

		mp, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("drop-after/mp")})
		if err != nil {
			t.Fatal(err)
		}
		part, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("drop-after/mp"),
			UploadId: mp.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("drop-after/mp"),
			UploadId: mp.UploadId, IfNoneMatch: aws.String("*"),
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: part.ETag}}}})
		if err == nil || apiCode(err) != "" {
			t.Errorf("completion whose answer was dropped: err = %v, want a transport error", err)
		}
		if !exists(t, srv, bucket, "drop-after/mp") {
			t.Error("a completion whose answer was dropped did not complete")
		}
		if p.Count(PutObject, DropAfter) != 2 || p.LostSuccesses(PutObject) != 2 ||
			p.Count(CompleteMultipartUpload, DropAfter) != 1 || p.LostSuccesses(CompleteMultipartUpload) != 1 {
			t.Errorf("counts:\n%s", p)
		}
	})

	t.Run("Delay", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 5)
		c := client(srv, p)
		p.SetRates(Rates{Delay: 1, MaxDelay: 300 * time.Millisecond})
		start := time.Now()
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 150*time.Millisecond {
			t.Errorf("a delayed request took %v, want at least MaxDelay/2", took)
		}
		if p.Count(HeadBucket, Delayed) != 1 || p.Count(HeadBucket, Forwarded) != 1 {
			t.Errorf("counts:\n%s", p)
		}
	})

	t.Run("Inject", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 6)
		c := client(srv, p)
		p.Inject(HeadBucket, Error503, 2)
		var got []string
		for range 3 {
			_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
			got = append(got, fmt.Sprint(err == nil))
		}
		if strings.Join(got, " ") != "false false true" {
			t.Errorf("HeadBucket after Inject(503, 2): succeeded %v, want false false true", got)
		}
		if p.Count(HeadBucket, Error503) != 2 || p.Count(HeadBucket, Forwarded) != 1 {
			t.Errorf("counts:\n%s", p)
		}
	})

	t.Run("Down", func(t *testing.T) {
		p := Start(t, srv.Endpoint, 6)
		c := client(srv, p)
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		p.SetDown(true)
		for range 3 {
			if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil || apiCode(err) != "" {
				t.Errorf("HeadBucket while down: err = %v, want a transport error", err)
			}
		}
		if p.Refusals()+p.Count("", Refused) < 3 {
			t.Errorf("%d connections and %d requests refused, want 3 in all:\n%s", p.Refusals(), p.Count("", Refused), p)
		}
		p.SetDown(false)
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Errorf("HeadBucket after the proxy came back: %v", err)
		}
	})

	t.Run("Seeded", func(t *testing.T) {
		// One client, one request at a time: the same seed fails the same
		// requests.
		pattern := func(seed uint64) string {
			p := Start(t, srv.Endpoint, seed)
			p.SetRates(Rates{Error503: 0.3, Error500: 0.2})
			c := client(srv, p)
			var b strings.Builder
			for range 40 {
				if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
					b.WriteByte('x')
				} else {
					b.WriteByte('.')
				}
			}
			return b.String()
		}
		a, b, other := pattern(7), pattern(7), pattern(8)
		if a != b {
			t.Errorf("seed 7 gave %s, then %s", a, b)
		}
		if a == other {
			t.Errorf("seeds 7 and 8 both gave %s", a)
		}
		if n := strings.Count(a, "x"); n < 10 || n > 30 {
			t.Errorf("%d of 40 requests failed at a rate of 0.5: %s", n, a)
		}
	})
}

// TestOperation names requests as the SDK and other clients send them.
func TestOperation(t *testing.T) {
	for _, c := range []struct {
		method, target string
		want           Op
	}{
		{"PUT", "/b/k?x-id=PutObject", PutObject},
		{"PUT", "/b/dir/k.parquet", PutObject},
		{"PUT", "/b/k?partNumber=3&uploadId=abc&x-id=UploadPart", UploadPart},
		{"POST", "/b/k?uploads", CreateMultipartUpload},
		{"POST", "/b/k?uploadId=abc", CompleteMultipartUpload},
		{"DELETE", "/b/k?uploadId=abc&x-id=AbortMultipartUpload", AbortMultipartUpload},
		{"DELETE", "/b/k?x-id=DeleteObject", DeleteObject},
		{"GET", "/b/k?uploadId=abc&max-parts=1", ListParts},
		{"GET", "/b?uploads", ListMultipartUploads},
		{"GET", "/b/?uploads", ListMultipartUploads},
		{"GET", "/b?list-type=2&prefix=a%2F", ListObjects},
		{"GET", "/b?prefix=a", ListObjects},
		{"GET", "/b/k?x-id=GetObject", GetObject},
		{"GET", "/b/k", GetObject},
		{"HEAD", "/b/k", HeadObject},
		{"HEAD", "/b", HeadBucket},
		{"PUT", "/b", CreateBucket},
		{"POST", "/b?delete", DeleteObjects},
		{"PUT", "/b/k?tagging", Other},
		{"GET", "/", Other},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if got := Operation(r); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.target, got, c.want)
		}
	}
}

// TestGCSAndAzureOperations names requests as the GCS and Azure SDKs
// send them.
func TestGCSAndAzureOperations(t *testing.T) {
	for _, c := range []struct {
		name                         string
		classify                     Classifier
		method, target, contentRange string
		want                         Op
	}{
		{"gcs", GCSOperation, "POST", "/upload/storage/v1/b/bk/o?alt=json&ifGenerationMatch=0&name=a%2Fk&uploadType=multipart", "", PutObject},
		{"gcs", GCSOperation, "POST", "/upload/storage/v1/b/bk/o?ifGenerationMatch=0&uploadType=resumable", "", CreateMultipartUpload},
		{"gcs", GCSOperation, "PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=u1", "bytes 0-5242879/*", UploadPart},
		{"gcs", GCSOperation, "PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=u1", "bytes 5242880-9000000/9000001", CompleteMultipartUpload},
		{"gcs", GCSOperation, "PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=u1", "bytes */9000001", CompleteMultipartUpload},
		{"gcs", GCSOperation, "PUT", "/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=u1", "bytes */*", ListParts},
		{"gcs", GCSOperation, "DELETE", "/upload/storage/v1/b/bk/o?uploadType=resumable&upload_id=u1", "", AbortMultipartUpload},
		{"gcs", GCSOperation, "GET", "/storage/v1/b/bk/o/a/k.parquet?alt=json", "", HeadObject},
		{"gcs", GCSOperation, "GET", "/storage/v1/b/bk/o/a/k.parquet?alt=media", "", GetObject},
		{"gcs", GCSOperation, "GET", "/download/storage/v1/b/bk/o/a/k.parquet?alt=media", "", GetObject},
		{"gcs", GCSOperation, "GET", "/bk/a/k.parquet", "", GetObject},
		{"gcs", GCSOperation, "GET", "/storage/v1/b/bk/o?prefix=a%2F", "", ListObjects},
		{"gcs", GCSOperation, "DELETE", "/storage/v1/b/bk/o/a/k.parquet", "", DeleteObject},
		{"gcs", GCSOperation, "POST", "/storage/v1/b", "", Other},
		{"azure", AzureOperation, "PUT", "/acct/c/a/k.parquet", "", PutObject},
		{"azure", AzureOperation, "PUT", "/acct/c/a/k.parquet?blockid=YQ%3D%3D&comp=block", "", UploadPart},
		{"azure", AzureOperation, "PUT", "/acct/c/a/k.parquet?comp=blocklist", "", CompleteMultipartUpload},
		{"azure", AzureOperation, "GET", "/acct/c/a/k.parquet?blocklisttype=uncommitted&comp=blocklist", "", ListParts},
		{"azure", AzureOperation, "GET", "/acct/c/a/k.parquet", "", GetObject},
		{"azure", AzureOperation, "HEAD", "/acct/c/a/k.parquet", "", HeadObject},
		{"azure", AzureOperation, "GET", "/acct/c?comp=list&prefix=a%2F&restype=container", "", ListObjects},
		{"azure", AzureOperation, "DELETE", "/acct/c/a/k.parquet", "", DeleteObject},
		{"azure", AzureOperation, "PUT", "/acct/c?restype=container", "", CreateBucket},
		{"azure", AzureOperation, "GET", "/acct/?comp=properties&restype=service", "", Other},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.contentRange != "" {
			r.Header.Set("Content-Range", c.contentRange)
		}
		if got := c.classify(r); got != c.want {
			t.Errorf("%s: %s %s (%s): %s, want %s", c.name, c.method, c.target, c.contentRange, got, c.want)
		}
	}
}
