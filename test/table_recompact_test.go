package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/table"
)

// liveCompacted returns the table's live data files and, of them, the
// locations of those a compaction wrote.
func liveCompacted(t *testing.T, h *table.Handle) ([]table.LiveFile, map[string]bool) {
	t.Helper()
	live, _, err := h.Live(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	compacted := map[string]bool{}
	for _, f := range live {
		if strings.HasPrefix(path.Base(f.Location), "compacted-") {
			compacted[f.Location] = true
		}
	}
	return live, compacted
}

// TestTableRecompact compacts a table twice with new sink files in
// between: the second run takes the first run's compacted files again
// (each holds a stretch of every partition, which the new files'
// ranges continue) and leaves fewer files than it found. The table holds
// every record exactly once (iceberg-go reads it, DuckDB counts its data
// files' rows and distinct offsets), each compacted file holds its rows in
// (partition, offset) order with its ranges in its footer (pqsink's
// reader, DuckDB), and replay of the table gives each partition's records
// in offset order.
func TestTableRecompact(t *testing.T) {
	const partitions, n = 3, 1500
	ctx := context.Background()
	env := newTableEnv(t, "recompacted")
	broker := kafkatest.Start(t, partitions, env.topic, "again")
	text := env.config(t, broker.Brokers, "rcp", "1s", 100) // a file every 100 records
	produced := 0
	land := func() {
		t.Helper()
		produceEvents(t, broker.Brokers, env.topic, produced, n)
		produced += n
		_, stop := startSink(t, text)
		env.waitRows(t, produced, 2*time.Minute)
		stop()
	}
	land()
	h, store := env.handle(t, text)
	opts := compact.Options{TargetFileSize: 1 << 20, MinInputFiles: 2, OlderThan: 0}
	rep, err := compact.Table(ctx, h, store, env.warehouse, opts)
	if err != nil {
		t.Fatal(err)
	}
	_, first := liveCompacted(t, h)
	if rep.Snapshot == 0 || len(first) == 0 {
		t.Fatalf("the first compaction wrote %d files (snapshot %d)", len(first), rep.Snapshot)
	}

	// New sink files of the same partitions, then the second run.
	land()
	before, _ := liveCompacted(t, h)
	rep, err = compact.Table(ctx, h, store, env.warehouse, opts)
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for _, b := range rep.Bins {
		for _, f := range b.Files {
			if first[f.Location] {
				taken++
			}
		}
	}
	after, second := liveCompacted(t, h)
	if taken != len(first) {
		t.Errorf("the second compaction took %d of the first one's %d files", taken, len(first))
	}
	for loc := range first {
		if second[loc] {
			t.Errorf("%s, of the first compaction, is still live", loc)
		}
	}
	if len(after) >= len(before) || len(after) > len(second)+1 {
		t.Errorf("%d data files before the second compaction, %d after (%d compacted)", len(before), len(after), len(second))
	}
	t.Logf("data files: %d before the second compaction (%d of them the first's), %d after", len(before), len(first), len(after))

	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	db := duckdb.Start(t)
	var paths []string
	for _, f := range after {
		p := strings.TrimPrefix(f.Location, "file://")
		paths = append(paths, duckdb.Quote(p))
		if second[f.Location] {
			checkCompactedFile(t, db, p)
		}
	}
	res := db.Query(t, "SELECT (count(*) || '/' || count(DISTINCT (_kafka.partition, _kafka.offset))) AS c FROM read_parquet(["+strings.Join(paths, ", ")+"])")
	if got, want := fmt.Sprint(res.Value(0, "c")), fmt.Sprintf("%d/%d", produced, produced); got != want {
		t.Errorf("DuckDB counts %s rows/distinct offsets in the live data files, want %s", got, want)
	}

	// Replay of the table: each partition's records in offset order.
	cfgPath := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	replayed, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgPath, "--from", "iceberg:kafka."+env.topic, "--topic", "again").CombinedOutput()
	if err != nil {
		t.Fatalf("replay of the table: %v\n%s", err, replayed)
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
			if err != nil || !same || !bytes.Equal(g.Key, w.Key) || g.TimeMs != w.TimeMs || !reflect.DeepEqual(g.Headers, w.Headers) {
				t.Fatalf("partition %d, record %d (offset %d): replayed key %q time %d value %s, want key %q time %d value %s (%v)",
					p, i, w.Offset, g.Key, g.TimeMs, g.Value, w.Key, w.TimeMs, w.Value, err)
			}
		}
	}
}

// TestTableMaintenanceRecompacts runs a sink with table.maintenance on a
// short schedule while records arrive in two waves: the first wave's
// files are compacted, and a later compaction takes that compacted file
// again with the second wave's files, removing more files than it adds.
// The table holds every record exactly once at the end.
func TestTableMaintenanceRecompacts(t *testing.T) {
	const partitions = 3
	env := newTableEnv(t, "remaintained")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "rmn", "1s", 40) // a file every 40 records
	text = strings.Replace(text, "  format_version: 2\n", "  format_version: 2\n"+
		"  maintenance: {compact_every: 2s, target_file_size: 1MiB, expire_snapshots_older_than: 1h, keep_snapshots: 100, remove_orphans_older_than: 1h}\n", 1)
	if !strings.Contains(text, "maintenance:") {
		t.Fatalf("no maintenance in the config:\n%s", text)
	}
	produced := 0
	produce := func(n int) {
		produceEvents(t, broker.Brokers, env.topic, produced, n)
		produced += n
	}
	produce(600)
	_, stop := startSink(t, text)
	env.waitRows(t, produced, 2*time.Minute)
	h, _ := env.handle(t, text)
	// waitFor polls until done returns true, for at most 3 minutes.
	waitFor := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("after 3 minutes: %s", what)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	var first map[string]bool
	waitFor("no compacted file in the table", func() bool {
		_, first = liveCompacted(t, h)
		return len(first) > 0
	})
	produce(600)
	var gone string
	waitFor("the first compaction's files are still live", func() bool {
		_, now := liveCompacted(t, h)
		for loc := range first {
			if !now[loc] {
				gone = loc
				return true
			}
		}
		return false
	})
	env.waitRows(t, produced, 2*time.Minute)
	stop()

	// The replace snapshot that removed the compacted file removed more
	// files than it added.
	found := false
	for _, s := range env.load(t).Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Operation != "replace" {
			continue
		}
		p := s.Summary.Properties
		deleted, _ := strconv.Atoi(p["deleted-data-files"])
		added, _ := strconv.Atoi(p["added-data-files"])
		t.Logf("replace snapshot %d: %d data files deleted, %d added", s.SnapshotID, deleted, added)
		if deleted <= added {
			t.Errorf("replace snapshot %d deleted %d data files and added %d", s.SnapshotID, deleted, added)
		}
		found = true
	}
	if !found {
		t.Error("no replace snapshot in the table's history")
	}
	t.Logf("%s, of an earlier compaction, was compacted again", path.Base(gone))
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}
