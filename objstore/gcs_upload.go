package objstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// defaultContentType is sent to GCS and Azure when the caller gives none,
// so that GCS's SDK does not sniff the object's first bytes for one.
const defaultContentType = "application/octet-stream"

func (s *gcsStore) Create(ctx context.Context, key string, opts ...PutOption) (Upload, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("objstore: create: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("objstore: create %s: %w", s.location(key), err)
	}
	u := &gcsUpload{s: s, key: key, po: newPutOptions(opts)}
	u.ctx, u.cancel = context.WithCancel(ctx)
	return u, nil
}

// gcsUpload is one object on its way to GCS. Write fills one chunk buffer
// from the pool. An object that fits in it goes up at Commit in a single
// request; when more bytes come, a resumable upload starts, and each full
// chunk goes to the SDK's Writer, which copies it into its own chunk
// buffer and sends it while Write fills the next.
type gcsUpload struct {
	s   *gcsStore
	key string
	po  putOptions
	// ctx is the Create context; cancel ends it early, which ends the
	// resumable upload without finalizing it.
	ctx    context.Context
	cancel context.CancelFunc

	state   uploadState
	err     error  // the upload's first failure
	buf     []byte // chunk being filled, from the pool; nil until a byte needs it
	n       int    // bytes of buf filled
	written int64  // bytes accepted by Write

	w        *storage.Writer // the resumable upload, once the object outgrows a chunk
	reserved *reservation    // the SDK's chunk buffer, counted in the pool while w lives
	// gaveUp is the number of failed attempts in a row after which the
	// resumable upload stopped retrying, 0 while it has not.
	gaveUp atomic.Int64
}

func (u *gcsUpload) Written() int64 { return u.written }

func (u *gcsUpload) Write(p []byte) (int, error) {
	if err := u.check(); err != nil {
		return 0, u.errorf("write", err)
	}
	total := 0
	for len(p) > 0 {
		if u.buf != nil && u.n == len(u.buf) {
			if err := u.flush(); err != nil {
				return total, u.errorf("write", u.fail(u.contextError(u.ctx, err)))
			}
		}
		if u.buf == nil {
			buf, err := u.s.pool.Get(u.ctx, u.s.chunkSize)
			if err != nil {
				return total, u.errorf("write", u.fail(fmt.Errorf("getting a chunk buffer: %w", err)))
			}
			if len(buf) != u.s.chunkSize {
				u.s.pool.Put(buf)
				return total, u.errorf("write", u.fail(fmt.Errorf("buffer pool returned %d bytes, want %d", len(buf), u.s.chunkSize)))
			}
			u.buf = buf
		}
		c := copy(u.buf[u.n:], p)
		u.n += c
		u.written += int64(c)
		total += c
		p = p[c:]
	}
	return total, nil
}

// flush hands the filled part of the chunk buffer to the resumable
// upload, starting it first if need be. The SDK's Write returns once it
// has copied the bytes (into its chunk buffer, sending the previous chunk
// first if that one is full), so the buffer is free again afterwards,
// whether it succeeded or not.
func (u *gcsUpload) flush() error {
	if u.w == nil {
		if err := u.start(); err != nil {
			return err
		}
	}
	if _, err := u.w.Write(u.buf[:u.n]); err != nil {
		return fmt.Errorf("resumable upload: %w", u.writerError(err))
	}
	u.n = 0
	return nil
}

// start opens the resumable upload, with the create-if-absent
// precondition, after reserving the SDK's chunk buffer in the pool.
func (u *gcsUpload) start() error {
	r, err := reserve(u.ctx, u.s.pool, u.s.chunkSize)
	if err != nil {
		return fmt.Errorf("reserving the upload's chunk buffer: %w", err)
	}
	u.reserved = r
	// The SDK retries the session's start and each chunk; the count of
	// failures in a row bounds it at MaxRetries (as ChunkRetryDeadline
	// does in time), and starts again once a chunk is in.
	var failures atomic.Int64
	obj := u.object().Retryer(u.s.retryOptions(func(err error, _ *storage.RetryContext) bool {
		if !gcsRetryable(err) {
			return false
		}
		n := failures.Add(1)
		if n > int64(u.s.maxRetries) {
			u.gaveUp.Store(n)
			return false
		}
		if u.s.onRetry != nil {
			u.s.onRetry("WriteObject", int(n), gcsRedact(err))
		}
		return u.s.waitRetryAfter(u.ctx, err)
	})...)
	w := u.writer(u.ctx, obj)
	w.ChunkSize = u.s.chunkSize
	w.ChunkRetryDeadline = gcsChunkRetryDeadline
	w.ProgressFunc = func(int64) { failures.Store(0) }
	u.w = w
	return nil
}

// object returns a handle on the upload's object, without retry settings
// (see gcsStore), that creates the object only if no object has its name
// (ifGenerationMatch=0).
func (u *gcsUpload) object() *storage.ObjectHandle {
	return u.s.plain.Object(u.s.prefix + u.key).If(storage.Conditions{DoesNotExist: true})
}

// writer returns a Writer of obj with the upload's attributes.
func (u *gcsUpload) writer(ctx context.Context, obj *storage.ObjectHandle) *storage.Writer {
	w := obj.NewWriter(ctx)
	w.ContentType = u.po.contentType
	if w.ContentType == "" {
		w.ContentType = defaultContentType
	}
	w.Metadata = u.po.metadata
	return w
}

func (u *gcsUpload) Commit(ctx context.Context) (Info, error) {
	if err := u.state.errFinished(); err != nil {
		return Info{}, u.errorf("commit", err)
	}
	info, err := u.commit(ctx)
	if err != nil {
		err = u.fail(err)
		u.cleanup()
		u.state = uploadAborted
		return Info{}, u.errorf("commit", err)
	}
	u.state = uploadCommitted
	u.release()
	u.cancel()
	return info, nil
}

func (u *gcsUpload) commit(ctx context.Context) (Info, error) {
	if err := u.check(); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	// The end of ctx ends the upload: a failed Commit is cleaned up anyway.
	defer context.AfterFunc(ctx, u.cancel)()
	var attrs *storage.ObjectAttrs
	if u.w == nil {
		var err error
		if attrs, err = u.putObject(); err != nil {
			return Info{}, u.contextError(ctx, err)
		}
	} else {
		if u.n > 0 {
			if err := u.flush(); err != nil {
				return Info{}, u.contextError(ctx, err)
			}
		}
		w := u.w
		u.w = nil
		if err := w.Close(); err != nil {
			return Info{}, u.contextError(ctx, fmt.Errorf("finalizing resumable upload: %w", u.writerError(err)))
		}
		attrs = w.Attrs()
	}
	return gcsInfo(u.key, u.written, attrs.Generation, attrs.Updated), nil
}

// putObject stores the object, at most a chunk, with a single request,
// which streams the chunk buffer without the SDK buffering it again. The
// SDK cannot retry such a request (it has no copy of the body), so this
// does, from the buffer. A retry after an attempt that did create the
// object, but whose answer was lost, meets the precondition: ErrExists,
// which the caller takes as for any existing object (see the package
// documentation).
func (u *gcsUpload) putObject() (*storage.ObjectAttrs, error) {
	data := u.buf[:u.n]
	backoff := fullJitter{base: retryBaseDelay, max: u.s.maxRetryWait}
	for attempt := 1; ; attempt++ {
		attrs, err := u.putOnce(data)
		if err == nil {
			return attrs, nil
		}
		retry := gcsRetryable(err)
		var ge *googleapi.Error
		ra := time.Duration(0)
		if errors.As(err, &ge) {
			ra = retryAfter(ge.Header, time.Now())
		}
		err = u.writerError(err)
		if !retry || u.ctx.Err() != nil {
			return nil, err
		}
		if attempt > u.s.maxRetries {
			return nil, fmt.Errorf("gave up after %d attempts: %w", attempt, err)
		}
		d, _ := backoff.BackoffDelay(attempt, nil)
		if ra > 0 {
			d = retryWait(d, ra, u.s.maxRetryWait)
			if u.s.onRetryAfter != nil {
				u.s.onRetryAfter(d)
			}
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-u.ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (after %w)", u.ctx.Err(), err)
		}
		if u.s.onRetry != nil {
			u.s.onRetry("InsertObject", attempt, err)
		}
	}
}

// putOnce makes one attempt at a single-request upload of data.
func (u *gcsUpload) putOnce(data []byte) (*storage.ObjectAttrs, error) {
	ctx, cancel := context.WithCancel(u.ctx)
	defer cancel()
	// The SDK cannot retry this request: it has no retry settings.
	w := u.writer(ctx, u.object())
	w.ChunkSize = 0 // one request, streamed from data
	_, werr := w.Write(data)
	if werr != nil {
		cancel()
	}
	// Close waits for the request to end: once it returns, nothing reads
	// data any more.
	if err := w.Close(); err != nil {
		return nil, err
	}
	if werr != nil {
		return nil, werr
	}
	return w.Attrs(), nil
}

// writerError maps an error of the SDK's Writer: a 412 is ErrExists, and
// the failure that ran out of retries says so.
func (u *gcsUpload) writerError(err error) error {
	if n := u.gaveUp.Load(); n > 0 {
		return fmt.Errorf("gave up after %d attempts in a row failed: %w", n, gcsError(err))
	}
	return gcsError(err)
}

// contextError makes sure that an upload stopped by the end of the Create
// context or of ctx says so (errors.Is context.Canceled), whatever the SDK
// reported on the way.
func (u *gcsUpload) contextError(ctx context.Context, err error) error {
	for _, c := range []context.Context{ctx, u.ctx} {
		if cerr := c.Err(); cerr != nil && !errors.Is(err, cerr) {
			return fmt.Errorf("%w: %w", cerr, err)
		}
	}
	return err
}

// Abort ends the resumable upload, if one started, without finalizing it:
// its Writer's context is cancelled, and GCS never creates the object (see
// AbortStaleUploads for what becomes of the session).
func (u *gcsUpload) Abort(context.Context) error {
	switch u.state {
	case uploadCommitted, uploadAborted:
		return nil
	}
	u.fail(errors.New("upload aborted"))
	u.cleanup()
	u.state = uploadAborted
	return nil
}

// cleanup cancels the resumable upload, waits for the SDK's goroutine to
// end, and gives the buffers back. It needs no context of its own: nothing
// is sent to GCS.
func (u *gcsUpload) cleanup() {
	u.cancel()
	if u.w != nil {
		// Close after the cancellation returns the context's error, once
		// the request in flight, if any, has ended: the session is never
		// finalized.
		_ = u.w.Close()
		u.w = nil
	}
	u.release()
}

// release gives the chunk buffer and the SDK's reservation back.
func (u *gcsUpload) release() {
	if u.buf != nil {
		u.s.pool.Put(u.buf)
		u.buf, u.n = nil, 0
	}
	u.reserved.release()
	u.reserved = nil
}

// check reports why the upload cannot go on, if it cannot.
func (u *gcsUpload) check() error {
	if err := u.state.errFinished(); err != nil {
		return err
	}
	if u.err != nil {
		return u.err
	}
	return u.ctx.Err()
}

// fail marks the upload failed by err, unless it failed before, and
// returns the first failure.
func (u *gcsUpload) fail(err error) error {
	u.state = uploadFailed
	if u.err == nil {
		u.err = err
	}
	return u.err
}

func (u *gcsUpload) errorf(op string, err error) error {
	return fmt.Errorf("objstore: %s %s: %w", op, u.s.location(u.key), err)
}
