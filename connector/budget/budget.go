// Package budget is the sink's one memory budget (memory.limit): what
// the holders of memory count in it (fetched records, the open files' row
// groups, the part buffers of uploads through a Pool), what fetches and
// compactions reserve, waiting while it is spent, and the pressure relief
// (Relief) that asks the holders to give memory back when it fills. It
// knows nothing of what the holders are.
package budget

import (
	"context"
	"sync"
	"sync/atomic"
)

// Budget is the sink's one memory budget (memory.limit), over everything
// it holds: fetched records not yet written, the open files' row groups
// (by capacity) and the part buffers of uploads. Holders add and release
// what they hold; fetches reserve before they ask, and wait while the
// budget is spent. The budget is safe for concurrent use.
type Budget struct {
	limit   int64
	used    atomic.Int64
	waiting atomic.Int64 // bytes that fetches wait for: pressure as much as used
	pauses  atomic.Int64 // fetches that had to wait

	mu   sync.Mutex
	wake chan struct{} // closed and replaced when memory is released
}

// countedShare is the part of memory.limit that the budget hands out. The
// rest is for what no holder can count: garbage the collector has not
// reclaimed yet, heap fragmentation, goroutine stacks, and the small
// per-partition structures of kafka-go. With ten thousand partitions that
// is about half of the process's memory (measured with `pqsink bench
// --partitions 10000`: live heap against peak RSS).
const countedShare = 0.5

// New makes the budget of a process that must stay within limit.
func New(limit int64) *Budget {
	return &Budget{limit: int64(countedShare * float64(limit)), wake: make(chan struct{})}
}

// Add counts n more bytes held (n < 0: released).
func (b *Budget) Add(n int64) {
	b.used.Add(n)
	if n < 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

// Reserve takes n bytes, waiting while they do not fit. When nothing at
// all is held, n is granted even if it exceeds the limit, so that one
// large record can always get through.
func (b *Budget) Reserve(ctx context.Context, n int64) error {
	waited := false
	for {
		b.mu.Lock()
		wake := b.wake
		b.mu.Unlock()
		used := b.used.Load()
		if used+n <= b.limit || used <= 0 {
			if b.used.CompareAndSwap(used, used+n) {
				return nil
			}
			continue
		}
		if !waited {
			waited = true
			b.pauses.Add(1)
			b.waiting.Add(n)
			defer b.waiting.Add(-n)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release gives back n bytes that Reserve took.
func (b *Budget) Release(n int64) { b.Add(-n) }

// Limit is the part of memory.limit that the budget hands out, in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// Used is the bytes held now.
func (b *Budget) Used() int64 { return b.used.Load() }

// Pauses is the number of Reserve calls that had to wait.
func (b *Budget) Pauses() int64 { return b.pauses.Load() }
