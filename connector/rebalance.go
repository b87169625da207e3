package connector

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/pqsink/pqsink/connector/group"
)

// holdings are the partitions a sink holds over one membership of the
// group: they outlive generations. At each generation, the partitions
// that stay keep their open files (after a check that nobody committed
// them in between), the ones that leave are handed over (finished and
// committed, cooperative) or dropped (range), and the new ones start from
// their committed state.
type holdings struct {
	s       *Sink
	ctx     context.Context // the sink's: its end is a shutdown
	mctx    context.Context // the membership's: commits run in it
	m       *group.Membership
	commits *group.CommitBatcher

	handovers sync.WaitGroup // afterHandover runs not done

	mu       sync.Mutex
	runs     map[topicPartition]*partRun
	starting int           // partitions being assigned, not in runs yet
	changed  chan struct{} // closed when runs or starting change
	// draining are the partitions held when the shutdown began, claimed
	// in joins until their last files are in their tables (see drain).
	draining map[topicPartition]bool
}

// topicPartition names one partition.
type topicPartition struct {
	topic string
	id    int32
}

func (k topicPartition) String() string { return fmt.Sprintf("%s[%d]", k.topic, k.id) }

func newHoldings(s *Sink, ctx, mctx context.Context, commits *group.CommitBatcher) *holdings {
	return &holdings{s: s, ctx: ctx, mctx: mctx, commits: commits, runs: map[topicPartition]*partRun{}, changed: make(chan struct{})}
}

// notify wakes the waiters for a change; h.mu is held.
func (h *holdings) notify() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Owned lists the partitions held, for the join metadata
// (group.Handler).
func (h *holdings) Owned() map[string][]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string][]int{}
	for k := range h.runs {
		out[k.topic] = append(out[k.topic], int(k.id))
	}
	for k := range h.draining {
		if h.runs[k] == nil {
			out[k.topic] = append(out[k.topic], int(k.id))
		}
	}
	for t := range out {
		sort.Ints(out[t])
	}
	return out
}

// drain starts the shutdown's claim: until drained, a join claims every
// partition held now, also once its run has ended. A stopping member
// finishes its partitions' files and then commits them to their tables;
// a join in between (another member came or went) that no longer claimed
// them would let the leader give them to their next owner, which would
// read the table's state before that commit and the records again. Claimed,
// they stay with this member (which starts nothing new while it stops)
// until it leaves, after the commit.
func (h *holdings) drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining = map[topicPartition]bool{}
	for k := range h.runs {
		h.draining[k] = true
	}
}

// drained ends the claim drain started: the partitions are committed.
func (h *holdings) drained() {
	h.mu.Lock()
	h.draining = nil
	h.mu.Unlock()
}

// empty waits until no partition is held or being assigned, or ctx ends.
func (h *holdings) empty(ctx context.Context) bool {
	for {
		h.mu.Lock()
		n, ch := len(h.runs)+h.starting, h.changed
		h.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// Lost drops every partition: the member is out of the group, and
// someone else may hold them already (group.Handler).
func (h *holdings) Lost() {
	h.commits.SetGeneration(nil)
	h.mu.Lock()
	n := len(h.runs)
	for _, r := range h.runs {
		r.drop()
	}
	h.mu.Unlock()
	h.s.stats.rebalancePartitions("dropped", n)
	h.empty(context.Background())
}

// Assigned applies a generation's assignment (group.Handler).
func (h *holdings) Assigned(ctx context.Context, gen *group.Generation) {
	s := h.s
	s.stats.rebalances.Add(1)
	h.commits.SetGeneration(gen)
	var parts []string
	for topic, ids := range gen.Assigned {
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s[%d]", topic, id))
		}
	}
	sort.Strings(parts)
	s.joined.Store(true)
	shown := parts
	if len(shown) > 20 {
		shown = append(shown[:20:20], fmt.Sprintf("… %d more", len(parts)-20))
	}
	stopping := h.ctx.Err() != nil

	h.mu.Lock()
	var kept, fresh []topicPartition
	var leaving []*partRun
	for k, r := range h.runs {
		if gen.Has(k.topic, int(k.id)) && !r.leaving {
			kept = append(kept, k)
		} else if !r.leaving {
			leaving = append(leaving, r)
		}
	}
	for topic, ids := range gen.Assigned {
		for _, id := range ids {
			if k := (topicPartition{topic, int32(id)}); h.runs[k] == nil {
				fresh = append(fresh, k)
			}
		}
	}
	if stopping {
		fresh = nil
	}
	h.starting += len(fresh)
	for _, r := range leaving {
		r.leaving = true
		if gen.Cooperative() {
			r.handOver()
		} else {
			r.drop()
		}
	}
	h.mu.Unlock()

	moved, dropped := 0, 0
	if gen.Cooperative() {
		moved = len(leaving)
	} else {
		dropped = len(leaving)
	}
	s.stats.rebalancePartitions("kept", len(kept))
	s.stats.rebalancePartitions("moved", moved)
	s.stats.rebalancePartitions("dropped", dropped)
	s.stats.rebalancePartitions("assigned", len(fresh))
	s.log.Info("generation started", "generation", gen.ID, "member", gen.MemberID, "protocol", gen.Protocol,
		"partitions", len(parts), "assigned", shown, "kept", len(kept), "new", len(fresh), "handed_over", moved, "dropped", dropped)
	if len(leaving) > 0 && gen.Cooperative() {
		h.handovers.Go(h.afterHandover)
	}
	// Uploads a crashed or fenced-off owner left behind are aborted on
	// every assignment (once old enough), not only at startup.
	go s.abortStale(ctx)

	// One request for the committed offsets of every partition, one for
	// the start offsets of those never committed: thousands of
	// partitions must not mean thousands of requests.
	want := map[string][]int{}
	for _, k := range append(kept, fresh...) {
		want[k.topic] = append(want[k.topic], int(k.id))
	}
	var committed map[string]map[int]committed
	if len(want) > 0 {
		for {
			var err error
			if committed, err = s.startPositions(ctx, gen, want); err == nil {
				break
			}
			s.log.Warn("reading committed offsets", "error", err)
			if !sleep(ctx, time.Second) {
				h.mu.Lock()
				h.starting -= len(fresh)
				h.notify()
				h.mu.Unlock()
				return
			}
		}
	}
	h.mu.Lock()
	for _, k := range kept {
		if r := h.runs[k]; r != nil {
			r.recheck(recheck{c: committed[k.topic][int(k.id)], ctx: ctx})
		}
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range fresh {
		wg.Go(func() {
			r := s.runPartition(h.ctx, ctx, h.mctx, h.commits, k.topic, k.id, committed[k.topic][int(k.id)], h.ended)
			h.mu.Lock()
			h.starting--
			if r != nil {
				h.runs[k] = r
			}
			h.notify()
			h.mu.Unlock()
			if r != nil {
				go r.run()
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil && (len(fresh) > 0 || len(kept) > 0) {
		s.stats.rebalanceSeconds.Observe(time.Since(gen.Start).Seconds())
	}
}

// Settle waits for the handovers under way, or for ctx to end
// (group.Handler).
func (h *holdings) Settle(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		h.handovers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// ended takes a partition out of the holdings once its run ended.
func (h *holdings) ended(r *partRun) {
	h.mu.Lock()
	k := topicPartition{r.p.topic, r.p.id}
	if h.runs[k] == r {
		delete(h.runs, k)
	}
	h.notify()
	h.mu.Unlock()
}

// afterHandover waits until the partitions handed over are finished,
// commits them to their tables, and rejoins: the next generation gives
// them to their new owners.
func (h *holdings) afterHandover() {
	for {
		h.mu.Lock()
		n, ch := 0, h.changed
		for _, r := range h.runs {
			if r.leaving {
				n++
			}
		}
		h.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-h.mctx.Done():
			return
		case <-ch:
		}
	}
	if h.s.tables != nil {
		fctx, cancel := context.WithTimeout(h.mctx, h.s.cfg.ShutdownTimeout)
		h.s.tables.commitAll(fctx)
		cancel()
	}
	h.m.Rejoin()
}

// clock ticks every partition held until ctx ends.
func (h *holdings) clock(ctx context.Context) {
	ticker := time.NewTicker(h.s.tick)
	defer ticker.Stop()
	sinkDone := h.ctx.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-sinkDone:
			sinkDone = nil // woken once; they end by themselves
		}
		h.mu.Lock()
		for _, r := range h.runs {
			r.tick()
		}
		h.mu.Unlock()
	}
}
