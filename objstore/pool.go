package objstore

import (
	"context"
	"sync"
)

// BufferPool lends the part buffers of S3 uploads. One pool serves every
// upload of a store (Buffers), so that it can hold them all to one memory
// budget. Implementations must be safe for concurrent use.
type BufferPool interface {
	// Get returns a buffer of len size; its contents are arbitrary. It may
	// block, for instance until a memory budget has room, and must then
	// give up with ctx's error when ctx is done.
	Get(ctx context.Context, size int) ([]byte, error)
	// Put gives back a buffer that Get returned. Nothing refers to it any
	// more.
	Put(b []byte)
}

// BufferDropper is implemented by a BufferPool that wants to hear of the
// buffers that will never come back to Put. A buffer is dropped when the
// request that carried it failed: net/http may then still be reading it
// from another goroutine, so it must be neither reused nor recycled. A
// pool that counts buffers against a budget releases the budget in Drop,
// and lets the garbage collector have the memory.
type BufferDropper interface {
	Drop(b []byte)
}

// freeList is the default BufferPool: recycled buffers, which the garbage
// collector may reclaim while they are idle (sync.Pool), and no limit.
type freeList struct {
	pool sync.Pool // of *[]byte
}

func (f *freeList) Get(ctx context.Context, size int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p, _ := f.pool.Get().(*[]byte); p != nil && cap(*p) >= size {
		return (*p)[:size], nil
	}
	return make([]byte, size), nil
}

func (f *freeList) Put(b []byte) {
	f.pool.Put(&b)
}

// dropBuffer forgets b, a buffer that a failed request may still be
// reading (see BufferDropper).
func dropBuffer(pool BufferPool, b []byte) {
	if d, ok := pool.(BufferDropper); ok && b != nil {
		d.Drop(b)
	}
}

// BufferReserver is implemented by a BufferPool that can count, in its
// budget, memory that a store's SDK allocates for itself and that no
// option lets the pool supply: the chunk buffer of a GCS resumable upload.
// Without it, such a store takes a buffer of the size from Get and holds
// it unused for as long as the SDK's lives, which counts the memory right
// but holds it twice.
type BufferReserver interface {
	// Reserve counts n bytes as lent. Like Get, it may block, and must
	// then give up with ctx's error when ctx is done.
	Reserve(ctx context.Context, n int) error
	// Release counts out n bytes that Reserve counted.
	Release(n int)
}

// The default pool counts nothing: its reservations are free.
func (f *freeList) Reserve(ctx context.Context, _ int) error { return ctx.Err() }

func (f *freeList) Release(int) {}

// reservation is memory counted in a pool for a buffer that the pool does
// not lend (BufferReserver), or, with a pool that cannot count it, a buffer
// from Get held unused in its place.
type reservation struct {
	pool BufferPool
	n    int
	held []byte // the stand-in buffer, with a pool that is no BufferReserver
}

// reserve counts n bytes in pool, waiting within ctx as Get does.
func reserve(ctx context.Context, pool BufferPool, n int) (*reservation, error) {
	if r, ok := pool.(BufferReserver); ok {
		if err := r.Reserve(ctx, n); err != nil {
			return nil, err
		}
		return &reservation{pool: pool, n: n}, nil
	}
	b, err := pool.Get(ctx, n)
	if err != nil {
		return nil, err
	}
	return &reservation{pool: pool, n: n, held: b}, nil
}

// release gives the reservation back; it is a no-op on nil or after the
// first call.
func (r *reservation) release() {
	if r == nil || r.n == 0 {
		return
	}
	if r.held != nil {
		r.pool.Put(r.held)
		r.held = nil
	} else {
		r.pool.(BufferReserver).Release(r.n)
	}
	r.n = 0
}
