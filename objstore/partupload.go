package objstore

import (
	"context"
	"fmt"
	"sync"
)

// partUpload is what an upload keeps that ships fixed-size buffers from
// the pool, a few in flight at once: S3's multipart parts and Azure's
// staged blocks. Write fills one buffer at a time; a full buffer stays
// until more bytes arrive, so that an object of exactly one buffer still
// goes up in a single request, and is then handed to the upload's ship.
type partUpload struct {
	pool BufferPool
	size int    // bytes of each buffer
	unit string // what a buffer is called in errors: "part", "block"
	// ctx is the Create context; cancel ends it early, to stop the
	// buffers in flight when the upload fails or is aborted.
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by the goroutine that calls Write, Commit and Abort.
	state   uploadState
	buf     []byte // buffer being filled, from the pool; nil until a byte needs it
	n       int    // bytes of buf filled
	written int64  // bytes accepted by Write

	slots    chan struct{}  // a token per buffer in flight
	inflight sync.WaitGroup // the goroutines that send them

	mu  sync.Mutex // guards err, and what the upload adds under it
	err error      // the upload's first failure
}

// init readies u within the Create context ctx, with at most concurrency
// buffers of size bytes in flight.
func (u *partUpload) init(ctx context.Context, pool BufferPool, size, concurrency int, unit string) {
	u.pool, u.size, u.unit = pool, size, unit
	u.slots = make(chan struct{}, concurrency)
	u.ctx, u.cancel = context.WithCancel(ctx)
}

func (u *partUpload) Written() int64 { return u.written }

// fill copies p into the buffers, handing each full one to ship when
// more bytes arrive. Its error is the upload's failure, unwrapped.
func (u *partUpload) fill(p []byte, ship func(context.Context) error) (int, error) {
	if err := u.check(); err != nil {
		return 0, err
	}
	total := 0
	for len(p) > 0 {
		if u.buf != nil && u.n == len(u.buf) {
			if err := ship(u.ctx); err != nil {
				return total, u.fail(err)
			}
		}
		if u.buf == nil {
			if err := u.getBuffer(); err != nil {
				return total, u.fail(err)
			}
		}
		c := copy(u.buf[u.n:], p)
		u.n += c
		u.written += int64(c)
		total += c
		p = p[c:]
	}
	return total, nil
}

// getBuffer takes the next buffer from the pool, waiting for it within
// the Create context.
func (u *partUpload) getBuffer() error {
	buf, err := u.pool.Get(u.ctx, u.size)
	if err != nil {
		return fmt.Errorf("getting a %s buffer: %w", u.unit, err)
	}
	if len(buf) != u.size {
		u.pool.Put(buf)
		return fmt.Errorf("buffer pool returned %d bytes, want %d", len(buf), u.size)
	}
	// A buffer in flight may have failed while Get waited.
	if err := u.failure(); err != nil {
		u.pool.Put(buf)
		return err
	}
	u.buf = buf
	return nil
}

// wait waits, within ctx, until no buffer is in flight.
func (u *partUpload) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		u.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// check reports why the upload cannot go on, if it cannot.
func (u *partUpload) check() error {
	if err := u.state.errFinished(); err != nil {
		return err
	}
	if err := u.failure(); err != nil {
		return err
	}
	return u.ctx.Err()
}

// fail marks the upload failed by err, or by an earlier failure that err
// is only a consequence of (a buffer's failure cancels the context that a
// later wait then reports), and returns the failure.
func (u *partUpload) fail(err error) error {
	u.state = uploadFailed
	u.setErr(err)
	return u.failure()
}

func (u *partUpload) setErr(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
}

func (u *partUpload) failure() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}
