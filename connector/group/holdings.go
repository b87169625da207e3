package group

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"
)

// Partition is one partition that the member holds, as Holdings drives
// it: the sink's partition pipeline behind it. Its methods ask for work
// and return at once; the partition does the work in its own time and
// calls the ended function it was started with when it ends.
type Partition interface {
	// Run starts the partition's work, once, after Pipeline.Start.
	Run()
	// HandOver asks the partition to finish its files, commit them and
	// end: it moves to another member (a cooperative generation).
	HandOver()
	// Drop asks the partition to drop what it holds and end: it moved to
	// another member already (an eager generation, or the member is out
	// of the group).
	Drop()
	// Recheck hands the partition the committed state read at a
	// generation that keeps it; ctx is that generation's.
	Recheck(ctx context.Context, c Committed)
	// Tick asks the partition for its clock-driven work.
	Tick()
}

// Pipeline is what Holdings starts partitions with, and tells of each
// generation.
type Pipeline interface {
	// Positions reads where the partitions resume, by topic and id
	// (StartPositions); Holdings retries it until it succeeds or ctx, the
	// generation's, ends.
	Positions(ctx context.Context, gen *Generation, parts map[string][]int) (map[string]map[int]Committed, error)
	// Start takes a partition from its committed state c. It returns nil
	// when ctx, the generation's, ends first. ended is to be called once
	// the partition's run has ended.
	Start(ctx context.Context, topic string, id int32, c Committed, ended func()) Partition
	// Generation is told of each generation as Holdings starts to apply
	// it; ctx is the generation's.
	Generation(ctx context.Context, gen *Generation)
	// Moved counts what a generation did with the partitions: kept,
	// handed over ("moved"), dropped and newly assigned; and what losing
	// the membership did ("dropped").
	Moved(kind string, n int)
	// Settled is told when every partition of a generation that keeps or
	// assigns some has started (gen.Start is when its rebalance began).
	Settled(gen *Generation)
	// Finish commits what the partitions handed over finished (to their
	// tables), before the member rejoins without them. ctx is the
	// membership's.
	Finish(ctx context.Context)
}

// Holdings are the partitions a sink holds over one membership of the
// group: they outlive generations. At each generation, the partitions
// that stay keep their open files (after a check that nobody committed
// them in between), the ones that leave are handed over (finished and
// committed, cooperative) or dropped (range), and the new ones start from
// their committed state. Holdings is the Membership's Handler.
type Holdings struct {
	pipe    Pipeline
	log     *slog.Logger
	ctx     context.Context // the sink's: its end is a shutdown
	mctx    context.Context // the membership's: commits run in it
	m       *Membership
	commits *CommitBatcher

	handovers sync.WaitGroup // afterHandover runs not done

	mu       sync.Mutex
	runs     map[partitionKey]*held
	starting int           // partitions being assigned, not in runs yet
	changed  chan struct{} // closed when runs or starting change
	// draining are the partitions held when the shutdown began, claimed
	// in joins until their last files are in their tables (see Drain).
	draining map[partitionKey]bool
}

// partitionKey names one partition.
type partitionKey struct {
	topic string
	id    int32
}

// held is one partition held.
type held struct {
	p       Partition
	leaving bool // handed over or dropped
}

// NewHoldings returns empty holdings that start partitions with pipe.
// ctx is the sink's, whose end is a shutdown: no partition starts after
// it; mctx is the membership's; commits is the membership's commit
// batcher, whose generation Holdings sets.
func NewHoldings(ctx, mctx context.Context, pipe Pipeline, commits *CommitBatcher, log *slog.Logger) *Holdings {
	return &Holdings{pipe: pipe, log: log, ctx: ctx, mctx: mctx, commits: commits, runs: map[partitionKey]*held{}, changed: make(chan struct{})}
}

// SetMembership names the membership that Holdings asks to rejoin after a
// handover; m is the membership that drives it.
func (h *Holdings) SetMembership(m *Membership) { h.m = m }

// notify wakes the waiters for a change; h.mu is held.
func (h *Holdings) notify() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Owned lists the partitions held, for the join metadata (Handler).
func (h *Holdings) Owned() map[string][]int {
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

// Drain starts the shutdown's claim: until Drained, a join claims every
// partition held now, also once its run has ended. A stopping member
// finishes its partitions' files and then commits them to their tables;
// a join in between (another member came or went) that no longer claimed
// them would let the leader give them to their next owner, which would
// read the table's state before that commit and the records again. Claimed,
// they stay with this member (which starts nothing new while it stops)
// until it leaves, after the commit.
func (h *Holdings) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.draining = map[partitionKey]bool{}
	for k := range h.runs {
		h.draining[k] = true
	}
}

// Drained ends the claim Drain started: the partitions are committed.
func (h *Holdings) Drained() {
	h.mu.Lock()
	h.draining = nil
	h.mu.Unlock()
}

// Empty waits until no partition is held or being assigned, or ctx ends;
// it reports whether none is.
func (h *Holdings) Empty(ctx context.Context) bool {
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
// someone else may hold them already (Handler).
func (h *Holdings) Lost() {
	h.commits.SetGeneration(nil)
	h.mu.Lock()
	n := len(h.runs)
	for _, r := range h.runs {
		r.p.Drop()
	}
	h.mu.Unlock()
	h.pipe.Moved("dropped", n)
	h.Empty(context.Background())
}

// Assigned applies a generation's assignment (Handler).
func (h *Holdings) Assigned(ctx context.Context, gen *Generation) {
	h.pipe.Generation(ctx, gen)
	h.commits.SetGeneration(gen)
	var parts []string
	for topic, ids := range gen.Assigned {
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf("%s[%d]", topic, id))
		}
	}
	sort.Strings(parts)
	shown := parts
	if len(shown) > 20 {
		shown = append(shown[:20:20], fmt.Sprintf("… %d more", len(parts)-20))
	}
	stopping := h.ctx.Err() != nil

	h.mu.Lock()
	var kept, fresh []partitionKey
	var leaving []*held
	for k, r := range h.runs {
		if gen.Has(k.topic, int(k.id)) && !r.leaving {
			kept = append(kept, k)
		} else if !r.leaving {
			leaving = append(leaving, r)
		}
	}
	for topic, ids := range gen.Assigned {
		for _, id := range ids {
			if k := (partitionKey{topic, int32(id)}); h.runs[k] == nil {
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
			r.p.HandOver()
		} else {
			r.p.Drop()
		}
	}
	h.mu.Unlock()

	moved, dropped := 0, 0
	if gen.Cooperative() {
		moved = len(leaving)
	} else {
		dropped = len(leaving)
	}
	h.pipe.Moved("kept", len(kept))
	h.pipe.Moved("moved", moved)
	h.pipe.Moved("dropped", dropped)
	h.pipe.Moved("assigned", len(fresh))
	h.log.Info("generation started", "generation", gen.ID, "member", gen.MemberID, "protocol", gen.Protocol,
		"partitions", len(parts), "assigned", shown, "kept", len(kept), "new", len(fresh), "handed_over", moved, "dropped", dropped)
	if len(leaving) > 0 && gen.Cooperative() {
		h.handovers.Go(h.afterHandover)
	}

	// One request for the committed offsets of every partition, one for
	// the start offsets of those never committed: thousands of
	// partitions must not mean thousands of requests.
	want := map[string][]int{}
	for _, k := range append(kept, fresh...) {
		want[k.topic] = append(want[k.topic], int(k.id))
	}
	var committed map[string]map[int]Committed
	if len(want) > 0 {
		for {
			var err error
			if committed, err = h.pipe.Positions(ctx, gen, want); err == nil {
				break
			}
			h.log.Warn("reading committed offsets", "error", err)
			if !backoff.Sleep(ctx, time.Second) {
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
			r.p.Recheck(ctx, committed[k.topic][int(k.id)])
		}
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range fresh {
		wg.Go(func() {
			var r *held // set before the partition runs, read when it ends
			p := h.pipe.Start(ctx, k.topic, k.id, committed[k.topic][int(k.id)], func() { h.ended(k, r) })
			h.mu.Lock()
			h.starting--
			if p != nil {
				r = &held{p: p}
				h.runs[k] = r
			}
			h.notify()
			h.mu.Unlock()
			if p != nil {
				p.Run()
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil && (len(fresh) > 0 || len(kept) > 0) {
		h.pipe.Settled(gen)
	}
}

// Settle waits for the handovers under way, or for ctx to end (Handler).
func (h *Holdings) Settle(ctx context.Context) {
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
func (h *Holdings) ended(k partitionKey, r *held) {
	h.mu.Lock()
	if h.runs[k] == r {
		delete(h.runs, k)
	}
	h.notify()
	h.mu.Unlock()
}

// afterHandover waits until the partitions handed over are finished,
// commits them to their tables, and rejoins: the next generation gives
// them to their new owners.
func (h *Holdings) afterHandover() {
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
	h.pipe.Finish(h.mctx)
	h.m.Rejoin()
}

// Clock ticks every partition held every interval, until ctx ends.
func (h *Holdings) Clock(ctx context.Context, every time.Duration) {
	ticker := time.NewTicker(every)
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
			r.p.Tick()
		}
		h.mu.Unlock()
	}
}
