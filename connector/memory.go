package connector

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// budget is the sink's one memory budget (memory.limit), over everything
// it holds: fetched records not yet written, the open files' row groups
// (by capacity) and the part buffers of uploads. Holders add and release
// what they hold; fetches reserve before they ask, and wait while the
// budget is spent. The budget is safe for concurrent use.
type budget struct {
	limit  int64
	used   atomic.Int64
	pauses atomic.Int64 // fetches that had to wait

	mu   sync.Mutex
	wake chan struct{} // closed and replaced when memory is released
}

func newBudget(limit int64) *budget {
	return &budget{limit: limit, wake: make(chan struct{})}
}

// add counts n more bytes held (n < 0: released).
func (b *budget) add(n int64) {
	b.used.Add(n)
	if n < 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

// reserve takes n bytes, waiting while they do not fit. When nothing at
// all is held, n is granted even if it exceeds the limit, so that one
// large record can always get through.
func (b *budget) reserve(ctx context.Context, n int64) error {
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
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// budgetPool lends the part buffers of uploads (objstore.BufferPool),
// counting them in the budget. It never waits: the writer that asks holds
// row groups that only it can flush, so waiting here could wait forever;
// fetches wait instead, and the pressure relief flushes and rotates.
type budgetPool struct {
	b    *budget
	free sync.Pool // of *[]byte
}

func (p *budgetPool) Get(ctx context.Context, size int) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.b.add(int64(size))
	if bp, _ := p.free.Get().(*[]byte); bp != nil && cap(*bp) >= size {
		return (*bp)[:size], nil
	}
	return make([]byte, size), nil
}

func (p *budgetPool) Put(buf []byte) {
	p.b.add(-int64(len(buf)))
	p.free.Put(&buf)
}

// Drop releases a buffer that a failed request may still read: counted
// out, never reused.
func (p *budgetPool) Drop(buf []byte) { p.b.add(-int64(len(buf))) }

// memStat is what a partition holds, as the pressure relief sees it.
type memStat struct {
	held    int64     // bytes of its row groups, by capacity
	largest int64     // bytes of its largest row group
	oldest  time.Time // when its oldest open file was opened; zero if none
}

// Pressure thresholds, as fractions of the limit: above flushAt the
// largest row group is written out; above rotateAt, if no row group is
// worth flushing, the oldest file is finished.
const (
	flushAt  = 0.80
	rotateAt = 0.92
)

// minFlush is the smallest row group worth writing out early: below it,
// the rows are better kept for a row group of useful size.
const minFlush = 256 << 10

// relieve watches the budget and asks partitions to give memory back:
// first the largest row group is flushed, then the oldest file rotated
// (reason memory). Fetches pause by themselves while the budget is spent.
func (s *Sink) relieve(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		used, limit := s.mem.used.Load(), s.mem.limit
		if float64(used) < flushAt*float64(limit) {
			continue
		}
		var largest, oldest *partition
		var largestSize int64
		var oldestTime time.Time
		s.mu.Lock()
		for p := range s.parts {
			st := p.memStat()
			if st.largest > largestSize {
				largest, largestSize = p, st.largest
			}
			if !st.oldest.IsZero() && (oldest == nil || st.oldest.Before(oldestTime)) {
				oldest, oldestTime = p, st.oldest
			}
		}
		s.mu.Unlock()
		switch {
		case largest != nil && largestSize >= minFlush:
			largest.request(ctrlFlush)
		case oldest != nil && float64(used) >= rotateAt*float64(limit):
			oldest.request(ctrlRotate)
		}
	}
}

// Requests of the pressure relief to a partition.
const (
	ctrlFlush  = iota + 1 // write out the largest row group
	ctrlRotate            // finish the oldest file
)

// request asks the partition to act, unless it has a request pending.
func (p *partition) request(r int) {
	select {
	case p.ctrl <- r:
	default:
	}
}

// memStat returns what the partition last published.
func (p *partition) memStat() memStat {
	p.memMu.Lock()
	defer p.memMu.Unlock()
	return p.mem
}

// account recounts what the partition's row groups hold, brings the
// budget up to date and publishes the figures for the pressure relief.
func (p *partition) account() {
	var st memStat
	for _, f := range p.files {
		n := int64(f.buf.g.Capacity())
		st.held += n
		st.largest = max(st.largest, n)
		if st.oldest.IsZero() || f.opened.Before(st.oldest) {
			st.oldest = f.opened
		}
	}
	for _, b := range p.spare {
		st.held += int64(b.g.Capacity())
	}
	p.s.mem.add(st.held - p.mem.held)
	p.memMu.Lock()
	p.mem = st
	p.memMu.Unlock()
}

// relieveMemory acts on a request of the pressure relief.
func (p *partition) relieveMemory(ctx context.Context, r int) error {
	defer p.account()
	switch r {
	case ctrlFlush:
		if len(p.spare) > 0 {
			// Buffers kept for the next files are the cheapest to give.
			p.spare = nil
			return nil
		}
		var largest *openFile
		var size int
		for _, f := range p.files {
			if n := f.buf.g.Capacity(); n > size {
				largest, size = f, n
			}
		}
		if largest == nil {
			return nil
		}
		if err := largest.flush(); err != nil {
			return p.uploadFailed(ctx, largest, err)
		}
		largest.buf.g.Release()
		p.s.stats.memoryFlushes.Add(1)
	case ctrlRotate:
		var oldest *openFile
		for _, f := range p.files {
			if oldest == nil || f.opened.Before(oldest.opened) {
				oldest = f
			}
		}
		if oldest != nil {
			return p.finish(ctx, oldest, reasonMemory)
		}
	}
	return nil
}

// rowGroupTarget is the size at which an open file writes its row group:
// parquet.row_group_bytes (or rotate.bytes, if smaller), less when the
// open files would not fit in the budget together, so that row groups are
// written at a size the budget can hold rather than forced out by the
// pressure relief. The share is of 40% of the budget: buffers grow by
// doubling, so a row group's capacity can be twice its size.
func (s *Sink) rowGroupTarget() int64 {
	share := int64(0.4*float64(s.mem.limit)) / max(1, s.stats.openFiles.Load())
	return min(s.rowGroupBytes, max(64<<10, share))
}

// MemoryStats is the state of the memory budget.
type MemoryStats struct {
	Used, Limit int64 // bytes held and the budget
	FetchPauses int64 // fetches that waited for the budget
}

// Memory returns the state of the memory budget.
func (s *Sink) Memory() MemoryStats {
	return MemoryStats{Used: s.mem.used.Load(), Limit: s.mem.limit, FetchPauses: s.mem.pauses.Load()}
}

// release gives back everything the partition counts in the budget, when
// it stops being consumed.
func (p *partition) release() {
	for _, f := range p.files {
		p.discard(context.Background(), f)
	}
	p.spare = nil
	p.account()
}
