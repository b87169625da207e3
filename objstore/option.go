package objstore

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// S3 part size limits (S3 API): every part but the last must be at least
// 5 MiB, and no part may exceed 5 GiB.
const (
	MinPartSize     = 5 << 20
	MaxPartSize     = 5 << 30
	DefaultPartSize = 8 << 20
)

// Defaults and bounds of the S3 upload options.
const (
	DefaultConcurrency = 2
	MaxConcurrency     = 64
	DefaultMaxRetries  = 10
	// DefaultMaxRetryWait is the longest wait before one retry by
	// default (MaxRetryWait).
	DefaultMaxRetryWait = 20 * time.Second
	// MaxMaxRetryWait bounds MaxRetryWait.
	MaxMaxRetryWait = 10 * time.Minute
)

// Option configures Open. Options that do not apply to a store's kind are
// rejected by Open, except Buffers and OnRetry, which any store accepts so
// that the sink can hand the same ones to whatever store it is given.
type Option func(*options) error

type options struct {
	s3Only   []string // names of S3-only options given, for the file store's error
	region   string
	endpoint string
	// pathStyle is nil when unset, so that the URL's value can be
	// overridden by an explicit false.
	pathStyle    *bool
	accessKey    string
	secretKey    string
	sessionToken string
	sse          string // "", "AES256" or "aws:kms"
	kmsKeyID     string
	partSize     int
	concurrency  int
	maxRetries   int
	maxRetryWait time.Duration
	conditional  bool
	pool         BufferPool
	onRetry      func(op string, attempt int, err error)
	// onRetryAfter, for the package's tests, is called with the wait that
	// a Retry-After made the store choose, before it waits.
	onRetryAfter func(wait time.Duration)
}

// defaultOptions returns the options before any is applied.
func defaultOptions() options {
	return options{
		partSize:     DefaultPartSize,
		concurrency:  DefaultConcurrency,
		maxRetries:   DefaultMaxRetries,
		maxRetryWait: DefaultMaxRetryWait,
		conditional:  true,
	}
}

// Region sets the S3 region. Defaults to the AWS default chain's region, or
// us-east-1 if it has none.
func Region(region string) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "Region")
		o.region = region
		return nil
	}
}

// Endpoint sets the base URL of an S3-compatible service, e.g.
// "http://127.0.0.1:9000". Defaults to AWS's endpoint for the region. For
// GCS it is the JSON API's endpoint; for Azure the storage account's URL,
// e.g. "http://127.0.0.1:10000/devstoreaccount1" for Azurite.
func Endpoint(endpoint string) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "Endpoint")
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint %q: want http(s)://host[:port]", endpoint)
		}
		o.endpoint = endpoint
		return nil
	}
}

// PathStyle selects path-style addressing (endpoint/bucket/key) instead of
// virtual-hosted style (bucket.endpoint/key); most self-hosted S3 services
// need it. Defaults to false.
func PathStyle(enabled bool) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "PathStyle")
		o.pathStyle = &enabled
		return nil
	}
}

// StaticCredentials makes the S3 client sign with these keys instead of
// using the default AWS credential chain. sessionToken may be empty.
func StaticCredentials(accessKey, secretKey, sessionToken string) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "StaticCredentials")
		if accessKey == "" || secretKey == "" {
			return fmt.Errorf("static credentials need both an access key and a secret key")
		}
		o.accessKey, o.secretKey, o.sessionToken = accessKey, secretKey, sessionToken
		return nil
	}
}

// SSES3 asks S3 to encrypt new objects with S3-managed keys (SSE-S3).
// Defaults to the bucket's default encryption.
func SSES3() Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "SSES3")
		o.sse, o.kmsKeyID = "AES256", ""
		return nil
	}
}

// SSEKMS asks S3 to encrypt new objects with a KMS key (SSE-KMS). An empty
// keyID means the account's default KMS key. Defaults to the bucket's
// default encryption.
func SSEKMS(keyID string) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "SSEKMS")
		o.sse, o.kmsKeyID = "aws:kms", keyID
		return nil
	}
}

// PartSize sets the size of S3 multipart upload parts, which is also the
// size below which an upload is a single PUT, and the size of the buffers
// taken from the BufferPool. It must be between MinPartSize and
// MaxPartSize. On GCS it is the resumable upload's chunk, on Azure the
// block size. Defaults to DefaultPartSize (8 MiB).
func PartSize(n int) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "PartSize")
		if n < MinPartSize || n > MaxPartSize {
			return fmt.Errorf("part size %d: want %d..%d bytes", n, MinPartSize, MaxPartSize)
		}
		o.partSize = n
		return nil
	}
}

// Concurrency sets how many parts of one S3 upload may be in flight at
// once; Write blocks while that many are. An upload then holds up to n+1
// part buffers: n in flight and one filling. It must be between 1 and
// MaxConcurrency. On Azure it bounds the blocks of one upload being
// staged at once. Defaults to DefaultConcurrency (2).
func Concurrency(n int) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "Concurrency")
		if n < 1 || n > MaxConcurrency {
			return fmt.Errorf("concurrency %d: want 1..%d", n, MaxConcurrency)
		}
		o.concurrency = n
		return nil
	}
}

// MaxRetries sets how many times one S3 request is retried after a
// transient failure (5xx, throttling, timeout, broken connection), with
// exponential backoff and full jitter between attempts, capped at
// MaxRetryWait (20 s by default) per wait; 0 disables retries. With the
// defaults, a request gives up after about 40 s of waits on average, 85 s
// at most, unless Retry-After asks for longer waits. It overrides
// AWS_MAX_ATTEMPTS and the shared configuration's max_attempts. On GCS it
// bounds each request's retries, and a resumable upload's failures in a
// row; on Azure each request's retries, with the SDK's exponential backoff
// and jitter between the same bounds. It must not be negative. Defaults
// to DefaultMaxRetries (10), that is, at most 11 attempts.
func MaxRetries(n int) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "MaxRetries")
		if n < 0 {
			return fmt.Errorf("max retries %d: must not be negative", n)
		}
		o.maxRetries = n
		return nil
	}
}

// MaxRetryWait sets the longest wait before one retry of a request, on
// every store but a directory: it caps the exponential backoff, and a
// Retry-After that a throttled or unavailable service (429, 503) sends
// with its answer. The store waits at least what Retry-After asks, up to
// d, then retries: a Retry-After beyond d shortens to d, never fails the
// request. d must be positive and at most MaxMaxRetryWait. Defaults to
// DefaultMaxRetryWait (20 s).
func MaxRetryWait(d time.Duration) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "MaxRetryWait")
		if d <= 0 || d > MaxMaxRetryWait {
			return fmt.Errorf("max retry wait %v: want more than 0 and at most %v", d, MaxMaxRetryWait)
		}
		o.maxRetryWait = d
		return nil
	}
}

// ConditionalWrites tells whether the S3 service honours If-None-Match: *
// on PutObject and CompleteMultipartUpload. With false, the store sends no
// condition and Commit overwrites an existing object instead of failing
// with ErrExists; the package documentation says what that costs. Defaults
// to true.
func ConditionalWrites(enabled bool) Option {
	return func(o *options) error {
		o.s3Only = append(o.s3Only, "ConditionalWrites")
		o.conditional = enabled
		return nil
	}
}

// Buffers makes the store take its uploads' part buffers from pool, which
// may be shared with other stores. The directory store needs no buffers
// and ignores it. Defaults to a free list of the store's own, without a
// limit.
func Buffers(pool BufferPool) Option {
	return func(o *options) error {
		if pool == nil {
			return fmt.Errorf("buffers: nil pool")
		}
		o.pool = pool
		return nil
	}
}

// OnRetry has hook called before every retry of an S3 request, with the
// operation's name (e.g. "UploadPart"), the number of the attempt that
// failed (1 for the first) and its error, once the backoff has elapsed.
// On GCS, the SDK decides the retries and hook is called when it does,
// before the backoff; for a resumable upload, attempt counts the failures
// in a row of its requests (the session's start, its chunks). On Azure,
// as on S3, it is called once the backoff has elapsed, with the REST
// operation's name (e.g. "PutBlock").
// It is called from the goroutine making the request, which waits for it:
// it must be quick and safe for concurrent use. The directory store never
// retries and ignores it. Defaults to none.
func OnRetry(hook func(op string, attempt int, err error)) Option {
	return func(o *options) error {
		o.onRetry = hook
		return nil
	}
}

// s3Params turns the query parameters of an s3:// URL into options, which
// run before the caller's.
func s3Params(q url.Values) ([]Option, error) {
	var opts []Option
	for _, name := range slices.Sorted(maps.Keys(q)) { // sorted: errors do not depend on map order
		values := q[name]
		if len(values) != 1 {
			return nil, fmt.Errorf("parameter %s given %d times", name, len(values))
		}
		v := values[0]
		switch name {
		case "region":
			opts = append(opts, Region(v))
		case "endpoint":
			opts = append(opts, Endpoint(v))
		case "path_style":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("path_style=%q: want true or false", v)
			}
			opts = append(opts, PathStyle(b))
		case "sse":
			switch v {
			case "AES256":
				opts = append(opts, SSES3())
			case "aws:kms":
				opts = append(opts, SSEKMS(q.Get("sse_kms_key_id")))
			default:
				return nil, fmt.Errorf("sse=%q: want AES256 or aws:kms", v)
			}
		case "sse_kms_key_id":
			if q.Get("sse") != "aws:kms" {
				return nil, fmt.Errorf("sse_kms_key_id needs sse=aws:kms")
			}
		case "part_size":
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("part_size=%q: want a number of bytes", v)
			}
			opts = append(opts, PartSize(n))
		case "max_retry_wait":
			opt, err := maxRetryWaitParam(v)
			if err != nil {
				return nil, err
			}
			opts = append(opts, opt)
		case "conditional_writes":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("conditional_writes=%q: want true or false", v)
			}
			opts = append(opts, ConditionalWrites(b))
		default:
			return nil, fmt.Errorf("unknown parameter %q (want region, endpoint, path_style, sse, sse_kms_key_id, part_size, max_retry_wait or conditional_writes)", name)
		}
	}
	return opts, nil
}

// maxRetryWaitParam is the option of a max_retry_wait URL parameter, a
// Go duration such as 30s.
func maxRetryWaitParam(v string) (Option, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("max_retry_wait=%q: want a duration such as 30s", v)
	}
	return MaxRetryWait(d), nil
}

func applyOptions(o *options, opts []Option) error {
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}

// PutOption configures one Create.
type PutOption func(*putOptions)

type putOptions struct {
	contentType string
	metadata    map[string]string
}

// ContentType sets the object's media type, e.g.
// "application/vnd.apache.parquet". The directory store ignores it.
func ContentType(mediaType string) PutOption {
	return func(o *putOptions) { o.contentType = mediaType }
}

// Metadata adds a user metadata entry (x-amz-meta-key on S3). On Azure,
// whose metadata names are C# identifiers, every character of key but
// ASCII letters, digits and '_' becomes '_' (first-offset is first_offset).
// The directory store ignores it.
func Metadata(key, value string) PutOption {
	return func(o *putOptions) {
		if o.metadata == nil {
			o.metadata = make(map[string]string)
		}
		o.metadata[key] = value
	}
}

func newPutOptions(opts []PutOption) putOptions {
	var po putOptions
	for _, opt := range opts {
		opt(&po)
	}
	return po
}
