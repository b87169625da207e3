package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// The fetch multiplexer's tests run it against the in-process broker
// (kfake), with faults injected into its fetch requests, and assert what
// the partitions receive: every record once, in order.

// syncBuffer is a log destination that tests read while the multiplexer
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testBudget is a memory budget as the sink's is: Reserve waits while
// what is held and what is asked exceed the limit, unless nothing is held.
type testBudget struct {
	limit  int64
	used   atomic.Int64
	pauses atomic.Int64 // reservations that had to wait

	mu   sync.Mutex
	wake chan struct{} // closed and replaced when memory is released
}

func newTestBudget(limit int64) *testBudget {
	return &testBudget{limit: limit, wake: make(chan struct{})}
}

func (b *testBudget) Limit() int64 { return b.limit }

func (b *testBudget) Add(n int64) {
	b.used.Add(n)
	if n < 0 {
		b.mu.Lock()
		close(b.wake)
		b.wake = make(chan struct{})
		b.mu.Unlock()
	}
}

func (b *testBudget) Reserve(ctx context.Context, n int64) error {
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

// muxHarness is a fetch multiplexer that runs against a broker, with no
// consumer group: the test adds partitions and takes their records.
type muxHarness struct {
	mux *Mux
	mem *testBudget
	log *syncBuffer
}

// defaultFetch is the kafka.fetch section's defaults.
var defaultFetch = config.Fetch{MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 500 * time.Millisecond}

// startMux runs a fetch multiplexer for brokers with the fetch settings
// cfg and a memory budget of budget bytes until the test ends. A
// partition's room is the sink's for one partition: 1/128 of the budget,
// at least 64 KiB and at most fetch.max_bytes. At the end, with every
// Fetcher stopped and the loop returned, the budget must be back to zero.
func startMux(t *testing.T, brokers []string, cfg config.Fetch, budget int64) *muxHarness {
	t.Helper()
	logs := &syncBuffer{}
	tr := &kafka.Transport{ClientID: "test", DialTimeout: 10 * time.Second}
	mem := newTestBudget(budget)
	m := New(Options{
		Client: &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr},
		Config: cfg,
		Budget: mem,
		Room:   func() int64 { return max(64<<10, min(budget/128, cfg.MaxBytes)) },
		Log:    slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); m.Run(ctx) }()
	t.Cleanup(func() {
		m.mu.Lock()
		var fs []*Fetcher
		for _, sub := range m.subs {
			fs = append(fs, sub.f)
		}
		m.mu.Unlock()
		for _, f := range fs {
			f.Stop()
		}
		cancel()
		<-ran
		if used := mem.used.Load(); used != 0 {
			t.Errorf("the memory budget counts %d bytes after the fetches stopped, want 0", used)
		}
		if t.Failed() {
			t.Logf("multiplexer log:\n%s", logs)
		}
		tr.CloseIdleConnections()
	})
	return &muxHarness{mux: m, mem: mem, log: logs}
}

// produce writes records [from, to) of partition p, each value the
// record's number padded to size bytes, in as few batches as the
// producer makes (at most a megabyte each).
func produce(t *testing.T, brokers []string, topic string, p, from, to, size int) {
	t.Helper()
	tr := &kafka.Transport{} // not the shared DefaultTransport, whose pools outlive the test
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, BatchTimeout: time.Millisecond, BatchSize: to - from, RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }), Transport: tr}
	defer w.Close()
	var msgs []kafka.Message
	for i := from; i < to; i++ {
		v := fmt.Appendf(nil, `{"n":%d}`, i)
		if len(v) < size {
			v = append(v, bytes.Repeat([]byte{' '}, size-len(v))...)
		}
		msgs = append(msgs, kafka.Message{Partition: p, Value: v})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("producing to %s[%d]: %v", topic, p, err)
	}
}

// take takes what f has (its records' offsets), if anything, and
// releases the budget the records held, as a partition does once it has
// written them.
func (h *muxHarness) take(f *Fetcher) []int64 {
	batch, n := f.Take()
	offs := make([]int64, len(batch))
	for i, r := range batch {
		offs[i] = r.Offset
	}
	f.GiveBack(batch)
	h.mem.Add(-n)
	return offs
}

// receive takes from f until it has the offsets [from, to), and fails if
// they do not come, come twice or out of order.
func (h *muxHarness) receive(t *testing.T, f *Fetcher, from, to int64) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	next := from
	for next < to {
		select {
		case <-f.Ready():
		case <-timeout:
			t.Fatalf("received offsets up to %d, want [%d, %d)", next, from, to)
		}
		for _, o := range h.take(f) {
			if o != next {
				t.Fatalf("received offset %d, want %d", o, next)
			}
			next++
		}
	}
}

// fetchErrorResponse answers a fetch request with code for every
// partition it asks for.
func fetchErrorResponse(req *kmsg.FetchRequest, code int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Version
	for _, rt := range req.Topics {
		t := kmsg.NewFetchResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, code
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = -1, -1, -1
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// asksFor reports whether a fetch request asks for partition p.
func asksFor(req *kmsg.FetchRequest, p int32) bool {
	for _, t := range req.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				return true
			}
		}
	}
	return false
}

// TestFetchMuxPartitionCounts fetches one, a few and many partitions (one
// loop serves every count): each receives its records once, in order.
func TestFetchMuxPartitionCounts(t *testing.T) {
	tests := []struct {
		name       string
		partitions int
		records    int
	}{
		{"one", 1, 1000},
		{"four", 4, 500},
		{"many", 100, 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broker := kafkatest.Start(t, int32(tt.partitions), "t")
			for p := range tt.partitions {
				produce(t, broker.Brokers, "t", p, 0, tt.records, 50)
			}
			h := startMux(t, broker.Brokers, defaultFetch, 256<<20)
			fs := make([]*Fetcher, tt.partitions)
			for p := range fs {
				fs[p] = h.mux.Add("t", int32(p), 0, new(atomic.Int64), nil)
			}
			for p, f := range fs {
				h.receive(t, f, 0, int64(tt.records))
				if extra := h.take(f); len(extra) > 0 {
					t.Errorf("partition %d: received %v beyond the records produced", p, extra)
				}
			}
		})
	}
}

// TestFetchMuxRecoversFromErrors injects errors into the fetch requests
// for partition 0, a few times, then lets them through: both partitions
// receive every record once and in order (the failed fetch is retried
// from the same offset), and the errors were met.
func TestFetchMuxRecoversFromErrors(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*kmsg.FetchRequest) (kmsg.Response, error)
	}{
		{"not leader for partition", func(req *kmsg.FetchRequest) (kmsg.Response, error) {
			return fetchErrorResponse(req, kerr.NotLeaderForPartition.Code), nil
		}},
		{"leader not available", func(req *kmsg.FetchRequest) (kmsg.Response, error) {
			return fetchErrorResponse(req, kerr.LeaderNotAvailable.Code), nil
		}},
		{"connection closed", func(*kmsg.FetchRequest) (kmsg.Response, error) {
			return nil, errors.New("injected: connection closed")
		}},
	}
	const injected, n = 3, 300
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broker := kafkatest.Start(t, 2, "t")
			// Records before the faults, and after them: the partition
			// has fetched some when its fetches start failing.
			produce(t, broker.Brokers, "t", 0, 0, n/2, 50)
			produce(t, broker.Brokers, "t", 1, 0, n, 50)
			h := startMux(t, broker.Brokers, defaultFetch, 256<<20)
			f0 := h.mux.Add("t", 0, 0, new(atomic.Int64), nil)
			f1 := h.mux.Add("t", 1, 0, new(atomic.Int64), nil)
			h.receive(t, f0, 0, n/2)

			kc := broker.Kfake()
			var met atomic.Int32
			kc.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				req := kreq.(*kmsg.FetchRequest)
				kc.KeepControl()
				if !asksFor(req, 0) {
					return nil, nil, false
				}
				if met.Add(1) == injected {
					kc.DropControl() // then the broker answers again
				}
				resp, err := tt.inject(req)
				return resp, err, true
			})
			produce(t, broker.Brokers, "t", 0, n/2, n, 50)
			h.receive(t, f0, n/2, n)
			h.receive(t, f1, 0, n)
			if got := met.Load(); got != injected {
				t.Errorf("%d fetches for partition 0 met the fault, want %d", got, injected)
			}
			if !strings.Contains(h.log.String(), "fetch failed; retrying") {
				t.Error("the failed fetch was not logged")
			}
		})
	}
}

// TestFetchMuxFollowsLeaderMove moves a partition's leadership to the
// other broker of two while it is fetched: the old leader refuses the
// fetches, and the partition goes on at the new one without losing or
// repeating a record.
func TestFetchMuxFollowsLeaderMove(t *testing.T) {
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.NumBrokers(2), kfake.Ports(0, 0)}, 1, "t")
	const n = 200
	produce(t, broker.Brokers, "t", 0, 0, n/2, 50)
	h := startMux(t, broker.Brokers, defaultFetch, 256<<20)
	f := h.mux.Add("t", 0, 0, new(atomic.Int64), nil)
	h.receive(t, f, 0, n/2)
	kc := broker.Kfake()
	from := kc.LeaderFor("t", 0)
	if err := kc.MoveTopicPartition("t", 0, 1-from); err != nil {
		t.Fatal(err)
	}
	if to := kc.LeaderFor("t", 0); to == from {
		t.Fatalf("the leader is still broker %d", to)
	}
	produce(t, broker.Brokers, "t", 0, n/2, n, 50)
	h.receive(t, f, n/2, n)
	if !strings.Contains(h.log.String(), "fetch failed; retrying") {
		t.Error("no fetch met the old leader's refusal")
	}
}

// TestFetchMuxRetention deletes records the partition has not fetched
// (the broker answers offset out of range): it goes on from the log start,
// says which records were lost, and receives the rest once.
func TestFetchMuxRetention(t *testing.T) {
	tests := []struct {
		name    string
		fetched int64 // records fetched, not taken, before the deletion
		deleted int64 // the log start after it
		end     int64
	}{
		{"before the first fetch", 0, 40, 100},
		{"after some were fetched", 25, 120, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			broker := kafkatest.Start(t, 1, "t")
			// Fetches of at most 64 KiB, and a first batch of 75 KB.
			const size = 3000
			h := startMux(t, broker.Brokers, config.Fetch{MinBytes: 1, MaxBytes: 64 << 10, MaxWait: defaultFetch.MaxWait}, 256<<20)
			var f *Fetcher
			if tt.fetched > 0 {
				// A batch fetched and not taken, more than a fetch's
				// worth: the partition has no fetch out until it takes
				// it, and its next asks for records that are gone by
				// then.
				produce(t, broker.Brokers, "t", 0, 0, int(tt.fetched), size)
				f = h.mux.Add("t", 0, 0, new(atomic.Int64), nil)
				for deadline := time.Now().Add(30 * time.Second); f.Buffered() == 0; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("the first batch was not fetched")
					}
				}
			}
			produce(t, broker.Brokers, "t", 0, int(tt.fetched), int(tt.end), size)
			if err := broker.Kfake().DeleteRecords("t", 0, tt.deleted); err != nil {
				t.Fatal(err)
			}
			if f == nil {
				f = h.mux.Add("t", 0, 0, new(atomic.Int64), nil)
			} else {
				h.receive(t, f, 0, tt.fetched)
			}
			h.receive(t, f, tt.deleted, tt.end)
			want := fmt.Sprintf("from=%d to=%d", tt.fetched, tt.deleted-1)
			if logs := h.log.String(); !strings.Contains(logs, "records deleted by retention") || !strings.Contains(logs, want) {
				t.Errorf("the log does not say that records %s were deleted by retention", want)
			}
		})
	}
}

// TestFetchMuxEmptyRounds fetches partitions that have no records: each
// of the first rounds of requests waits at the broker (fetch.max_wait and
// min_bytes, not a busy loop of empty answers), and a record that arrives
// meanwhile is received.
func TestFetchMuxEmptyRounds(t *testing.T) {
	const maxWait = 300 * time.Millisecond
	const rounds = 15 // requests seen, each of which must wait
	broker := kafkatest.Start(t, 3, "t")
	kc := broker.Kfake()
	var requests, noWait atomic.Int32
	seen := make(chan struct{})
	kc.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		kc.KeepControl()
		// A request that waits for nothing (no max_wait, or min_bytes 0)
		// comes back at once: a busy loop of empty answers.
		req := kreq.(*kmsg.FetchRequest)
		if req.MaxWaitMillis != int32(maxWait/time.Millisecond) || req.MinBytes < 1 {
			noWait.Add(1)
		}
		if requests.Add(1) == rounds {
			close(seen)
		}
		return nil, nil, false
	})
	h := startMux(t, broker.Brokers, config.Fetch{MinBytes: 1, MaxBytes: defaultFetch.MaxBytes, MaxWait: maxWait}, 256<<20)
	fs := make([]*Fetcher, 3)
	for p := range fs {
		fs[p] = h.mux.Add("t", int32(p), 0, new(atomic.Int64), nil)
	}
	select {
	case <-seen:
	case <-time.After(60 * time.Second):
		t.Fatalf("%d fetch requests, want %d", requests.Load(), rounds)
	}
	if n := noWait.Load(); n > 0 {
		t.Errorf("%d of %d fetches of partitions without records did not wait at the broker", n, requests.Load())
	}
	for p, f := range fs {
		if got := h.take(f); len(got) > 0 {
			t.Errorf("partition %d received %v from an empty partition", p, got)
		}
	}
	produce(t, broker.Brokers, "t", 1, 0, 1, 50)
	h.receive(t, fs[1], 0, 1)
}

// TestFetchMuxBudgetWaits fetches more than a small memory budget holds
// while the partitions take nothing: fetching pauses (fetches wait for
// the budget) short of the end, and resumes as the partitions take their
// records, until each has all of them.
func TestFetchMuxBudgetWaits(t *testing.T) {
	const partitions, n, size = 16, 1500, 1000
	broker := kafkatest.Start(t, partitions, "t")
	for p := range partitions {
		produce(t, broker.Brokers, "t", p, 0, n, size)
	}
	// A budget of 8 MiB (the sink's under memory.limit 16MiB, the least
	// there is), less than the 24 MB produced.
	h := startMux(t, broker.Brokers, defaultFetch, 8<<20)
	fs := make([]*Fetcher, partitions)
	for p := range fs {
		fs[p] = h.mux.Add("t", int32(p), 0, new(atomic.Int64), nil)
	}
	for deadline := time.Now().Add(30 * time.Second); h.mem.pauses.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no fetch waited for the budget (%d of %d bytes used)", h.mem.used.Load(), h.mem.limit)
		}
	}
	held := int64(0)
	for _, f := range fs {
		f.mu.Lock()
		held += int64(len(f.buf))
		f.mu.Unlock()
	}
	if held >= partitions*n {
		t.Fatalf("all %d records were fetched though the budget is spent", held)
	}
	// The partitions take their records as they come, all of them, as
	// the sink's do: what one holds is what the others' fetches wait for.
	next := make([]int64, partitions)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(time.Millisecond) {
		done := true
		for p, f := range fs {
			for _, o := range h.take(f) {
				if o != next[p] {
					t.Fatalf("partition %d received offset %d, want %d", p, o, next[p])
				}
				next[p]++
			}
			done = done && next[p] == n
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received offsets up to %v, want %d each", next, n)
		}
	}
}

// TestFetchMuxPartitionWithoutLeader fetches a partition that does not
// exist beside one that does: the first fails and is retried, without
// holding up the second, which receives every record.
func TestFetchMuxPartitionWithoutLeader(t *testing.T) {
	broker := kafkatest.Start(t, 1, "t")
	const n = 200
	produce(t, broker.Brokers, "t", 0, 0, n/2, 50)
	h := startMux(t, broker.Brokers, defaultFetch, 256<<20)
	missing := h.mux.Add("t", 7, 0, new(atomic.Int64), nil)
	f := h.mux.Add("t", 0, 0, new(atomic.Int64), nil)
	h.receive(t, f, 0, n/2)
	produce(t, broker.Brokers, "t", 0, n/2, n, 50)
	h.receive(t, f, n/2, n)
	if got := h.take(missing); len(got) > 0 {
		t.Errorf("the missing partition received %v", got)
	}
	if logs := h.log.String(); !strings.Contains(logs, "fetch failed; retrying") || !strings.Contains(logs, "partition=7") {
		t.Error("the failed fetch of the missing partition was not logged")
	}
}

// TestFetchMuxQuietPartitionsDoNotHoldUpBusyOnes fetches one busy
// partition among many quiet ones, on two brokers, with a long
// fetch.max_wait: the quiet partitions' requests wait at their leaders,
// and the busy partition must not wait behind them. It needs a fetch per
// batch (fetches of at most 64 KiB, batches of 75 KB), twenty in all.
// max_wait is far longer than receive's guard: a fetch queued behind a
// waiting one would wait all of it, so the busy partition gets its records
// at all only if its fetches never queue behind the quiet ones'.
func TestFetchMuxQuietPartitionsDoNotHoldUpBusyOnes(t *testing.T) {
	const partitions, batches, perBatch, size = 12, 20, 25, 3000
	const maxWait = 30 * time.Minute
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.NumBrokers(2), kfake.Ports(0, 0)}, partitions, "t")
	for b := range batches {
		produce(t, broker.Brokers, "t", 0, b*perBatch, (b+1)*perBatch, size)
	}
	h := startMux(t, broker.Brokers, config.Fetch{MinBytes: 1, MaxBytes: 64 << 10, MaxWait: maxWait}, 256<<20)
	fs := make([]*Fetcher, partitions)
	for p := partitions - 1; p >= 0; p-- { // the quiet ones first
		fs[p] = h.mux.Add("t", int32(p), 0, new(atomic.Int64), nil)
	}
	h.receive(t, fs[0], 0, batches*perBatch)
}
