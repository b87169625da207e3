package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/offsetcommit"

	"github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestStickyAssign checks the leader's assignment: balanced, sticky, and
// withholding every partition that changes owner while its owner holds it.
func TestStickyAssign(t *testing.T) {
	mem := func(id string, owned ...int) Member {
		return Member{ID: id, Topics: []string{"t"}, Owned: map[string][]int{"t": owned}}
	}
	for _, tc := range []struct {
		name    string
		members []Member
		n       int
		want    map[string][]int // by member, topic t
	}{
		{"fresh group", []Member{mem("a"), mem("b"), mem("c")}, 12,
			map[string][]int{"a": {0, 1, 2, 3}, "b": {4, 5, 6, 7}, "c": {8, 9, 10, 11}}},
		{"nothing moves", []Member{mem("a", 0, 5, 7, 9), mem("b", 1, 2, 3, 4), mem("c", 6, 8, 10, 11)}, 12,
			map[string][]int{"a": {0, 5, 7, 9}, "b": {1, 2, 3, 4}, "c": {6, 8, 10, 11}}},
		{"a member left: its partitions are free", []Member{mem("b", 4, 5, 6, 7), mem("c", 8, 9, 10, 11)}, 12,
			map[string][]int{"b": {0, 1, 4, 5, 6, 7}, "c": {2, 3, 8, 9, 10, 11}}},
		{"a member joined: moving partitions are withheld", []Member{mem("a"), mem("b", 0, 1, 4, 5, 6, 7), mem("c", 2, 3, 8, 9, 10, 11)}, 12,
			map[string][]int{"a": nil, "b": {0, 1, 4, 5}, "c": {2, 3, 8, 9}}},
		{"a member joined, owners released", []Member{mem("a"), mem("b", 0, 1, 4, 5), mem("c", 2, 3, 8, 9)}, 12,
			map[string][]int{"a": {6, 7, 10, 11}, "b": {0, 1, 4, 5}, "c": {2, 3, 8, 9}}},
		{"uneven", []Member{mem("a", 0, 1, 2, 3, 4), mem("b"), mem("c")}, 7,
			map[string][]int{"a": {0, 1, 2}, "b": nil, "c": {5, 6}}},
		{"a partition claimed twice stays with the first", []Member{mem("a", 0, 1), mem("b", 1, 2)}, 4,
			map[string][]int{"a": {0, 1}, "b": {2, 3}}},
		{"partitions beyond the topic are ignored", []Member{mem("a", 0, 9), mem("b")}, 2,
			map[string][]int{"a": {0}, "b": {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := stickyAssign(tc.members, map[string]int{"t": tc.n})
			for _, m := range tc.members {
				if g := got[m.ID]["t"]; !slices.Equal(g, tc.want[m.ID]) {
					t.Errorf("%s gets %v, want %v", m.ID, g, tc.want[m.ID])
				}
			}
			// Nothing is assigned twice, and nothing that an other member
			// holds is assigned.
			seen := map[int]string{}
			for _, m := range tc.members {
				for _, id := range got[m.ID]["t"] {
					if o, dup := seen[id]; dup {
						t.Errorf("partition %d assigned to %s and %s", id, o, m.ID)
					}
					seen[id] = m.ID
				}
			}
		})
	}
}

// TestStickyAssignConverges runs the handover to its end: owners give
// up what they miss, rejoin, and the group ends balanced with every
// partition assigned once, having moved only what the balance required.
func TestStickyAssignConverges(t *testing.T) {
	for _, tc := range []struct {
		members, partitions, joining int
	}{{3, 12, 1}, {1, 12, 2}, {4, 7, 3}, {2, 100, 5}} {
		t.Run(fmt.Sprintf("%d+%d members, %d partitions", tc.members, tc.joining, tc.partitions), func(t *testing.T) {
			counts := map[string]int{"t": tc.partitions}
			var members []Member
			for i := range tc.members {
				members = append(members, Member{ID: fmt.Sprintf("m%02d", i), Topics: []string{"t"}, Owned: map[string][]int{}})
			}
			// Converge the first members.
			for range 3 {
				plan := stickyAssign(members, counts)
				for i := range members {
					members[i].Owned = map[string][]int{"t": plan[members[i].ID]["t"]}
				}
			}
			before := map[int]string{}
			for _, m := range members {
				for _, id := range m.Owned["t"] {
					before[id] = m.ID
				}
			}
			for i := range tc.joining {
				members = append(members, Member{ID: fmt.Sprintf("n%02d", i), Topics: []string{"t"}, Owned: map[string][]int{}})
			}
			var rounds int
			for rounds = 1; rounds <= 5; rounds++ {
				plan := stickyAssign(members, counts)
				changed := false
				for i := range members {
					got := plan[members[i].ID]["t"]
					if !slices.Equal(got, members[i].Owned["t"]) {
						changed = true
					}
					members[i].Owned = map[string][]int{"t": got}
				}
				if !changed {
					break
				}
			}
			if rounds > 3 {
				t.Errorf("took %d rounds", rounds)
			}
			total, moved := 0, 0
			lo, hi := tc.partitions, 0
			for _, m := range members {
				n := len(m.Owned["t"])
				total += n
				lo, hi = min(lo, n), max(hi, n)
				for _, id := range m.Owned["t"] {
					if o, ok := before[id]; ok && o != m.ID {
						moved++
					}
				}
			}
			if total != tc.partitions || hi-lo > 1 {
				t.Errorf("%d partitions assigned (want %d), %d to %d a member", total, tc.partitions, lo, hi)
			}
			all := tc.members + tc.joining
			if want := tc.partitions - tc.partitions/all*tc.members - min(tc.partitions%all, tc.members); moved > want {
				t.Errorf("%d partitions moved, want at most %d", moved, want)
			}
		})
	}
}

// handoverHandler plays a sink's holdings for TestMembershipHandover: it
// holds what it is assigned, gives up at once what it misses, and rejoins
// after giving something up.
type handoverHandler struct {
	t    *testing.T
	name string
	m    *Membership
	mu   *sync.Mutex
	held map[int]string // the partitions held, by whom: shared by the members

	gens atomic.Int64
}

func (h *handoverHandler) Settle(context.Context) {}

func (h *handoverHandler) Owned() map[string][]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []int
	for id, who := range h.held {
		if who == h.name {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return map[string][]int{"t": ids}
}

func (h *handoverHandler) Assigned(ctx context.Context, gen *Generation) {
	h.gens.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	released := false
	for id, who := range h.held {
		if who == h.name && !gen.Has("t", id) {
			delete(h.held, id)
			released = true
		}
	}
	for _, id := range gen.Assigned["t"] {
		if who, ok := h.held[id]; ok && who != h.name {
			h.t.Errorf("generation %d gives partition %d to %s while %s holds it", gen.ID, id, h.name, who)
		}
		h.held[id] = h.name
	}
	if released {
		h.m.Rejoin()
	}
}

func (h *handoverHandler) Lost() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, who := range h.held {
		if who == h.name {
			delete(h.held, id)
		}
	}
}

// TestMembershipHandover runs three members on kfake that join one after
// the other: no partition is ever assigned to a member while another
// holds it, and the group ends balanced. It fails if the heartbeats do
// not see the rebalances (heartbeatError).
func TestMembershipHandover(t *testing.T) {
	broker := kafkatest.Start(t, 12, "t")
	cfg := &config.Kafka{Brokers: broker.Brokers, Group: "g", ClientID: "test", SessionTimeout: 6 * time.Second,
		HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 5 * time.Second, CommitTimeout: 10 * time.Second}
	client := testClient(t, cfg)
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var mu sync.Mutex
	held := map[int]string{}
	var hs []*handoverHandler
	for _, name := range []string{"a", "b", "c"} {
		h := &handoverHandler{t: t, name: name, mu: &mu, held: held}
		h.m = NewMembership(Options{Client: client, Config: cfg, Log: log, Topics: []string{"t"}}, h)
		hs = append(hs, h)
		wg.Go(func() { h.m.Run(ctx, make(chan struct{})) })
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			counts := map[string]int{}
			for _, who := range held {
				counts[who]++
			}
			n := len(held)
			mu.Unlock()
			balanced := n == 12
			for _, h := range hs {
				balanced = balanced && counts[h.name] == 12/len(hs)
			}
			if balanced {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("with %d members: %d partitions held, %v", len(hs), n, counts)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, h := range hs {
		if h.gens.Load() < 2 && h.name != "c" {
			t.Errorf("%s saw %d generations", h.name, h.gens.Load())
		}
	}
}

// genHandler records the generations of a member.
type genHandler struct{ gens chan *Generation }

func (h *genHandler) Settle(context.Context)  {}
func (h *genHandler) Owned() map[string][]int { return nil }
func (h *genHandler) Assigned(ctx context.Context, gen *Generation) {
	h.gens <- gen
}
func (h *genHandler) Lost() {}

// commitWatch is a Kafka transport that says when an OffsetCommit was
// answered.
type commitWatch struct {
	kafka.RoundTripper
	answered chan struct{}
}

func (w *commitWatch) RoundTrip(ctx context.Context, addr net.Addr, req kafka.Request) (kafka.Response, error) {
	resp, err := w.RoundTripper.RoundTrip(ctx, addr, req)
	if _, ok := req.(*offsetcommit.Request); ok {
		select {
		case w.answered <- struct{}{}:
		default:
		}
	}
	return resp, err
}

// TestCommitAcrossGenerations checks the commit batcher's fencing: a
// commit refused because its generation is over is sent again in the
// next generation of the same member when that member still holds the
// partition, and fails otherwise.
func TestCommitAcrossGenerations(t *testing.T) {
	broker := kafkatest.Start(t, 2, "t")
	cfg := &config.Kafka{Brokers: broker.Brokers, Group: "g", ClientID: "test", SessionTimeout: 6 * time.Second,
		HeartbeatInterval: 100 * time.Millisecond, RebalanceTimeout: 5 * time.Second, CommitTimeout: 10 * time.Second}
	client := testClient(t, cfg)
	watch := &commitWatch{RoundTripper: client.Transport, answered: make(chan struct{}, 1)}
	client.Transport = watch
	h := &genHandler{gens: make(chan *Generation, 4)}
	m := NewMembership(Options{Client: client, Config: cfg, Log: slog.New(slog.DiscardHandler), Topics: []string{"t"}}, h)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { m.Run(ctx, make(chan struct{})) })
	var gen *Generation
	select {
	case gen = <-h.gens:
	case <-time.After(10 * time.Second):
		t.Fatal("no generation")
	}
	b := NewCommitBatcher(client)
	wg.Go(func() { b.Run(ctx) })
	committedAt := func() int64 {
		got, err := FetchCommitted(ctx, client, "g", map[string][]int{"t": {0}})
		if err != nil {
			t.Fatal(err)
		}
		return got["t"][0].Offset
	}
	stale := func() *Generation { g := *gen; g.ID--; return &g }
	range0 := func(assigned bool) *Generation {
		g := *gen
		g.Protocol, g.cooperative = ProtocolRange, false
		if !assigned {
			g.Assigned = map[string][]int{"t": {1}}
		}
		return &g
	}
	for i, tc := range []struct {
		name string
		next *Generation // the generation that follows the stale one
		ok   bool
	}{
		{"the same member, cooperative", gen, true},
		{"the same member, range, still assigned", range0(true), true},
		{"the same member, range, not assigned", range0(false), false},
		{"the membership is lost", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			select { // the last subtest's commit was answered
			case <-watch.answered:
			default:
			}
			b.SetGeneration(stale())
			offset := int64(10 * (i + 1))
			done := make(chan error, 1)
			go func() { done <- b.Commit(ctx, "t", 0, offset, "") }()
			select { // refused: the generation is over
			case <-watch.answered:
			case <-time.After(10 * time.Second):
				t.Fatal("the commit in the stale generation was not answered")
			}
			b.SetGeneration(tc.next)
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the commit did not end")
			}
			if tc.ok {
				if err != nil || committedAt() != offset {
					t.Errorf("commit: %v, committed offset %d, want %d", err, committedAt(), offset)
				}
			} else if !errors.Is(err, ErrGenerationOver) || committedAt() == offset {
				t.Errorf("commit: %v (want the generation over), committed offset %d", err, committedAt())
			}
		})
	}
}

// testClient is a Kafka client of cfg's brokers, its connections closed
// when the test ends.
func testClient(t *testing.T, cfg *config.Kafka) *kafka.Client {
	tr := &kafka.Transport{ClientID: cfg.ClientID}
	t.Cleanup(tr.CloseIdleConnections)
	return &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.CommitTimeout, Transport: tr}
}

// TestBalancerMetadata reads back each protocol's join metadata: the
// sticky protocol's carries the partitions held, the range protocol's
// (kafka-go's ConsumerGroup's) only the topics, and the sticky protocol
// reads a range member's metadata too (a member of an earlier release
// that offers it).
func TestBalancerMetadata(t *testing.T) {
	topics := []string{"a", "b"}
	owned := map[string][]int{"a": {0, 3}, "b": {1}}
	for _, tc := range []struct {
		name      string
		write     Balancer
		read      Balancer
		wantOwned map[string][]int
	}{
		{"sticky", Sticky{}, Sticky{}, owned},
		{"range", Range{}, Range{}, map[string][]int{}},
		{"range read as sticky", Range{}, Sticky{}, map[string][]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := tc.write.Metadata(topics, owned)
			if err != nil {
				t.Fatal(err)
			}
			gotTopics, gotOwned, err := tc.read.Decode(md)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gotTopics, topics) || !maps.EqualFunc(gotOwned, tc.wantOwned, slices.Equal) {
				t.Errorf("read back topics %v, owned %v; want %v, %v", gotTopics, gotOwned, topics, tc.wantOwned)
			}
		})
	}
	if _, _, err := (Range{}).Decode([]byte{0, 1}); err == nil {
		t.Error("Range read truncated metadata without an error")
	}
	if !(Sticky{}).Cooperative() || (Range{}).Cooperative() {
		t.Error("the sticky protocol hands partitions over, the range protocol drops them")
	}
}
