package group

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
)

// fakePartition records what Holdings asks of it; handed over or
// dropped, it ends at once.
type fakePartition struct {
	pipe  *fakePipeline
	name  string
	ended func()
}

func (p *fakePartition) Run()      { p.pipe.note(p.name + " run") }
func (p *fakePartition) HandOver() { p.pipe.note(p.name + " handed over"); go p.ended() }
func (p *fakePartition) Drop()     { p.pipe.note(p.name + " dropped"); go p.ended() }
func (p *fakePartition) Tick()     {}
func (p *fakePartition) Recheck(_ context.Context, c Committed) {
	p.pipe.note(fmt.Sprintf("%s rechecked at %d", p.name, c.Offset))
}

// fakePipeline starts fakePartitions, each at ten times its id, and
// records the calls.
type fakePipeline struct {
	mu       sync.Mutex
	calls    []string
	moved    map[string]int
	finished chan struct{}
}

func (f *fakePipeline) note(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

// took returns the calls since the last took, sorted.
func (f *fakePipeline) took() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Sorted(slices.Values(f.calls))
	f.calls = nil
	return out
}

func (f *fakePipeline) Positions(_ context.Context, _ *Generation, parts map[string][]int) (map[string]map[int]Committed, error) {
	out := map[string]map[int]Committed{}
	for topic, ids := range parts {
		out[topic] = map[int]Committed{}
		for _, id := range ids {
			out[topic][id] = Committed{Offset: int64(10 * id)}
		}
	}
	return out, nil
}

func (f *fakePipeline) Start(_ context.Context, topic string, id int32, c Committed, ended func()) Partition {
	name := fmt.Sprintf("%s[%d]", topic, id)
	f.note(fmt.Sprintf("%s started at %d", name, c.Offset))
	return &fakePartition{pipe: f, name: name, ended: ended}
}

func (f *fakePipeline) Generation(context.Context, *Generation) {}
func (f *fakePipeline) Settled(*Generation)                     {}
func (f *fakePipeline) Moved(kind string, n int) {
	f.mu.Lock()
	f.moved[kind] += n
	f.mu.Unlock()
}
func (f *fakePipeline) Finish(context.Context) { f.finished <- struct{}{} }

// TestHoldings runs Holdings through generations: new partitions start
// from their committed offsets, those that stay are rechecked, those that
// leave are handed over (cooperative: finished, committed to their
// tables, then the member rejoins) or dropped (range), and a lost
// membership drops everything.
func TestHoldings(t *testing.T) {
	pipe := &fakePipeline{moved: map[string]int{}, finished: make(chan struct{}, 1)}
	ctx := context.Background()
	commits := NewCommitBatcher(nil)
	h := NewHoldings(ctx, ctx, pipe, commits, slog.New(slog.DiscardHandler))
	m := NewMembership(Options{Client: &kafka.Client{}, Config: &config.Kafka{Group: "g"}, Log: slog.New(slog.DiscardHandler)}, h)
	h.SetMembership(m)
	gen := func(id int, cooperative bool, ids ...int) *Generation {
		return &Generation{ID: id, Group: "g", MemberID: "m", Assigned: map[string][]int{"t": ids}, cooperative: cooperative}
	}
	owned := func() []int { return h.Owned()["t"] }

	h.Assigned(ctx, gen(1, true, 0, 1, 2))
	if got, want := pipe.took(), []string{"t[0] run", "t[0] started at 0", "t[1] run", "t[1] started at 10", "t[2] run", "t[2] started at 20"}; !slices.Equal(got, want) {
		t.Fatalf("generation 1: %q, want %q", got, want)
	}
	if g, _ := commits.generation(); g == nil || g.ID != 1 {
		t.Errorf("the commits' generation is %v, want 1", g)
	}

	h.Assigned(ctx, gen(2, true, 1, 2, 3))
	select {
	case <-pipe.finished:
	case <-time.After(30 * time.Second):
		t.Fatal("the partition handed over was not committed to its table")
	}
	select {
	case <-m.rejoinCh:
	case <-time.After(30 * time.Second):
		t.Fatal("no rejoin after the handover")
	}
	if got, want := pipe.took(), []string{"t[0] handed over", "t[1] rechecked at 10", "t[2] rechecked at 20", "t[3] run", "t[3] started at 30"}; !slices.Equal(got, want) {
		t.Fatalf("generation 2: %q, want %q", got, want)
	}
	if got := owned(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Errorf("after the handover the member holds %v, want [1 2 3]", got)
	}

	h.Assigned(ctx, gen(3, false, 1))
	waitHeld(t, h, 1) // the dropped ones have ended
	if got, want := pipe.took(), []string{"t[1] rechecked at 10", "t[2] dropped", "t[3] dropped"}; !slices.Equal(got, want) {
		t.Fatalf("generation 3 (range): %q, want %q", got, want)
	}

	// Drain claims the partitions held until Drained, also once they end.
	h.Drain()
	h.Lost()
	if got, want := pipe.took(), []string{"t[1] dropped"}; !slices.Equal(got, want) {
		t.Fatalf("lost: %q, want %q", got, want)
	}
	if got := owned(); !slices.Equal(got, []int{1}) {
		t.Errorf("draining, the member claims %v, want [1]", got)
	}
	h.Drained()
	if got := owned(); len(got) != 0 {
		t.Errorf("drained and lost, the member claims %v", got)
	}
	if g, _ := commits.generation(); g != nil {
		t.Errorf("the commits' generation is %d after the membership was lost", g.ID)
	}
	want := map[string]int{"assigned": 4, "kept": 3, "moved": 1, "dropped": 3}
	if !maps.Equal(pipe.moved, want) {
		t.Errorf("moved %v, want %v", pipe.moved, want)
	}
}

// waitHeld waits until h holds n partitions.
func waitHeld(t *testing.T, h *Holdings, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		h.mu.Lock()
		got, ch := len(h.runs), h.changed
		h.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the holdings hold %d partitions, want %d", got, n)
		}
	}
}
