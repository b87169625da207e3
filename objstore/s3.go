package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

const (
	// maxParts is S3's limit on the parts of one multipart upload.
	maxParts = 10000
	// abortTimeout bounds the clean-up of a failed multipart upload. It
	// runs on a context detached from the caller's, which may be the very
	// reason for the failure (cancelled).
	abortTimeout = 30 * time.Second
	// defaultRegion is used when neither options nor the AWS chain name
	// one; S3-compatible services generally accept it.
	defaultRegion = "us-east-1"
)

// s3Store keeps objects under a key prefix of one bucket.
type s3Store struct {
	client      *s3.Client
	bucket      string
	prefix      string // "" or ends in "/"
	sse         types.ServerSideEncryption
	kmsKeyID    string
	partSize    int
	concurrency int  // parts in flight per upload
	conditional bool // send If-None-Match: * when committing
	pool        BufferPool
}

func openS3(ctx context.Context, u *url.URL, opts []Option) (Store, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("objstore: %s: no bucket", u.Redacted())
	}
	urlOpts, err := s3Params(u.Query())
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
	}
	o := defaultOptions()
	if err := applyOptions(&o, append(urlOpts, opts...)); err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
	}

	var loadOpts []func(*config.LoadOptions) error
	if o.region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.region))
	}
	if o.accessKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.accessKey, o.secretKey, o.sessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: loading AWS configuration: %w", u.Redacted(), err)
	}
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.endpoint != "" {
			so.BaseEndpoint = aws.String(o.endpoint)
		}
		if o.pathStyle != nil {
			so.UsePathStyle = *o.pathStyle
		}
		// Ranged reads of multipart objects cannot be checksum-validated;
		// the SDK would log that on every ReadAt.
		so.DisableLogOutputChecksumValidationSkipped = true
		so.Retryer = newRetryer(o)
		// A RetryMaxAttempts from the environment or the shared config
		// would replace our retryer's limit: MaxRetries decides.
		so.RetryMaxAttempts = 0
		if o.onRetry != nil {
			so.APIOptions = append(so.APIOptions, retryHook(o.onRetry))
		}
	})

	prefix := strings.TrimPrefix(u.Path, "/")
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	s := &s3Store{
		client:      client,
		bucket:      u.Host,
		prefix:      prefix,
		sse:         types.ServerSideEncryption(o.sse),
		kmsKeyID:    o.kmsKeyID,
		partSize:    o.partSize,
		concurrency: o.concurrency,
		conditional: o.conditional,
		pool:        o.pool,
	}
	if s.pool == nil {
		s.pool = &freeList{}
	}
	return s, nil
}

// location names an object in errors.
func (s *s3Store) location(key string) string {
	return "s3://" + s.bucket + "/" + s.prefix + key
}

// completedPart carries a part's ETag and whatever checksum the SDK sent
// with it into the completion request, which must repeat them.
func completedPart(number int32, out *s3.UploadPartOutput) types.CompletedPart {
	return types.CompletedPart{
		PartNumber:        aws.Int32(number),
		ETag:              out.ETag,
		ChecksumCRC32:     out.ChecksumCRC32,
		ChecksumCRC32C:    out.ChecksumCRC32C,
		ChecksumCRC64NVME: out.ChecksumCRC64NVME,
		ChecksumSHA1:      out.ChecksumSHA1,
		ChecksumSHA256:    out.ChecksumSHA256,
	}
}

func (s *s3Store) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get: %w", err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
	})
	if err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get %s: %w", s.location(key), mapError(err))
	}
	return out.Body, Info{
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     unquote(out.ETag),
		Modified: aws.ToTime(out.LastModified),
	}, nil
}

func (s *s3Store) Head(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("objstore: head: %w", err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
	})
	if err != nil {
		return Info{}, fmt.Errorf("objstore: head %s: %w", s.location(key), mapError(err))
	}
	return Info{
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     unquote(out.ETag),
		Modified: aws.ToTime(out.LastModified),
	}, nil
}

func (s *s3Store) NewReaderAt(ctx context.Context, key string) (ReaderAt, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	return &s3ReaderAt{ctx: ctx, store: s, info: info}, nil
}

// s3ReaderAt reads ranges with ranged GETs pinned to the ETag seen when it
// was opened, so that a replaced object fails loudly instead of mixing two
// versions.
type s3ReaderAt struct {
	ctx   context.Context
	store *s3Store
	info  Info
}

func (r *s3ReaderAt) Size() int64 { return r.info.Size }

func (r *s3ReaderAt) Close() error { return nil }

func (r *s3ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("objstore: read %s: negative offset %d", r.store.location(r.info.Key), off)
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := min(int64(len(p)), r.info.Size-off)
	out, err := r.store.client.GetObject(r.ctx, &s3.GetObjectInput{
		Bucket:  aws.String(r.store.bucket),
		Key:     aws.String(r.store.prefix + r.info.Key),
		Range:   aws.String(fmt.Sprintf("bytes=%d-%d", off, off+want-1)),
		IfMatch: aws.String(`"` + r.info.ETag + `"`),
	})
	if err != nil {
		if statusCode(err) == http.StatusPreconditionFailed {
			return 0, fmt.Errorf("objstore: read %s at %d: object changed since it was opened", r.store.location(r.info.Key), off)
		}
		return 0, fmt.Errorf("objstore: read %s at %d: %w", r.store.location(r.info.Key), off, mapError(err))
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p[:want])
	if err != nil {
		return n, fmt.Errorf("objstore: read %s at %d: %w", r.store.location(r.info.Key), off, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (s *s3Store) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
			Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), mapError(err)))
				return
			}
			for _, obj := range page.Contents {
				info := Info{
					Key:      strings.TrimPrefix(aws.ToString(obj.Key), s.prefix),
					Size:     aws.ToInt64(obj.Size),
					ETag:     unquote(obj.ETag),
					Modified: aws.ToTime(obj.LastModified),
				}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

func (s *s3Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("objstore: delete: %w", err)
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
	})
	if err != nil && statusCode(err) != http.StatusNotFound {
		return fmt.Errorf("objstore: delete %s: %w", s.location(key), mapError(err))
	}
	return nil
}

func (s *s3Store) AbortStaleUploads(ctx context.Context, prefix string, olderThan time.Duration) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	aborted := 0
	for up, err := range s.uploads(ctx, prefix) {
		if err != nil {
			return aborted, fmt.Errorf("objstore: listing uploads under %s: %w", s.location(prefix), err)
		}
		if up.Initiated == nil || !up.Initiated.Before(cutoff) {
			continue
		}
		_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.bucket), Key: up.Key, UploadId: up.UploadId,
		})
		if err != nil && statusCode(err) != http.StatusNotFound {
			return aborted, fmt.Errorf("objstore: aborting upload %s of s3://%s/%s: %w",
				aws.ToString(up.UploadId), s.bucket, aws.ToString(up.Key), mapError(err))
		}
		aborted++
	}
	return aborted, nil
}

// uploads yields the unfinished multipart uploads whose keys start with
// prefix. It lists the whole bucket and filters here: MinIO applies the
// Prefix of ListMultipartUploads only as an exact key, and silently returns
// nothing for a real prefix, which would leave stale uploads forever.
// Unfinished uploads are few, so the full listing is cheap.
func (s *s3Store) uploads(ctx context.Context, prefix string) iter.Seq2[types.MultipartUpload, error] {
	return func(yield func(types.MultipartUpload, error) bool) {
		pages := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
			Bucket: aws.String(s.bucket),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(types.MultipartUpload{}, mapError(err))
				return
			}
			for _, up := range page.Uploads {
				if strings.HasPrefix(aws.ToString(up.Key), s.prefix+prefix) && !yield(up, nil) {
					return
				}
			}
		}
	}
}

func (s *s3Store) Close() error { return nil }

// mapError adds ErrExists or ErrNotExist to the SDK's errors that mean
// them, keeping the SDK's error in the chain.
func mapError(err error) error {
	switch statusCode(err) {
	case http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", ErrExists, err)
	case http.StatusNotFound:
		switch errorCode(err) {
		case "NoSuchBucket": // a configuration error, not a missing object
			return err
		case "NoSuchUpload": // the upload is missing, not the object
			return err
		}
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	}
	return err
}

// statusCode returns the HTTP status of a failed S3 call, or 0.
func statusCode(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func unquote(etag *string) string {
	return strings.Trim(aws.ToString(etag), `"`)
}
