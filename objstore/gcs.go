package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
)

// GCS chunk sizes are multiples of 256 KiB (the resumable upload
// protocol's granularity); PartSize values are rounded up to one.
const gcsChunkUnit = 256 << 10

// gcsChunkRetryDeadline bounds the retries of one chunk of a resumable
// upload (the SDK's default is 32 s): about as long as an S3 request's
// retries may last, so that a short outage of the service fails neither.
const gcsChunkRetryDeadline = 90 * time.Second

// gcsStore keeps objects under a key prefix of one Google Cloud Storage
// bucket, through the official SDK (cloud.google.com/go/storage) and its
// JSON API.
//
// Create-if-absent is the ifGenerationMatch=0 precondition
// (storage.Conditions{DoesNotExist: true}) on every write: GCS refuses
// with 412 Precondition Failed to create an object whose name exists, which
// Commit reports as ErrExists.
//
// An object of at most one chunk (PartSize, rounded up to 256 KiB) goes up
// at Commit in a single request, streamed from the part buffer taken from
// the BufferPool. A larger one becomes a resumable upload when its first
// chunk fills. The SDK then keeps a chunk buffer of its own, which it
// allocates and which no option supplies: the store reserves as much in
// the pool (BufferReserver) for as long as the upload lasts, so that the
// memory budget counts it. An upload so holds at most two chunks: the one
// Write fills and the SDK's.
type gcsStore struct {
	client *storage.Client
	// plain carries no retry settings: a handle's Retryer merges its
	// options into the settings the handle was made with, in place, so
	// the handles of each call, with settings of their own (the call's
	// context, for the waits that Retry-After asks), are made from it.
	plain        *storage.BucketHandle
	name         string // the bucket's name
	prefix       string // "" or ends in "/"
	chunkSize    int
	maxRetries   int
	maxRetryWait time.Duration
	pool         BufferPool
	onRetry      func(op string, attempt int, err error)
	onRetryAfter func(time.Duration) // see options.onRetryAfter
	// listPageSize is the number of objects asked for per listing page;
	// 0 leaves it to the service (1000 on GCS).
	listPageSize int
}

// gcsOptions are the Options that apply to gs:// stores besides Buffers
// and OnRetry, which every store takes.
var gcsOptions = []string{"Endpoint", "PartSize", "MaxRetries", "MaxRetryWait"}

func openGCS(ctx context.Context, u *url.URL, opts []Option) (Store, error) {
	if u.Host == "" {
		return nil, fmt.Errorf("objstore: %s: no bucket", u.Redacted())
	}
	urlOpts, err := urlParams(u.Query())
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
	}
	o := defaultOptions()
	if err := applyOptions(&o, append(urlOpts, opts...)); err != nil {
		return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
	}
	for _, name := range o.s3Only {
		if !slices.Contains(gcsOptions, name) {
			return nil, fmt.Errorf("objstore: %s: option %s applies only to s3:// stores", u.Redacted(), name)
		}
	}

	var copts []option.ClientOption
	if o.endpoint != "" {
		ep, noAuth, err := gcsEndpoint(o.endpoint)
		if err != nil {
			return nil, fmt.Errorf("objstore: %s: %w", u.Redacted(), err)
		}
		copts = append(copts, option.WithEndpoint(ep))
		if noAuth {
			copts = append(copts, option.WithoutAuthentication())
		}
	}
	// Without an endpoint, the SDK finds the Application Default
	// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata
	// server's: workload identity), or talks without authentication to
	// the emulator that STORAGE_EMULATOR_HOST names.
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: %s: opening a GCS client: %w", u.Redacted(), err)
	}
	s := &gcsStore{
		client:       client,
		name:         u.Host,
		prefix:       strings.TrimPrefix(u.Path, "/"),
		chunkSize:    (o.partSize + gcsChunkUnit - 1) / gcsChunkUnit * gcsChunkUnit,
		maxRetries:   o.maxRetries,
		maxRetryWait: o.maxRetryWait,
		pool:         o.pool,
		onRetry:      o.onRetry,
		onRetryAfter: o.onRetryAfter,
	}
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		s.prefix += "/"
	}
	if s.pool == nil {
		s.pool = &freeList{}
	}
	s.plain = client.Bucket(u.Host)
	return s, nil
}

// bucket returns a handle of the bucket whose reads, listings and deletes
// retry with the store's settings, their waits ended by the end of ctx.
// Writes take settings of their own per upload (gcsUpload.start): the SDK
// does not tell which attempt of which request of a resumable upload
// failed, so each upload counts its own.
func (s *gcsStore) bucket(ctx context.Context) *storage.BucketHandle {
	return s.plain.Retryer(s.retryOptions(func(err error, rc *storage.RetryContext) bool {
		if !gcsRetryable(err) {
			return false
		}
		if s.onRetry != nil {
			op, attempt := "GCS", 0
			if rc != nil {
				op, attempt = rc.Operation, rc.Attempt
			}
			s.onRetry(op, attempt, gcsRedact(err))
		}
		return s.waitRetryAfter(ctx, err)
	})...)
}

// waitRetryAfter waits, before the SDK's own backoff, for as long as a
// Retry-After in err's answer asks, up to MaxRetryWait, and reports
// whether ctx is still alive to retry. (Google's client ignores
// Retry-After; GCS itself throttles with 429 and no Retry-After, but
// proxies and private endpoints in front of it may send one.)
func (s *gcsStore) waitRetryAfter(ctx context.Context, err error) bool {
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		return true
	}
	ra := retryAfter(ge.Header, time.Now())
	if ra <= 0 {
		return true
	}
	d := retryWait(0, ra, s.maxRetryWait)
	if s.onRetryAfter != nil {
		s.onRetryAfter(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retryOptions returns the SDK's retry settings for the store's requests,
// with decide saying which failures to retry.
//
// The SDK retries idempotent requests only (RetryIdempotent, its default,
// stated here on purpose): reads, deletes, and writes that carry a
// generation precondition. Every write of this store carries
// ifGenerationMatch=0, so the SDK retries each of them, the start of a
// resumable upload and each of its chunks included: a retry of a write that
// did land meets the precondition and fails with 412, never overwrites. 412
// is never retried (it is not transient).
func (s *gcsStore) retryOptions(decide func(error, *storage.RetryContext) bool) []storage.RetryOption {
	return []storage.RetryOption{
		storage.WithPolicy(storage.RetryIdempotent),
		storage.WithMaxAttempts(min(s.maxRetries, 1<<30) + 1),
		storage.WithBackoff(gax.Backoff{Initial: retryBaseDelay, Max: s.maxRetryWait, Multiplier: 2}),
		storage.WithErrorFuncWithContext(decide),
	}
}

// urlParams turns the query parameters of a gs://, azblob:// or abfss://
// URL (endpoint, part_size, max_retry_wait) into options, which run before the caller's.
func urlParams(q url.Values) ([]Option, error) {
	var opts []Option
	for _, name := range slices.Sorted(maps.Keys(q)) {
		values := q[name]
		if len(values) != 1 {
			return nil, fmt.Errorf("parameter %s given %d times", name, len(values))
		}
		v := values[0]
		switch name {
		case "endpoint":
			opts = append(opts, Endpoint(v))
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
		default:
			return nil, fmt.Errorf("unknown parameter %q (want endpoint, part_size or max_retry_wait)", name)
		}
	}
	return opts, nil
}

// gcsEndpoint returns the JSON API base URL of endpoint, and whether the
// client talks to it without authentication. A bare http(s)://host[:port]
// gets GCS's path, /storage/v1/; a URL with a path is taken as it is. A
// plain http:// endpoint is an emulator (fake-gcs-server): no credentials
// are looked up, and none would travel in clear text. An https:// one is a
// private endpoint of the real service, and uses the default credentials.
func gcsEndpoint(endpoint string) (string, bool, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false, fmt.Errorf("endpoint %q: want http(s)://host[:port]", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/storage/v1/"
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u.String(), u.Scheme == "http", nil
}

// gcsRetryable reports whether a failed GCS request is transient: 408,
// 429, 5xx and broken connections, as the SDK decides, and never a 412.
func gcsRetryable(err error) bool {
	if gcsStatus(err) == http.StatusPreconditionFailed {
		return false
	}
	return storage.ShouldRetry(err)
}

// uploadID matches the session id in the URI of a resumable upload.
var uploadID = regexp.MustCompile(`upload_id=[^&"'\s]+`)

// gcsRedact hides the session id of a resumable upload in err's text (a
// failed chunk's *url.Error quotes its URI): whoever has the URI can
// write to the session, so Google tells to keep it as a secret. It also
// makes the text one line. The error chain underneath is kept for
// errors.Is and errors.As.
func gcsRedact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, "upload_id=") && !strings.Contains(msg, "\n") {
		return err
	}
	// An answer of the XML API (reads) quotes its XML body, over lines.
	msg = strings.Join(strings.Fields(uploadID.ReplaceAllString(msg, "upload_id=REDACTED")), " ")
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose text has a secret taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }

// gcsStatus returns the HTTP status of a failed GCS call, or 0.
func gcsStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// gcsError adds ErrExists or ErrNotExist to the SDK's errors that mean
// them, keeping the SDK's error in the chain. A missing bucket is a
// configuration error, not a missing object.
func gcsError(err error) error {
	err = gcsRedact(err)
	switch {
	case errors.Is(err, storage.ErrBucketNotExist):
		return err
	case errors.Is(err, storage.ErrObjectNotExist):
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	case gcsStatus(err) == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %w", ErrExists, err)
	}
	return err
}

// location names an object in errors.
func (s *gcsStore) location(key string) string {
	return "gs://" + s.name + "/" + s.prefix + key
}

// gcsInfo returns the Info of an object: its ETag is the generation, which
// GCS gives every new object under a name, and which pins range reads.
func gcsInfo(key string, size, generation int64, modified time.Time) Info {
	return Info{Key: key, Size: size, ETag: strconv.FormatInt(generation, 10), Modified: modified}
}

func (s *gcsStore) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	if err := checkKey(key); err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get: %w", err)
	}
	r, err := s.bucket(ctx).Object(s.prefix + key).NewReader(ctx)
	if err != nil {
		return nil, Info{}, fmt.Errorf("objstore: get %s: %w", s.location(key), gcsError(err))
	}
	return r, gcsInfo(key, r.Attrs.Size, r.Attrs.Generation, r.Attrs.LastModified), nil
}

func (s *gcsStore) Head(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("objstore: head: %w", err)
	}
	attrs, err := s.bucket(ctx).Object(s.prefix + key).Attrs(ctx)
	if err != nil {
		return Info{}, fmt.Errorf("objstore: head %s: %w", s.location(key), gcsError(err))
	}
	return gcsInfo(key, attrs.Size, attrs.Generation, attrs.Updated), nil
}

func (s *gcsStore) NewReaderAt(ctx context.Context, key string) (ReaderAt, error) {
	info, err := s.Head(ctx, key)
	if err != nil {
		return nil, err
	}
	gen, _ := strconv.ParseInt(info.ETag, 10, 64)
	return &gcsReaderAt{ctx: ctx, store: s, info: info, obj: s.bucket(ctx).Object(s.prefix + key).Generation(gen)}, nil
}

// gcsReaderAt reads ranges of the generation seen when it was opened, so
// that a replaced object fails loudly instead of mixing two versions.
type gcsReaderAt struct {
	ctx   context.Context
	store *gcsStore
	info  Info
	obj   *storage.ObjectHandle // pinned to the generation
}

func (r *gcsReaderAt) Size() int64 { return r.info.Size }

func (r *gcsReaderAt) Close() error { return nil }

func (r *gcsReaderAt) ReadAt(p []byte, off int64) (int, error) {
	loc := r.store.location(r.info.Key)
	if off < 0 {
		return 0, fmt.Errorf("objstore: read %s: negative offset %d", loc, off)
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := min(int64(len(p)), r.info.Size-off)
	rd, err := r.obj.NewRangeReader(r.ctx, off, want)
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) {
			return 0, fmt.Errorf("objstore: read %s at %d: object changed since it was opened (generation %s is gone)", loc, off, r.info.ETag)
		}
		return 0, fmt.Errorf("objstore: read %s at %d: %w", loc, off, gcsError(err))
	}
	defer rd.Close()
	n, err := io.ReadFull(rd, p[:want])
	if err != nil {
		return n, fmt.Errorf("objstore: read %s at %d: %w", loc, off, err)
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// List pages through the bucket's listing (the SDK's iterator asks for
// the next page as the previous one runs out). GCS lists names in
// lexicographic order of their UTF-8 bytes, as Store requires.
func (s *gcsStore) List(ctx context.Context, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		q := &storage.Query{Prefix: s.prefix + prefix}
		if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
			yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), err))
			return
		}
		it := s.bucket(ctx).Objects(ctx, q)
		it.PageInfo().MaxSize = s.listPageSize
		for {
			attrs, err := it.Next()
			if err == iterator.Done {
				return
			}
			if err != nil {
				yield(Info{}, fmt.Errorf("objstore: list %s: %w", s.location(prefix), gcsError(err)))
				return
			}
			info := gcsInfo(strings.TrimPrefix(attrs.Name, s.prefix), attrs.Size, attrs.Generation, attrs.Updated)
			if !yield(info, nil) {
				return
			}
		}
	}
}

func (s *gcsStore) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("objstore: delete: %w", err)
	}
	// The SDK retries a delete only when it names a generation; this one
	// retries whatever it names. A retry after an attempt that did delete
	// the object meets 404, which is success here.
	err := s.bucket(ctx).Object(s.prefix + key).Retryer(storage.WithPolicy(storage.RetryAlways)).Delete(ctx)
	if err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
		return fmt.Errorf("objstore: delete %s: %w", s.location(key), gcsError(err))
	}
	return nil
}

// AbortStaleUploads has nothing to do on GCS, and returns 0. An upload
// that never finished is a resumable upload session that was never
// finalized: GCS keeps its bytes out of the bucket, where no listing shows
// them and nothing bills them as objects, and expires the session by itself
// a week after it started. The key stays free: nothing exists under it
// until a session is finalized. (There is no call that lists a bucket's
// open sessions, and a crashed writer's session URI is lost with it.)
func (s *gcsStore) AbortStaleUploads(context.Context, string, time.Duration) (int, error) {
	return 0, nil
}

func (s *gcsStore) Close() error { return s.client.Close() }
