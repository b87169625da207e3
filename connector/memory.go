package connector

import (
	"context"

	"github.com/pqsink/pqsink/connector/budget"
)

// The memory budget (package connector/budget) and its pressure relief
// are the budget package's; this is the sink's side of them: the relief
// run over the partitions being consumed, and each partition's account of
// what it holds and its answer to the relief's requests.

// memoryRelief is the pressure relief over the partitions being consumed.
func (s *Sink) memoryRelief() budget.Relief {
	return budget.Relief{
		Budget: s.mem,
		Holders: func(add func(budget.Holder)) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for p := range s.consuming {
				add(p)
			}
		},
		DrainIdle: s.writers.drain,
	}
}

// Request asks the partition to act, unless it has a request pending
// (budget.Holder).
func (p *partition) Request(r budget.Request) {
	select {
	case p.relief.ctrl <- r:
	default:
	}
	if p.relief.wake != nil {
		p.relief.wake()
	}
}

// MemStat returns what the partition last published (budget.Holder).
func (p *partition) MemStat() budget.Stat {
	p.relief.mu.Lock()
	defer p.relief.mu.Unlock()
	return p.relief.mem
}

// account recounts what the partition's row groups hold, brings the
// budget up to date and publishes the figures for the pressure relief.
func (p *partition) account() {
	var st budget.Stat
	for _, f := range p.files {
		st.Held += f.buf.held()
		// What a flush gives back: the row group, not the file's fixed
		// cost or its writer.
		st.Largest = max(st.Largest, int64(f.buf.Group.Capacity()))
		if st.Oldest.IsZero() || f.opened.Before(st.Oldest) {
			st.Oldest = f.opened
		}
	}
	for _, b := range p.spare {
		st.Spare += b.held()
	}
	st.Held += st.Spare
	st.Held += partitionOverhead
	st.Held += p.indexMemoryHeld()
	p.s.mem.Add(st.Held - p.relief.mem.Held)
	p.relief.mu.Lock()
	p.relief.mem = st
	p.relief.mu.Unlock()
}

// relieveMemory acts on a request of the pressure relief.
func (p *partition) relieveMemory(ctx context.Context, r budget.Request) error {
	defer p.account()
	switch r {
	case budget.Flush:
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
	case budget.Rotate:
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
	share := int64(0.4*float64(s.mem.Limit())) / max(1, s.stats.openFiles.Load())
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
	return MemoryStats{Used: s.mem.Used(), Limit: s.cfg.Memory.Limit, Counted: s.mem.Limit(), FetchPauses: s.mem.Pauses()}
}

// release gives back everything the partition counts in the budget, when
// it stops being consumed.
func (p *partition) release() {
	for _, f := range p.files {
		p.discard(context.Background(), f)
	}
	p.spare = nil
	p.s.mem.Add(-p.relief.mem.Held)
	p.relief.mu.Lock()
	p.relief.mem = budget.Stat{}
	p.relief.mu.Unlock()
}
