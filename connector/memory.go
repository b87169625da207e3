package connector

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/objstore"
)

// budget is the sink's one memory budget (memory.limit), over everything
// it holds: fetched records not yet written, the open files' row groups
// (by capacity) and the part buffers of uploads. Holders add and release
// what they hold; fetches reserve before they ask, and wait while the
// budget is spent. The budget is safe for concurrent use.
type budget struct {
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

// newBudget makes the budget of a process that must stay within limit.
func newBudget(limit int64) *budget {
	return &budget{limit: int64(countedShare * float64(limit)), wake: make(chan struct{})}
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

// fetchBudget is the budget as the fetch multiplexer sees it.
type fetchBudget struct{ b *budget }

func (f fetchBudget) Limit() int64                               { return f.b.limit }
func (f fetchBudget) Reserve(ctx context.Context, n int64) error { return f.b.reserve(ctx, n) }
func (f fetchBudget) Add(n int64)                                { f.b.add(n) }

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

// Reserve counts memory that a store's SDK allocates itself (the chunk
// buffer of a GCS resumable upload, objstore.BufferReserver). Like Get, it
// never waits.
func (p *budgetPool) Reserve(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.b.add(int64(n))
	return nil
}

// Release counts out what Reserve counted.
func (p *budgetPool) Release(n int) { p.b.add(-int64(n)) }

var _ objstore.BufferReserver = (*budgetPool)(nil)

// memStat is what a partition holds, as the pressure relief sees it.
type memStat struct {
	spare   int64     // bytes of buffers kept for its next files
	held    int64     // bytes it counts in the budget: row groups by capacity, fixed costs, writers, spares
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
	type owner struct {
		p      *partition
		oldest time.Time
		held   int64
	}
	// Kept from tick to tick: with ten thousand partitions, building them
	// anew every 20 ms under pressure was a tenth of the sink's allocations.
	var owners []owner
	var spares []*partition
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// What fetches wait for counts as held: the relief must make room
		// for them, or they wait forever.
		used, limit := s.mem.used.Load()+s.mem.waiting.Load(), s.mem.limit
		if float64(used) < flushAt*float64(limit) {
			continue
		}
		var largest *partition
		var largestSize int64
		clear(owners)
		clear(spares)
		owners, spares = owners[:0], spares[:0]
		s.mu.Lock()
		for p := range s.consuming {
			st := p.memStat()
			if st.spare > 0 {
				spares = append(spares, p)
			}
			if st.largest > largestSize {
				largest, largestSize = p, st.largest
			}
			if !st.oldest.IsZero() {
				owners = append(owners, owner{p, st.oldest, st.held})
			}
		}
		s.mu.Unlock()
		switch {
		case s.writers.drain() > 0:
			// Idle writers of finished files are the cheapest to give.
		case len(spares) > 0:
			// Buffers kept for files not yet opened are the cheapest to give.
			for _, p := range spares {
				p.request(ctrlFlush)
			}
		case largest != nil && largestSize >= minFlush:
			largest.request(ctrlFlush)
		case float64(used) >= rotateAt*float64(limit):
			// Many small files (thousands of partitions) fill the budget
			// with what each file costs, not with rows: finish as many of
			// the oldest as it takes to get back under flushAt, in one go.
			sort.Slice(owners, func(i, j int) bool { return owners[i].oldest.Before(owners[j].oldest) })
			deficit := used - int64(flushAt*float64(limit))
			for _, o := range owners {
				if deficit <= 0 {
					break
				}
				o.p.request(ctrlRotate)
				deficit -= o.held
			}
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
	case p.relief.ctrl <- r:
	default:
	}
	if p.relief.wake != nil {
		p.relief.wake()
	}
}

// memStat returns what the partition last published.
func (p *partition) memStat() memStat {
	p.relief.mu.Lock()
	defer p.relief.mu.Unlock()
	return p.relief.mem
}

// account recounts what the partition's row groups hold, brings the
// budget up to date and publishes the figures for the pressure relief.
func (p *partition) account() {
	var st memStat
	for _, f := range p.files {
		st.held += f.buf.held()
		// What a flush gives back: the row group, not the file's fixed
		// cost or its writer.
		st.largest = max(st.largest, int64(f.buf.Group.Capacity()))
		if st.oldest.IsZero() || f.opened.Before(st.oldest) {
			st.oldest = f.opened
		}
	}
	for _, b := range p.spare {
		st.spare += b.held()
	}
	st.held += st.spare
	st.held += partitionOverhead
	st.held += p.indexMemoryHeld()
	p.s.mem.add(st.held - p.relief.mem.held)
	p.relief.mu.Lock()
	p.relief.mem = st
	p.relief.mu.Unlock()
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
			if n := f.buf.Group.Capacity(); n > size {
				largest, size = f, n
			}
		}
		if largest == nil {
			return nil
		}
		if err := largest.flush(p.s.writers); err != nil {
			return p.uploadFailed(ctx, largest, err)
		}
		largest.buf.Group.Release()
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

// The fixed cost of an open file's buffers beyond its column values: the
// column buffers' and the row builder's own structures, about 13 KB for a
// schema of 17 columns (measured with the heap profile of `pqsink bench
// --partitions 10000`), and that of a Parquet writer while the file has
// row groups out, which writer.Held reports. Counted in the budget, they
// are what makes ten thousand open files rotate before they outgrow it.
const (
	partitionOverhead   = 3 << 10 // its state, fetch buffer, logger, ticker, field lookup
	fileOverhead        = 2 << 10
	fileOverheadPerLeaf = 700
)

// held is what the buffers hold, by capacity, with their fixed cost.
func (fb *fileBuffers) held() int64 {
	leaves := int64(len(fb.Group.Columns()))
	n := int64(fb.Group.Capacity()) + fileOverhead + leaves*fileOverheadPerLeaf
	if fb.w != nil {
		n += fb.w.Held() // its dictionaries can be megabytes per column
	}
	return n
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
	Used, Limit int64 // bytes held and memory.limit
	Counted     int64 // the part of Limit that holders may take (the rest is the runtime's)
	FetchPauses int64 // fetches that waited for the budget
}

// Memory returns the state of the memory budget.
func (s *Sink) Memory() MemoryStats {
	return MemoryStats{Used: s.mem.used.Load(), Limit: s.cfg.Memory.Limit, Counted: s.mem.limit, FetchPauses: s.mem.pauses.Load()}
}

// release gives back everything the partition counts in the budget, when
// it stops being consumed.
func (p *partition) release() {
	for _, f := range p.files {
		p.discard(context.Background(), f)
	}
	p.spare = nil
	p.s.mem.add(-p.relief.mem.held)
	p.relief.mu.Lock()
	p.relief.mem = memStat{}
	p.relief.mu.Unlock()
}
