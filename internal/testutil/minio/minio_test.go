package minio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

func TestServer(t *testing.T) {
	srv := Start(t)
	bucket := srv.NewBucket(t)
	ctx := context.Background()
	client := srv.Client()

	body := []byte("hello, minio")
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("a/b.txt"), Body: bytes.NewReader(body),
	}); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b.txt")})
	if err != nil {
		t.Fatalf("GetObject: %v", err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("GetObject = %q, %v; want %q", got, err, body)
	}

	// The credentials are enforced: a wrong secret is refused.
	bad := s3.New(s3.Options{
		BaseEndpoint: aws.String(srv.Endpoint), Region: srv.Region, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, "wrong-"+srv.SecretKey, ""),
	})
	_, err = bad.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		t.Errorf("HeadBucket with a wrong secret: err = %v, want an S3 API error", err)
	}
}

func TestServersAreIsolated(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.Endpoint == b.Endpoint || a.AccessKey == b.AccessKey || a.SecretKey == b.SecretKey {
		t.Fatalf("two servers share endpoint or credentials: %+v %+v", a, b)
	}
	bucket := a.NewBucket(t)
	_, err := b.Client().HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		t.Errorf("bucket %s of server A is visible on server B", bucket)
	}
}

func TestStopOnCleanup(t *testing.T) {
	var endpoint string
	t.Run("server", func(t *testing.T) {
		endpoint = Start(t).Endpoint
	})
	// The subtest's cleanup has run: nothing answers any more.
	client := &http.Client{Timeout: time.Second}
	if resp, err := client.Get(endpoint + "/minio/health/live"); err == nil {
		resp.Body.Close()
		t.Errorf("server at %s still answers after its test ended", endpoint)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PQSINK_MINIO", t.TempDir()+"/no-such-minio")
	_, err := binary()
	if err == nil || !strings.Contains(err.Error(), "provision.sh") {
		t.Errorf("binary() with a missing file: err = %v, want a hint naming provision.sh", err)
	}
}
