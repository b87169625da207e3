package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkFencedMemberAcrossSpecChange: two `pqsink run` members
// write one table whose spec they follow (day(_kafka.timestamp)). One of
// them, the zombie, commits to the table only every 30 s: it uploads its
// partitions' records by that spec, and is frozen (SIGSTOP) with those
// files not committed. Another engine has meanwhile added bucket[4](id)
// to the spec; the other member noticed it at its own commits and moved
// its partitions to it. The zombie's session expires, the survivor takes
// its partitions from the table's state, which does not hold the zombie's
// files, and writes their records by the new spec. Then the zombie
// resumes (SIGCONT) and, fenced off without knowing it, makes its late
// commit of the old spec's files. What refuses it depends on what the
// table holds when it comes:
//
//   - paths: the survivor keeps files open (no rotation by age), so the
//     table's state holds, beyond each partition's committed offset,
//     paths of the new spec: the commit is refused as a spec conflict
//     (table.SpecConflictError), which the zombie logs, and it reads the
//     partitions again from the table's state.
//   - committed: the survivor's files rotate, and the table's committed
//     offset of each partition passes every record the zombie's files
//     hold: the commit drops them all as already in the table.
//   - first: the survivor's files of the zombie's partitions stay open
//     (fewer records than a file takes), so the table holds nothing of
//     them beyond the zombie's last commit: the late commit is taken,
//     files of the old spec and a committed offset past them, and the
//     zombie is killed. The survivor's files of the new spec, which
//     begin below that offset and end beyond it once more records come,
//     are refused as a conflict of their partition (they hold records
//     the table has), which the survivor reads again from the table's
//     state, and its commits go on. Before table.specConflicts refused
//     them, every commit of the survivor failed from then on (ErrOverlap).
//
// In the first two cases none of the zombie's files is in the table, the
// Kafka commits of its partitions stay the table's (its late commit moves
// neither back), and the zombie goes on as a member; in the last one all
// of them are. At the end the table holds every record once (iceberg-go,
// and DuckDB over the files of its snapshot), each file in its spec's
// folders, with a state whose committed offsets are the ends of the
// partitions, as Kafka's are.
func TestTableSinkFencedMemberAcrossSpecChange(t *testing.T) {
	for _, c := range []fenceCase{
		{name: "paths", survivor: "  interval: 0",
			protected: regexp.MustCompile(`msg="the table holds, beyond the partition's committed offset, files of another partition spec than this sink's[^"]*"`)},
		{name: "committed", survivor: "  interval: 500ms",
			protected: regexp.MustCompile(`msg="table commit" .* appended=0 already_in_table=[1-9][0-9]*`)},
		{name: "first", survivor: "  interval: 0", zombieFirst: true,
			protected: regexp.MustCompile(`msg="table commit" .* appended=[1-9][0-9]* already_in_table=0`)},
	} {
		t.Run(c.name, func(t *testing.T) { fencedAcrossSpecChange(t, "fence"+c.name, c) })
	}
}

// fenceCase is a case of TestTableSinkFencedMemberAcrossSpecChange.
type fenceCase struct {
	name string
	// survivor is the survivor's rotation by age.
	survivor string
	// protected is what the zombie logs of its late commit.
	protected *regexp.Regexp
	// zombieFirst: the survivor commits nothing of the zombie's
	// partitions before the late commit, which the table takes; the
	// survivor's files of them, which hold records the late commit
	// brought, come after it.
	zombieFirst bool
}

func fencedAcrossSpecChange(t *testing.T, topic string, c fenceCase) {
	const partitions, n1, n2 = 4, 2000, 1000
	env := newTableEnv(t, topic)
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, env.topic)
	withSpec := env.config(t, broker.Brokers, topic, "1s", 50)
	withSpec = replaceLine(withSpec, "  session_timeout: 6s", "  session_timeout: 2s")
	withSpec = replaceLine(withSpec, "  heartbeat_interval: 500ms", "  heartbeat_interval: 300ms")
	cfg, err := config.Parse([]byte(withSpec), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	text := replaceLine(withSpec, `  partition_by: ["day(_kafka.timestamp)"]`, "")
	oldSpec := env.load(t).Spec()

	survivor := replaceLine(text, "  interval: 500ms", c.survivor)
	if c.zombieFirst {
		// Files of 100 records: the survivor's files of the zombie's
		// partitions stay open until more records come.
		survivor = replaceLine(survivor, "  records: 50", "  records: 100")
	}
	a := startSinkProcess(t, "sink-survivor", survivor)
	a.waitLog(t, "generation started", time.Minute)
	const zombieCommits = 20 * time.Second
	z := startSinkProcess(t, "sink-zombie", replaceLine(text, "  commit_interval: 1s", "  commit_interval: "+zombieCommits.String()))
	// Its commits' clock starts before it joins the group: its first
	// commit is due zombieCommits after it logs that, at the latest.
	z.waitLog(t, "joining consumer group", time.Minute)
	zombieCommitDue := time.Now().Add(zombieCommits)
	// The zombie's partitions: those of its first generation that gives it
	// any (the survivor hands them over, cooperative).
	var zombieParts []int
	for deadline := time.Now().Add(time.Minute); zombieParts == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the zombie was given no partition within a minute")
		}
		zombieParts = assignedTo(z.log.String(), env.topic)
	}

	tbl := env.load(t)
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	newSpec := tbl.Spec()
	if c.zombieFirst {
		// 400 records to each of the survivor's partitions (files of 100:
		// it commits them, and notices the new spec), 150 to each of the
		// zombie's (files of 50, all uploaded).
		for p := range partitions {
			if slices.Contains(zombieParts, p) {
				produceEventsTo(t, broker.Brokers, env.topic, p, 0, 150)
			} else {
				produceEventsTo(t, broker.Brokers, env.topic, p, 0, 400)
			}
		}
	} else {
		produceEvents(t, broker.Brokers, env.topic, 0, n1)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	inZombie := 0
	ends := map[int]int64{}
	for _, p := range truth {
		ends[p.Partition] = max(ends[p.Partition], p.Offset+1)
		if slices.Contains(zombieParts, p.Partition) {
			inZombie++
		}
	}
	// The zombie uploads every record of its partitions by the old spec,
	// and commits none; the survivor notices the new spec.
	for deadline := time.Now().Add(time.Minute); uploadedRecords(z.log.String()) < inZombie; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the zombie uploaded %d records of its partitions %v within a minute, want %d", uploadedRecords(z.log.String()), zombieParts, inZombie)
		}
	}
	a.waitLog(t, "its partition spec changed", time.Minute)
	z.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := true
	defer func() {
		if stopped {
			z.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	zlog := z.log.String()
	if strings.Contains(zlog, `msg="table commit"`) || strings.Contains(zlog, "its partition spec changed") {
		t.Fatalf("the zombie committed to the table (or noticed the new spec) before it was frozen, %v before its first commit was due; the test needs it not to", time.Until(zombieCommitDue))
	}
	zombieKeys := uploadedKeys(zlog)
	for _, k := range zombieKeys {
		if strings.Contains(k, "id_bucket=") {
			t.Fatalf("the zombie uploaded %s by the new spec; the test needs it to write by the old one", k)
		}
	}

	// The survivor takes every partition and writes the zombie's by the
	// new spec, from the table's state, which holds none of the zombie's
	// files.
	mark := len(a.log.String())
	all := regexp.MustCompile(`msg="generation started" .* partitions=` + strconv.Itoa(partitions) + ` `)
	for deadline := time.Now().Add(time.Minute); !all.MatchString(a.log.String()[mark:]); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the survivor did not take every partition within a minute of the zombie's freeze")
		}
	}
	// Wait for the table's state the case is about: each of the zombie's
	// partitions with paths of the new spec beyond its committed offset
	// (the survivor's files open), or committed to its end; or, when the
	// zombie commits first, nothing of them committed by the survivor
	// (its files of them hold fewer than 100 records of a path).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		state := tableState(t, env.load(t))
		ready := true
		for _, p := range zombieParts {
			s := state[p]
			switch {
			case c.zombieFirst:
				ready = ready && s.Committed == 0 && len(s.Paths) == 0
			case c.survivor == "  interval: 0":
				ready = ready && s.SpecID != nil && *s.SpecID == newSpec.ID() && s.beyond() && s.Committed < ends[p]
			default:
				ready = ready && s.Committed == ends[p] && !s.beyond()
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table's state of the zombie's partitions %v is %+v within a minute; want them held by the survivor's new spec", zombieParts, state)
		}
	}
	before := tableState(t, env.load(t))

	// The zombie resumes once its first commit is due: it commits as soon
	// as it runs again, before its next heartbeat tells it that it is out
	// of the group (and before the rebalance that follows could give it
	// its partitions back, which the survivor would hand over committed).
	// Its commit clock is in another process: this is the one wait on
	// time alone.
	time.Sleep(time.Until(zombieCommitDue))
	z.cmd.Process.Signal(syscall.SIGCONT)
	stopped = false
	for deadline := time.Now().Add(time.Minute); !c.protected.MatchString(z.log.String()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the zombie logged no line matching %s within a minute of its resuming", c.protected)
		}
	}
	t.Logf("the zombie's late commit: %s", c.protected.FindString(z.log.String()))
	if c.zombieFirst {
		// Out of the way: the survivor keeps the partitions.
		z.kill(t)
	}
	if strings.Contains(z.log.String(), `msg="table commit failed`) {
		t.Error("the zombie's late commit failed instead of being refused or dropped")
	}
	// Neither the table nor Kafka moved back for the zombie's commit (the
	// survivor may commit since, handing partitions over to the zombie
	// once it joins again: they only move on).
	committedKafka := kafkaCommitted(t, broker.Brokers, topic, env.topic, partitions)
	after := tableState(t, env.load(t))
	for _, p := range zombieParts {
		if after[p].Committed < before[p].Committed {
			t.Errorf("partition %d: the table's committed offset moved back from %d to %d with the zombie's late commit", p, before[p].Committed, after[p].Committed)
		}
		if k := committedKafka[p]; k > after[p].Committed || (k < before[p].Committed && !c.zombieFirst) {
			t.Errorf("partition %d: Kafka's committed offset is %d after the zombie's late commit, the table's %d before it and %d after", p, k, before[p].Committed, after[p].Committed)
		}
		if c.zombieFirst && (after[p].Committed != ends[p] || after[p].beyond()) {
			t.Errorf("partition %d: the table's state after the zombie's late commit is %+v, want every record of its files (committed %d)", p, after[p], ends[p])
		}
	}

	if c.zombieFirst {
		// More records to the zombie's partitions: the survivor's files of
		// them, of the new spec, begin below what the late commit put in
		// the table and end beyond it. Its commits go on: the table's
		// state of each partition moves past the late commit's.
		for _, p := range zombieParts {
			produceEventsTo(t, broker.Brokers, env.topic, p, 150, 400)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			state := tableState(t, env.load(t))
			moved := true
			for _, p := range zombieParts {
				s := state[p]
				moved = moved && (s.Committed > ends[p] || s.beyond())
			}
			if moved {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the survivor committed nothing more of the zombie's partitions %v within a minute of the late commit: the table's state is %+v", zombieParts, state)
			}
		}
		if strings.Contains(a.log.String(), `msg="table commit failed`) {
			t.Error("a commit of the survivor failed after the zombie's late commit")
		}
		// What kept the survivor's files out: the table's committed offset,
		// which they straddle, refused as a conflict of the partition.
		if !strings.Contains(a.log.String(), "the table holds records of the partition that this sink's files hold too") {
			t.Error("the survivor did not log that its files straddled what the late commit put in the table")
		}
	} else {
		z.waitLog(t, "this member is no longer in the group", 30*time.Second)
		// The group goes on: the zombie joins again beside the survivor.
		produceEvents(t, broker.Brokers, env.topic, n1, n2)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			zlog := z.log.String()
			out := strings.Index(zlog, "this member is no longer in the group")
			if strings.Contains(zlog[out:], `msg="generation started"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the zombie did not join the group again within a minute")
			}
		}
		if c.survivor != "  interval: 0" {
			// Every file rotates: the table takes every record while both
			// members run.
			env.waitRows(t, n1+n2, 2*time.Minute)
		}
		z.terminate(t, 30*time.Second)
	}
	a.terminate(t, 30*time.Second)
	// A last member takes what the two left (the survivor's files open
	// until it stopped are committed by then; records it had not read are
	// read now).
	truth = readTopic(t, broker.Brokers, env.topic, partitions)
	last := startSinkProcess(t, "sink-last", text)
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, len(truth), 2*time.Minute)
	last.terminate(t, 30*time.Second)

	env.check(t, truth)
	env.checkKafkaFollows(t, broker.Brokers, topic, partitions)

	// The zombie's files are in the table when its late commit was taken,
	// none of them otherwise; every file lies in its spec's folders;
	// DuckDB over the snapshot's files finds every record once.
	tasks, err := env.load(t).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warehouse := strings.TrimPrefix(env.warehouse, "file://")
	oldFolders := regexp.MustCompile(`^kafka/` + topic + `/data/_kafka_timestamp_day=2026-11-2[34]/[^/]+$`)
	newFolders := regexp.MustCompile(`^kafka/` + topic + `/data/_kafka_timestamp_day=2026-11-2[34]/id_bucket=[0-3]/[^/]+$`)
	var quoted []string
	bySpec := map[int32]int{}
	zombieIn := 0
	for _, task := range tasks {
		f := task.File
		rel := strings.TrimPrefix(strings.TrimPrefix(f.FilePath(), "file://"), warehouse+"/")
		quoted = append(quoted, duckdb.Quote(warehouse+"/"+rel))
		bySpec[f.SpecID()]++
		if slices.Contains(zombieKeys, rel) {
			zombieIn++
		}
		switch f.SpecID() {
		case int32(oldSpec.ID()):
			if !oldFolders.MatchString(rel) {
				t.Errorf("file %s of spec %d is not in its day folder alone", rel, f.SpecID())
			}
		case int32(newSpec.ID()):
			if !newFolders.MatchString(rel) {
				t.Errorf("file %s of spec %d is not in day and bucket folders", rel, f.SpecID())
			}
		default:
			t.Errorf("file %s has spec %d, neither the old one (%d) nor the new (%d)", rel, f.SpecID(), oldSpec.ID(), newSpec.ID())
		}
	}
	t.Logf("files by spec: %v; of the %d files the zombie uploaded before it was frozen, %d are in the table", bySpec, len(zombieKeys), zombieIn)
	if want := map[bool]int{true: len(zombieKeys), false: 0}[c.zombieFirst]; zombieIn != want {
		t.Errorf("the table holds %d of the %d files the zombie uploaded before it was frozen, want %d", zombieIn, len(zombieKeys), want)
	}
	if bySpec[int32(newSpec.ID())] == 0 {
		t.Errorf("files by spec: %v, want files of the new spec %d", bySpec, newSpec.ID())
	}
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o FROM read_parquet([`+strings.Join(quoted, ", ")+`])`)
	seen := map[string]bool{}
	for i := range res.Rows {
		id := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		if _, ok := truth[id]; !ok {
			t.Errorf("the snapshot's files hold %s, which Kafka does not", id)
		} else if seen[id] {
			t.Errorf("%s is in the snapshot's files twice", id)
		}
		seen[id] = true
	}
	if len(seen) != len(truth) {
		t.Errorf("the snapshot's files hold %d distinct records, Kafka %d", len(seen), len(truth))
	}
}

// produceEventsTo writes n reference events to one partition of topic,
// as produceEvents does (the record times, keys and headers of events
// first to first+n).
func produceEventsTo(t *testing.T, brokers []string, topic string, partition, first, n int) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic,
		Balancer:  kafka.BalancerFunc(func(kafka.Message, ...int) int { return partition }),
		BatchSize: 500, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr,
	}
	defer w.Close()
	gen := events.New(uint64(first)+1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	msgs := make([]kafka.Message, 0, n)
	for i := first; i < first+n; i++ {
		msgs = append(msgs, kafka.Message{Value: gen.Append(nil), Time: base.Add(time.Duration(i) * 7 * time.Second), Key: []byte("k" + strconv.Itoa(i))})
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// assignedTo returns the partitions of topic that the last generation
// logged gave, nil when none did.
func assignedTo(log, topic string) []int {
	lines := regexp.MustCompile(`msg="generation started" .*`).FindAllString(log, -1)
	if len(lines) == 0 {
		return nil
	}
	var out []int
	for _, m := range regexp.MustCompile(regexp.QuoteMeta(topic)+`\[(\d+)\]`).FindAllStringSubmatch(lines[len(lines)-1], -1) {
		p, _ := strconv.Atoi(m[1])
		out = append(out, p)
	}
	return out
}

// uploadedRecords sums the records of the files a process logged as
// uploaded.
func uploadedRecords(log string) int {
	n := 0
	for _, m := range regexp.MustCompile(`msg=uploaded .*? records=(\d+)`).FindAllStringSubmatch(log, -1) {
		r, _ := strconv.Atoi(m[1])
		n += r
	}
	return n
}

// uploadedKeys lists the keys of the files a process logged as uploaded.
func uploadedKeys(log string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`msg=uploaded .*? key="?([^" ]+)`).FindAllStringSubmatch(log, -1) {
		out = append(out, m[1])
	}
	return out
}

// partState is one partition's exactly-once state in the table.
type partState struct {
	Committed int64
	Paths     map[string]int64
	SpecID    *int `json:"spec_id"`
}

// beyond says whether s holds a path beyond its committed offset.
func (s partState) beyond() bool {
	for _, o := range s.Paths {
		if o >= s.Committed {
			return true
		}
	}
	return false
}

// tableState reads the state of tbl's current snapshot, by partition.
func tableState(t *testing.T, tbl *itable.Table) map[int]partState {
	t.Helper()
	out := map[int]partState{}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out
	}
	doc, ok := strings.CutPrefix(snap.Summary.Properties["pqsink.state"], archive.CommitInline)
	if !ok {
		return out
	}
	var state struct {
		Partitions []struct {
			Partition int
			partState
		}
	}
	if err := json.Unmarshal([]byte(doc), &state); err != nil {
		t.Fatal(err)
	}
	for _, p := range state.Partitions {
		out[p.Partition] = p.partState
	}
	return out
}

// kafkaCommitted reads group's committed offsets of topic's partitions.
func kafkaCommitted(t *testing.T, brokers []string, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	ids := make([]int, partitions)
	for i := range ids {
		ids[i] = i
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: testTransport(t)}
	resp, err := client.OffsetFetch(context.Background(), &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ids}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}
