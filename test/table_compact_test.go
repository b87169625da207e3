package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/table"
)

// TestTableCompact lands a topic of 12 partitions in a table as many small
// files, then runs
// `pqsink compact` on it: first --dry-run (which prints the plan and
// changes nothing), then for real while a sink goes on appending to the
// same table. The table holds every record exactly once before, during and
// after (iceberg-go reads it), in fewer files; the replace snapshot carries
// the exactly-once state, so the sink started again after it appends only
// what is new; each rewritten file holds its rows in (partition, offset)
// order, lists its Kafka ranges in its footer, and reads back equal with
// DuckDB.
func TestTableCompact(t *testing.T) {
	const partitions, n = 12, 6000
	env := newTableEnv(t, "compacted")
	broker := kafkatest.Start(t, partitions, env.topic, "again")
	text := env.config(t, broker.Brokers, "cmp", "1s", 100) // a file every 100 records
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	before := env.files(t)
	if len(before) < 20 {
		t.Fatalf("the sink wrote %d files; the test needs many small ones", len(before))
	}
	stateBefore := env.load(t).CurrentSnapshot().Summary.Properties["pqsink.state"]
	cfgPath := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	compactCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(pqsinkBinary(t), append([]string{"compact", "--config", cfgPath, "--quiet"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pqsink compact %v: %v\n%s", args, err, out)
		}
		return string(out)
	}

	// The plan alone.
	snapBefore := env.load(t).CurrentSnapshot().SnapshotID
	plan := compactCmd("--table", "kafka."+env.topic, "--older-than", "0s", "--min-input-files", "2", "--target-file-size", "1MiB", "--dry-run")
	if !strings.Contains(plan, fmt.Sprintf("kafka.%s: would rewrite %d of %d data files", env.topic, len(before), len(before))) {
		t.Errorf("dry run printed:\n%s", plan)
	}
	if env.load(t).CurrentSnapshot().SnapshotID != snapBefore {
		t.Errorf("the dry run changed the table")
	}

	// For real, while a sink appends more records to the table.
	produceEvents(t, broker.Brokers, env.topic, n, n)
	sink, stop := startSink(t, text)
	out := compactCmd("--older-than", "0s", "--min-input-files", "2", "--target-file-size", "1MiB")
	if !strings.Contains(out, "rewrote") {
		t.Errorf("compact printed:\n%s", out)
	}
	env.waitRows(t, 2*n, 2*time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.TableCommitErrors != 0 {
		t.Errorf("%d table commits of the sink failed beside the compaction", st.TableCommitErrors)
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))

	// The rewritten files: fewer, ordered, with their ranges, readable.
	tbl := env.load(t)
	var compacted []string
	var replace bool
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Operation == "replace" {
			replace = true
			if got := s.Summary.Properties["pqsink.state"]; got == "" {
				t.Errorf("the replace snapshot %d carries no pqsink.state", s.SnapshotID)
			}
		}
	}
	if !replace {
		var ops []string
		for _, s := range tbl.Metadata().Snapshots() {
			if s.Summary != nil {
				ops = append(ops, string(s.Summary.Operation))
			}
		}
		t.Fatalf("no replace snapshot in the table's history: %v\n%s", ops, out)
	}
	dir := strings.TrimPrefix(env.warehouse, "file://")
	matches, _ := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "compacted-*.parquet"))
	compacted = append(compacted, matches...)
	if len(compacted) == 0 || len(compacted) >= len(before)/4 {
		t.Fatalf("%d compacted files for %d inputs", len(compacted), len(before))
	}
	db := duckdb.Start(t)
	for _, path := range compacted {
		checkCompactedFile(t, db, path)
	}
	if stateBefore == "" {
		t.Errorf("the table had no state before the compaction")
	}

	// A second run rewrites the sink's newest files, with the first run's
	// compacted files where they are small, and the table stays exact,
	// its data files cut at least five times.
	compactCmd("--older-than", "0s", "--min-input-files", "2", "--target-file-size", "1MiB")
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	live := env.liveFiles(t)
	t.Logf("data files: %d before the compactions (first %d records), %d after (all %d)", len(before), n, live, 2*n)
	if live*5 > len(before) {
		t.Errorf("the table has %d data files after the compactions, from %d small ones: not cut five-fold", live, len(before))
	}

	// Replay from the compacted table reproduces the topic: keys, headers
	// and timestamps byte for byte, values as the same JSON (typed columns
	// keep numbers, not their spelling: 8.49e-05 comes back 0.0000849).
	replayed, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgPath, "--from", "iceberg:kafka."+env.topic, "--topic", "again").CombinedOutput()
	if err != nil {
		t.Fatalf("replay from the compacted table: %v\n%s", err, replayed)
	}
	want, got := byPartition(truth), byPartition(readTopic(t, broker.Brokers, "again", partitions))
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Errorf("partition %d: %d records replayed, want %d", p, len(gs), len(ws))
			continue
		}
		for i, w := range ws {
			g := gs[i]
			same, err := testutil.JSONEqual(g.Value, w.Value)
			if err != nil || !same || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) || g.TimeMs != w.TimeMs || !reflect.DeepEqual(g.Headers, w.Headers) {
				t.Fatalf("partition %d, record %d: replayed key %q time %d headers %v value %s, want key %q time %d headers %v value %s (%v)",
					p, i, g.Key, g.TimeMs, g.Headers, g.Value, w.Key, w.TimeMs, w.Headers, w.Value, err)
			}
		}
	}
}

// liveFiles counts the data files of the table's current snapshot.
func (e *tableEnv) liveFiles(t *testing.T) int {
	t.Helper()
	tasks, err := e.load(t).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// checkCompactedFile reads a rewritten file with pqsink's reader (its
// footer's ranges, its rows in partition and offset order) and with DuckDB
// (the same row count and offsets).
func checkCompactedFile(t *testing.T, db *duckdb.DB, path string) {
	t.Helper()
	r := openParquet(t, path)
	kv := map[string]string{}
	for _, e := range r.Metadata().KeyValueMetadata {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	if kv["pqsink.kafka.ranges"] == "" && kv["pqsink.kafka.first_offset"] == "" {
		t.Errorf("%s: no Kafka range in the footer: %v", path, kv)
	}
	rows, err := r.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var lastPart int32 = -1
	var lastOff int64 = -1
	var n int64
	for {
		v, err := rows.Next()
		if err != nil {
			break
		}
		env, _ := v.Field("_kafka")
		p, _ := env.Field("partition")
		o, _ := env.Field("offset")
		part, off := p.Int32(), o.Int64()
		if part < lastPart || part == lastPart && off <= lastOff {
			t.Fatalf("%s: row %d is %d/%d after %d/%d", path, n, part, off, lastPart, lastOff)
		}
		lastPart, lastOff = part, off
		n++
	}
	if n != r.NumRows() || n == 0 {
		t.Errorf("%s: read %d rows of %d", path, n, r.NumRows())
	}
	res := db.Query(t, fmt.Sprintf("SELECT (count(*) || '/' || count(DISTINCT (_kafka.partition, _kafka.offset))) AS c FROM read_parquet(%s)", duckdb.Quote(path)))
	if got, want := fmt.Sprint(res.Value(0, "c")), fmt.Sprintf("%d/%d", n, n); got != want {
		t.Errorf("%s: DuckDB counts %s rows/distinct offsets, want %s", path, got, want)
	}
}

// TestCompactKilled kills `pqsink compact` (SIGKILL) after it uploaded its
// files and before its table commit, which a held write lock on the
// SQLite catalog makes wait: the table is unchanged, exact, and orphan
// removal then deletes the files the compaction left, and nothing else.
func TestCompactKilled(t *testing.T) {
	const partitions, n = 3, 3000
	ctx := context.Background()
	env := newTableEnv(t, "killedcompact")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "kc", "1s", 100)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	before := env.load(t).CurrentSnapshot().SnapshotID
	cfgPath := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	// Hold the catalog's write lock: the compaction reads the table,
	// merges and uploads, then waits at its commit.
	db, _ := env.openCatalog(t)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pqsinkBinary(t), "compact", "--config", cfgPath, "--quiet", "--older-than", "0s", "--min-input-files", "2", "--target-file-size", "1MiB")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), "kafka", env.topic, "data")
	deadline := time.Now().Add(time.Minute)
	var left []string
	for len(left) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		left, _ = filepath.Glob(filepath.Join(dir, "*", "compacted-*.parquet"))
	}
	time.Sleep(200 * time.Millisecond) // at its commit, waiting for the lock
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if len(left) == 0 {
		t.Fatal("the compaction uploaded no file within a minute")
	}
	if after := env.load(t).CurrentSnapshot().SnapshotID; after != before {
		t.Fatalf("the killed compaction changed the table (snapshot %d, was %d)", after, before)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)

	// Orphan removal (with no age, as if long after) deletes exactly what
	// the compaction left; the table still reads the same.
	h, store := env.handle(t, text)
	res, err := h.RemoveOrphans(ctx, store, table.OrphanOptions{OlderThan: 0})
	if err != nil {
		t.Fatal(err)
	}
	var dataOrphans []string
	for _, k := range res.Orphans {
		if strings.Contains(k, "/data/") {
			dataOrphans = append(dataOrphans, filepath.Base(k))
		}
	}
	for _, k := range dataOrphans {
		if !strings.HasPrefix(k, "compacted-") {
			t.Errorf("orphan removal deleted %s, which the compaction did not write", k)
		}
	}
	if len(dataOrphans) != len(left) {
		t.Errorf("orphan removal deleted the data files %v; the compaction left %d", dataOrphans, len(left))
	}
	if still, _ := filepath.Glob(filepath.Join(dir, "*", "compacted-*.parquet")); len(still) != 0 {
		t.Errorf("files of the killed compaction are still there: %v", still)
	}
	env.check(t, truth)
}

// handle opens the table of e with the sink's configuration text, and the
// warehouse's store, for the test's life.
func (e *tableEnv) handle(t *testing.T, text string) (*table.Handle, objstore.Store) {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	h, err := cat.Existing(ctx, []string{"kafka", e.topic})
	if err != nil {
		t.Fatal(err)
	}
	store, err := objstore.Open(ctx, e.warehouse)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return h, store
}
