package budget

import (
	"context"
	"sort"
	"time"
)

// Stat is what a holder holds, as the pressure relief sees it.
type Stat struct {
	Spare   int64     // bytes of buffers kept for its next files
	Held    int64     // bytes it counts in the budget: row groups by capacity, fixed costs, writers, spares
	Largest int64     // bytes of its largest row group
	Oldest  time.Time // when its oldest open file was opened; zero if none
}

// Request is what the pressure relief asks of a holder.
type Request int

// Requests of the pressure relief to a holder.
const (
	Flush  Request = iota + 1 // write out the largest row group (or drop the spare buffers)
	Rotate                    // finish the oldest file
)

// Holder is one holder of memory that the relief can ask to give some
// back: a Kafka partition's pipeline, in the sink.
type Holder interface {
	// MemStat returns what the holder last published of what it holds.
	MemStat() Stat
	// Request asks the holder to act, unless it has a request pending;
	// it does not wait.
	Request(Request)
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

// Relief is the memory pressure relief of a budget.
type Relief struct {
	// Budget is the budget it watches.
	Budget *Budget
	// Holders calls add with each holder that the relief may ask now
	// (the sink's partitions being consumed, under the sink's lock).
	Holders func(add func(Holder))
	// DrainIdle gives back what idle writers of finished files hold and
	// returns how many it drained: the cheapest memory to give.
	DrainIdle func() int64
}

// Run watches the budget and asks holders to give memory back, until ctx
// ends: first the idle writers and the spare buffers, then the largest row
// group is flushed, then the oldest files rotated (reason memory).
// Fetches pause by themselves while the budget is spent.
func (r Relief) Run(ctx context.Context) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	type owner struct {
		h      Holder
		oldest time.Time
		held   int64
	}
	// Kept from tick to tick: with ten thousand partitions, building them
	// anew every 20 ms under pressure was a tenth of the sink's allocations.
	var owners []owner
	var spares []Holder
	var largest Holder
	var largestSize int64
	add := func(h Holder) {
		st := h.MemStat()
		if st.Spare > 0 {
			spares = append(spares, h)
		}
		if st.Largest > largestSize {
			largest, largestSize = h, st.Largest
		}
		if !st.Oldest.IsZero() {
			owners = append(owners, owner{h, st.Oldest, st.Held})
		}
	}
	b := r.Budget
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// What fetches wait for counts as held: the relief must make room
		// for them, or they wait forever.
		used, limit := b.used.Load()+b.waiting.Load(), b.limit
		if float64(used) < flushAt*float64(limit) {
			continue
		}
		largest, largestSize = nil, 0
		clear(owners)
		clear(spares)
		owners, spares = owners[:0], spares[:0]
		r.Holders(add)
		switch {
		case r.DrainIdle() > 0:
			// Idle writers of finished files are the cheapest to give.
		case len(spares) > 0:
			// Buffers kept for files not yet opened are the cheapest to give.
			for _, h := range spares {
				h.Request(Flush)
			}
		case largest != nil && largestSize >= minFlush:
			largest.Request(Flush)
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
				o.h.Request(Rotate)
				deficit -= o.held
			}
		}
	}
}
