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
