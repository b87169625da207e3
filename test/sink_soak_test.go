package test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// The group settings of the soak, and the bound within which a partition
// with records to consume must see its committed offset move after the
// last fault: a dead member is noticed within the session timeout, the
// rebalance that follows takes at most the rebalance timeout, and the
// margin covers the new owner's start, a rotation and a commit, a member
// that comes back from SIGSTOP and rejoins, and a machine shared with
// other work (waits of 1.6 to 4.7 s were usual, 13 s the longest seen
// with two soaks at once on two busy cores).
const (
	soakSession   = time.Second
	soakRebalance = 3 * time.Second
	soakMargin    = 16 * time.Second
	soakBound     = soakSession + soakRebalance + soakMargin
)

// TestSinkSoak runs three members of one group for two minutes
// while records arrive, and hits them with SIGKILL, SIGSTOP then SIGCONT,
// and SIGTERM at random (the seed is logged; PQSINK_SOAK_SEED replays its
// choices). Faults come in bursts, and a quiet spell longer than the bound
// follows each burst, so a partition left without an owner is seen
// instead of being rescued by the next rebalance. Throughout, every
// partition with records to consume must have its committed offset move
// within soakBound of the later of its last move and the last fault; at
// the end every record is in the archive exactly once.
func TestSinkSoak(t *testing.T) {
	const (
		partitions = 4
		members    = 3
		soakFor    = 2 * time.Minute
		perChunk   = 120
		chunkEvery = 300 * time.Millisecond
	)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PQSINK_SOAK_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PQSINK_SOAK_SEED: %v", err)
		}
	}
	t.Logf("seed %d (PQSINK_SOAK_SEED=%d replays the same choice of faults)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 2))

	topic := "soak"
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	dir := t.TempDir()
	cfg := sinkConfig{
		brokers: broker.Brokers, group: "soak", topic: topic, storeURL: "file://" + dir,
		format: "json", envelope: true, records: 3000, interval: "500ms",
	}
	text := cfg.yaml(t)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: "+soakSession.String())
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text = replaceLine(text, "  rebalance_timeout: 10s", "  rebalance_timeout: "+soakRebalance.String())

	// Records arrive throughout, in small chunks.
	var produced int
	stopProducing := make(chan struct{})
	var producing sync.WaitGroup
	producing.Add(1)
	go func() {
		defer producing.Done()
		for {
			select {
			case <-stopProducing:
				return
			case <-time.After(chunkEvery):
			}
			produceEvents(t, broker.Brokers, topic, produced, perChunk)
			produced += perChunk
		}
	}()
	finishProducing := sync.OnceFunc(func() { close(stopProducing); producing.Wait() })
	defer finishProducing()

	// The progress watch: committed offsets against the ends of the
	// partitions, four times a second.
	var faultMu sync.Mutex
	lastFault := time.Now()
	fault := func() {
		faultMu.Lock()
		lastFault = time.Now()
		faultMu.Unlock()
	}
	watch := newProgressWatch(t, broker.Brokers, "soak", topic, partitions)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		watch.run(watchCtx, func() time.Time {
			faultMu.Lock()
			defer faultMu.Unlock()
			return lastFault
		})
	}()
	defer func() { stopWatch(); <-watching }()

	// The members, each restarted after a kill or a SIGTERM.
	procs := make([]*sinkProcess, members)
	started := 0
	start := func(i int) {
		procs[i] = startSinkProcess(t, fmt.Sprintf("sink-%d-%d", i, started), text)
		started++
	}
	for i := range procs {
		start(i)
	}
	// A stall ends the test at once, with the group's state at the time.
	failOnStall := func() {
		t.Helper()
		if _, _, stalls := watch.result(); len(stalls) > 0 {
			for _, s := range stalls {
				t.Errorf("stall: %s", s)
			}
			t.FailNow()
		}
	}
	counts := map[string]int{}
	begin := time.Now()
	for time.Since(begin) < soakFor {
		// A burst of one to four faults, then a quiet spell. Two times
		// in three, a member started during the burst is killed again
		// while it joins, as a crash-looping process is; it
		// stays down during the quiet spell, which a new member joining
		// would otherwise cut short with a rebalance.
		young, down := -1, -1
		var before *kfake.GroupInfo // the group when the young member started
		for range 1 + rng.IntN(4) {
			if young >= 0 && rng.IntN(3) > 0 {
				// Killed with its join parked: once the group, while
				// rebalancing, counts a member it did not have before.
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if g := broker.Kfake().GroupInfo("soak"); g != nil && g.State == "PreparingRebalance" && newMember(g, before) {
						break
					}
				}
				procs[young].kill(t)
				counts["SIGKILL"]++
				counts["joining"]++
				fault()
				down = young
				break
			}
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond)
			i := rng.IntN(members)
			p := procs[i]
			young = -1
			switch k := rng.IntN(10); {
			case k < 5:
				p.kill(t)
				counts["SIGKILL"]++
				fault()
				time.Sleep(time.Duration(rng.IntN(800)) * time.Millisecond)
				before = broker.Kfake().GroupInfo("soak")
				start(i)
				young = i
			case k < 8:
				p.cmd.Process.Signal(syscall.SIGSTOP)
				counts["SIGSTOP"]++
				fault()
				time.Sleep(time.Duration(200+rng.IntN(3800)) * time.Millisecond)
				p.cmd.Process.Signal(syscall.SIGCONT)
			default:
				p.terminate(t, 40*time.Second)
				counts["SIGTERM"]++
				fault()
				before = broker.Kfake().GroupInfo("soak")
				start(i)
				young = i
			}
			fault()
			time.Sleep(time.Duration(100+rng.IntN(900)) * time.Millisecond)
		}
		time.Sleep(soakBound + time.Duration(rng.IntN(4000))*time.Millisecond)
		failOnStall()
		if down >= 0 {
			start(down)
			fault()
		}
	}
	finishProducing()
	t.Logf("%v of faults: %d SIGKILL (%d while joining), %d SIGSTOP+SIGCONT, %d SIGTERM; %d processes; %d records; the harness expired %d members kfake kept",
		time.Since(begin).Round(time.Second), counts["SIGKILL"], counts["joining"], counts["SIGSTOP"], counts["SIGTERM"], started, produced, broker.ExpiredSessions())

	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != produced {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), produced)
	}
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for deadline := time.Now().Add(2 * time.Minute); landedCount(t, store) < int64(produced); time.Sleep(200 * time.Millisecond) {
		failOnStall()
		if time.Now().After(deadline) {
			t.Fatalf("after 2m the store holds %d records, want %d", landedCount(t, store), produced)
		}
	}
	stopWatch()
	<-watching
	failOnStall()
	longest, at, _ := watch.result()
	t.Logf("longest wait of a partition with records to consume, from its last move or the last fault: %v (bound %v) %s", longest.Round(time.Millisecond), soakBound, at)
	for _, p := range procs {
		p.terminate(t, 40*time.Second)
	}

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	rows := readWithDuckDB(t, db, files, "json", true)
	checkExactlyOnce(t, topic, truth, rows, "json", true)
	t.Logf("%d files", len(files))
}

// newMember reports whether g has a member that before did not have.
func newMember(g, before *kfake.GroupInfo) bool {
	had := map[string]bool{}
	if before != nil {
		for _, m := range before.Members {
			had[m.MemberID] = true
		}
	}
	for _, m := range g.Members {
		if !had[m.MemberID] {
			return true
		}
	}
	return false
}

// progressWatch follows a group's committed offsets against the ends of
// a topic's partitions.
type progressWatch struct {
	client     *kafka.Client
	group      string
	topic      string
	partitions int

	mu        sync.Mutex
	longest   time.Duration
	longestAt string // the partition and the group at the longest wait, when over half the bound
	stalls    []string
}

func newProgressWatch(t testing.TB, brokers []string, group, topic string, partitions int) *progressWatch {
	return &progressWatch{client: &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second, Transport: testTransport(t)}, group: group, topic: topic, partitions: partitions}
}

// run polls until ctx ends. A partition waits from the later of the last
// move of its committed offset and lastFault(), while its committed
// offset is behind its end; a wait beyond soakBound is a stall, reported
// once per episode with the group's assignment at that moment.
func (w *progressWatch) run(ctx context.Context, lastFault func() time.Time) {
	committed := make([]int64, w.partitions)
	moved := make([]time.Time, w.partitions)
	reported := make([]bool, w.partitions)
	now := time.Now()
	for i := range moved {
		committed[i], moved[i] = -2, now
	}
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		}
		ends, offs, err := w.offsets(ctx)
		if err != nil {
			continue // the broker is busy; the next poll tells
		}
		now, fault := time.Now(), lastFault()
		for i := range w.partitions {
			if offs[i] != committed[i] || offs[i] >= ends[i] {
				committed[i], moved[i], reported[i] = offs[i], now, false
				continue
			}
			from := moved[i]
			if fault.After(from) {
				from = fault
			}
			wait := now.Sub(from)
			w.mu.Lock()
			if wait > w.longest {
				w.longest = wait
				if wait > soakBound/2 {
					w.longestAt = fmt.Sprintf("%s[%d] committed %d of %d; group: %s", w.topic, i, offs[i], ends[i], w.describe(ctx))
				}
			}
			if wait > soakBound && !reported[i] {
				reported[i] = true
				w.stalls = append(w.stalls, fmt.Sprintf("%s[%d] committed %d of %d has not moved for %v since its last move or fault; group: %s",
					w.topic, i, offs[i], ends[i], wait.Round(time.Millisecond), w.describe(ctx)))
			}
			w.mu.Unlock()
		}
	}
}

// offsets returns the end and the committed offset of every partition.
func (w *progressWatch) offsets(ctx context.Context) (ends, committed []int64, err error) {
	var reqs []kafka.OffsetRequest
	ids := make([]int, w.partitions)
	for i := range w.partitions {
		reqs = append(reqs, kafka.LastOffsetOf(i))
		ids[i] = i
	}
	lo, err := w.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{w.topic: reqs}})
	if err != nil {
		return nil, nil, err
	}
	of, err := w.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: w.group, Topics: map[string][]int{w.topic: ids}})
	if err != nil {
		return nil, nil, err
	}
	if of.Error != nil {
		return nil, nil, of.Error
	}
	ends, committed = make([]int64, w.partitions), make([]int64, w.partitions)
	for _, p := range lo.Topics[w.topic] {
		if p.Error != nil {
			return nil, nil, p.Error
		}
		ends[p.Partition] = p.LastOffset
	}
	for _, p := range of.Topics[w.topic] {
		if p.Error != nil {
			return nil, nil, p.Error
		}
		committed[p.Partition] = p.CommittedOffset
	}
	return ends, committed, nil
}

// describe tells the group's state and who holds what.
func (w *progressWatch) describe(ctx context.Context) string {
	resp, err := w.client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{w.group}})
	if err != nil || len(resp.Groups) == 0 {
		return fmt.Sprintf("not described: %v", err)
	}
	g := resp.Groups[0]
	s := g.GroupState
	for _, m := range g.Members {
		var held []int
		for _, a := range m.MemberAssignments.Topics {
			held = append(held, a.Partitions...)
		}
		s += fmt.Sprintf(" %s=%v", m.MemberID, held)
	}
	return s
}

// result returns the longest wait seen, where it was when it was over
// half the bound, and the stalls.
func (w *progressWatch) result() (time.Duration, string, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.longest, w.longestAt, w.stalls
}
