package budget

import (
	"context"
	"sync"

	"github.com/pqsink/pqsink/objstore"
)

// NewPool returns the pool of upload part buffers counted in b.
func NewPool(b *Budget) *Pool { return &Pool{b: b} }

// Pool lends the part buffers of uploads (objstore.BufferPool),
// counting them in the budget. It never waits: the writer that asks holds
// row groups that only it can flush, so waiting here could wait forever;
// fetches wait instead, and the pressure relief flushes and rotates.
type Pool struct {
	b    *Budget
	free sync.Pool // of *[]byte
}

// Get lends a buffer of size bytes, counted in the budget.
func (p *Pool) Get(ctx context.Context, size int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.b.Add(int64(size))
	if bp, _ := p.free.Get().(*[]byte); bp != nil && cap(*bp) >= size {
		return (*bp)[:size], nil
	}
	return make([]byte, size), nil
}

// Put takes back a buffer that Get lent, for reuse.
func (p *Pool) Put(buf []byte) {
	p.b.Add(-int64(len(buf)))
	p.free.Put(&buf)
}

// Drop releases a buffer that a failed request may still read: counted
// out, never reused.
func (p *Pool) Drop(buf []byte) { p.b.Add(-int64(len(buf))) }

// Reserve counts memory that a store's SDK allocates itself (the chunk
// buffer of a GCS resumable upload, objstore.BufferReserver). Like Get, it
// never waits.
func (p *Pool) Reserve(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.b.Add(int64(n))
	return nil
}

// Release counts out what Reserve counted.
func (p *Pool) Release(n int) { p.b.Add(-int64(n)) }

var _ objstore.BufferReserver = (*Pool)(nil)
