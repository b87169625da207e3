package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// The table, not the consumer group, is the authority on which Kafka
// records it holds: these tests run a topic into one table under several
// groups and check that every record is in the table once.

// TestTableSinkRenamedGroup: a group renamed between two runs resumes
// where the table is: it reads only the records produced since, and the
// table holds every record once, each data file listed once.
func TestTableSinkRenamedGroup(t *testing.T) {
	const partitions, n = 3, 600
	env := newTableEnv(t, "renamed")
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, env.config(t, broker.Brokers, "v1", "1s", 100))
	env.waitRows(t, n, 2*time.Minute)
	stop()

	produceEvents(t, broker.Brokers, env.topic, n, n/2)
	sink, stop := startSink(t, env.config(t, broker.Brokers, "v2", "1s", 100))
	env.waitRows(t, n+n/2, 2*time.Minute)
	time.Sleep(2 * time.Second) // a commit more, if a wrong one were coming
	stop()
	if st := sink.Stats().Snapshot(); st.Consumed != n/2 {
		t.Errorf("the renamed group consumed %d records, want the %d produced since the first run", st.Consumed, n/2)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	checkSnapshotFiles(t, env, env.load(t), truth)
}

// TestTableSinkTwoGroups: two groups reading one topic into one table at
// the same time, each from the start, put every record in once: the
// second writer of each file adopts the first's, and a commit leaves out
// the files whose records the table holds, whichever group put them in.
func TestTableSinkTwoGroups(t *testing.T) {
	const partitions, n = 3, 900
	env := newTableEnv(t, "twogroups")
	broker := kafkatest.Start(t, partitions, env.topic)
	var wg sync.WaitGroup
	stops := make([]func(), 2)
	for i, group := range []string{"a", "b"} {
		_, stops[i] = startSink(t, env.config(t, broker.Brokers, group, "1s", 100))
	}
	for i := range 3 {
		wg.Go(func() { produceEvents(t, broker.Brokers, env.topic, i*n/3, n/3) })
	}
	wg.Wait()
	env.waitRows(t, n, 2*time.Minute)
	time.Sleep(3 * time.Second) // both groups commit again
	for _, stop := range stops {
		stop()
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	checkSnapshotFiles(t, env, env.load(t), truth)
}

// TestTableSinkStateLost: another engine deletes a record (copy-on-write)
// and expires every snapshot that carried pqsink's state; a new group
// (Kafka offsets reset) then starts on the table. The table's state is
// rebuilt from its data files: nothing it holds is added again, the
// deleted record does not come back, and what was produced since lands
// once.
func TestTableSinkStateLost(t *testing.T) {
	const partitions, n = 3, 600
	ctx := context.Background()
	env := newTableEnv(t, "statelost")
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, env.config(t, broker.Brokers, "old", "1s", 100))
	env.waitRows(t, n, 2*time.Minute)
	stop()

	deleted := int64(42)
	tx := env.load(t).NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: itable.WriteModeCopyOnWrite}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("_kafka.offset"), deleted), nil); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	if err := tx.ExpireSnapshots(itable.WithRetainLast(1), itable.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("delete and expiry: %v", err)
	}
	tbl := env.load(t)
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the expiry, want 1", n)
	}
	if _, ok := tbl.CurrentSnapshot().Summary.Properties["pqsink.state"]; ok {
		t.Fatal("the other engine's snapshot carries pqsink's state")
	}

	produceEvents(t, broker.Brokers, env.topic, n, n/2)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	want := map[string]produced{}
	for id, p := range truth {
		if p.Offset != deleted {
			want[id] = p
		}
	}
	if len(want) != len(truth)-partitions {
		t.Fatalf("offset %d is in %d partitions, want %d", deleted, len(truth)-len(want), partitions)
	}
	sink, stop := startSink(t, env.config(t, broker.Brokers, "reset", "1s", 100))
	env.waitRows(t, len(want), 2*time.Minute)
	time.Sleep(2 * time.Second)
	stop()
	if st := sink.Stats().Snapshot(); st.TableFilesAppended == 0 {
		t.Errorf("the new group appended no file")
	}
	env.check(t, want)
	if s := env.load(t).CurrentSnapshot(); s.Summary.Properties["pqsink.state"] == "" {
		t.Errorf("the new group's snapshot carries no state")
	}
}

// TestTableListedTwice: a table that lists each data file twice (as an
// older pqsink left it when a second group wrote to it) replays each
// record once, and `pqsink compact` repairs it: afterwards each file is
// listed once and each record is in the table once.
func TestTableListedTwice(t *testing.T) {
	const partitions, n = 3, 600
	ctx := context.Background()
	env := newTableEnv(t, "twice")
	broker := kafkatest.Start(t, partitions, env.topic, "replayed")
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	text := env.config(t, broker.Brokers, "v1", "1s", 100)
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)

	// The doubling: every data file appended again, as that pqsink did.
	tbl := env.load(t)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var files []iceberg.DataFile
	for _, task := range tasks {
		files = append(files, task.File)
	}
	tx := tbl.NewTransaction()
	props := iceberg.Properties{"pqsink.state": tbl.CurrentSnapshot().Summary.Properties["pqsink.state"]}
	if err := tx.AddDataFiles(ctx, files, props, itable.WithoutDuplicateCheck()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := len(env.scan(t)); rows != 2*n {
		t.Fatalf("the doubled table holds %d rows, want %d", rows, 2*n)
	}

	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	compareReplayedBytes(t, "the doubled table", truth, readTopic(t, broker.Brokers, "replayed", partitions))

	for run := range 2 {
		out, err = exec.Command(pqsinkBinary(t), "compact", "--config", cfgFile, "--table", "kafka."+env.topic, "--older-than", "0s", "--quiet").CombinedOutput()
		t.Logf("compact run %d: %s", run, out)
		if err != nil {
			t.Fatalf("compact run %d: %v\n%s", run, err, out)
		}
		if run == 0 && !strings.Contains(string(out), fmt.Sprintf("%d data files listed twice", len(files))) {
			t.Errorf("compact does not say it repaired the %d files listed twice:\n%s", len(files), out)
		}
	}
	tbl = env.load(t)
	env.check(t, truth)
	tasks, err = tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	slices.Sort(paths)
	if len(slices.Compact(paths)) != len(tasks) {
		t.Errorf("after compact the table still lists a file twice: %v", paths)
	}

	// The table goes on: a sink appends to it again.
	produceEvents(t, broker.Brokers, env.topic, n, n/3)
	_, stop = startSink(t, text)
	env.waitRows(t, n+n/3, 2*time.Minute)
	stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}
