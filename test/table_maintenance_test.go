package test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/connector/metrics"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/table"
)

// maintenanceMetric reads one pqsink_table_maintenance_* sample from a
// member's /metrics, e.g. `runs_total{task="compact"}`; 0 when absent.
func maintenanceMetric(t *testing.T, addr, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	prefix := "pqsink_table_maintenance_" + sample + " "
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// TestTableMaintenance runs two members of a group with table.maintenance
// on a short schedule while records keep arriving: one member holds the
// table's lease and maintains it (its small files compacted into a
// replace snapshot, its manifests merged, old snapshots expired, an old
// orphan removed), the
// other does nothing of it; when the holder leaves, the other takes the
// lease over and maintains in its turn. The table holds every record
// exactly once at the end (iceberg-go reads it).
func TestTableMaintenance(t *testing.T) {
	const partitions = 3
	env := newTableEnv(t, "maintained")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "mnt", "1s", 40) // a file every 40 records
	text = strings.Replace(text, "  format_version: 2\n", "  format_version: 2\n"+
		"  maintenance: {compact_every: 2s, target_file_size: 1MiB, rewrite_manifests_above: 3, expire_snapshots_older_than: 1s, keep_snapshots: 5, remove_orphans_older_than: 65s}\n", 1)
	if !strings.Contains(text, "maintenance:") {
		t.Fatalf("no maintenance in the config:\n%s", text)
	}

	// An upload no commit took, long ago (a member that died, a
	// compaction that gave up).
	dir := strings.TrimPrefix(env.warehouse, "file://")
	orphan := filepath.Join(dir, "kafka", env.topic, "data", "_kafka_timestamp_day=2026-01-01", "maintained+0+00000000000000000000.parquet")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("PAR1 left behind"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}

	produced := 0
	produce := func(n int) {
		produceEvents(t, broker.Brokers, env.topic, produced, n)
		produced += n
	}
	produce(1500)
	type member struct {
		addr string
		stop func()
	}
	var members [2]member
	for i := range members {
		sink, stop := startSink(t, text)
		addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stopMetrics)
		members[i] = member{addr, stop}
	}
	runs := func(m member, task string) float64 {
		return maintenanceMetric(t, m.addr, `runs_total{task="`+task+`"}`)
	}

	// While records arrive: compaction, expiry and the orphan's removal,
	// all by one member.
	var holder, other member
	deadline := time.Now().Add(3 * time.Minute)
	for {
		produce(150)
		time.Sleep(500 * time.Millisecond)
		a, b := maintenanceMetric(t, members[0].addr, "files_rewritten_total"), maintenanceMetric(t, members[1].addr, "files_rewritten_total")
		_, err := os.Stat(orphan)
		expired := maintenanceMetric(t, members[0].addr, "snapshots_expired_total") + maintenanceMetric(t, members[1].addr, "snapshots_expired_total")
		manifests := maintenanceMetric(t, members[0].addr, "manifests_rewritten_total") + maintenanceMetric(t, members[1].addr, "manifests_rewritten_total")
		if (a > 0 || b > 0) && os.IsNotExist(err) && expired > 0 && manifests > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 minutes: files rewritten %v and %v, orphan still there: %v, snapshots expired %v, manifests rewritten %v", a, b, err == nil, expired, manifests)
		}
	}
	for i, m := range members {
		if maintenanceMetric(t, m.addr, "leases_held") == 1 {
			holder, other = m, members[1-i]
		}
	}
	if holder.addr == "" {
		t.Fatal("no member holds the table's lease")
	}
	if maintenanceMetric(t, other.addr, "leases_held") != 0 {
		t.Error("both members hold the table's lease")
	}
	for _, task := range []string{"compact", "manifests", "expire", "orphans"} {
		if runs(holder, task) == 0 {
			t.Errorf("the holder ran no %s", task)
		}
		if n := runs(other, task); n != 0 {
			t.Errorf("the member without the lease ran %s %v times", task, n)
		}
		if n := maintenanceMetric(t, holder.addr, `errors_total{task="`+task+`"}`); n != 0 {
			t.Errorf("%v %s runs failed", n, task)
		}
	}
	if maintenanceMetric(t, holder.addr, "orphans_removed_total") < 1 {
		t.Error("the holder counts no orphan removed")
	}
	var replace bool
	for _, s := range env.load(t).Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Operation == "replace" {
			replace = true
		}
	}
	if !replace {
		t.Error("no replace snapshot in the table's history after compaction")
	}
	// The lease names its holder.
	leases, _ := filepath.Glob(filepath.Join(dir, "_pqsink", "leases", "tables", "kafka."+env.topic, "*.json"))
	if len(leases) == 0 || len(leases) > 3 {
		t.Errorf("lease objects %v", leases)
	} else {
		var doc struct {
			Holder  string    `json:"holder"`
			Expires time.Time `json:"expires"`
		}
		body, _ := os.ReadFile(leases[len(leases)-1])
		if err := json.Unmarshal(body, &doc); err != nil || doc.Holder == "" || doc.Expires.IsZero() {
			t.Errorf("the lease in force reads %s (%v)", body, err)
		}
	}

	// The holder leaves and gives the lease up: the other member takes it
	// over and maintains.
	holder.stop()
	deadline = time.Now().Add(2 * time.Minute)
	for runs(other, "compact") == 0 || maintenanceMetric(t, other.addr, "leases_held") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the remaining member did not take the lease over within 2 minutes")
		}
		produce(100)
		time.Sleep(500 * time.Millisecond)
	}
	env.waitRows(t, produced, 2*time.Minute)
	other.stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	// The state is in the current snapshot, or below the manifest
	// rewrites on top of it (they carry none), and the current snapshot
	// lists few manifests.
	tbl := env.load(t)
	md := tbl.Metadata()
	snap := tbl.CurrentSnapshot()
	for snap != nil && snap.Summary.Properties["pqsink.state"] == "" {
		if snap.Summary.Properties["manifests-created"] == "" {
			t.Errorf("snapshot %d (%s) carries no pqsink.state and is no manifest rewrite", snap.SnapshotID, snap.Summary.Operation)
		}
		if snap.ParentSnapshotID == nil {
			snap = nil
			break
		}
		snap = md.SnapshotByID(*snap.ParentSnapshotID)
	}
	if snap == nil {
		t.Error("no snapshot of the table's history carries pqsink.state")
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if manifests, err := tbl.CurrentSnapshot().Manifests(fsys); err != nil || len(manifests) > 3+8 {
		t.Errorf("the current snapshot lists %d manifests (%v): the rewrites keep it near 3", len(manifests), err)
	}
}

// TestCompactionDiesOrphansRemoved: a compaction that dies between two
// bins (cancelled: what a kill leaves, the first bin's files uploaded and
// no commit) leaves the table as it was; orphan removal then deletes its
// files, while a sink appends to the table, and nothing the table or the
// sink still needs, even with every data file old enough: the sink's
// uploads waiting for their commit are past the table's state.
func TestCompactionDiesOrphansRemoved(t *testing.T) {
	const partitions, n = 3, 3000
	ctx := context.Background()
	env, broker, text := landSmallFiles(t, "died", partitions, n)
	h, store := env.handle(t, text)
	before := env.load(t).CurrentSnapshot().SnapshotID

	cctx, cancel := context.WithCancel(ctx)
	rep, err := compact.Table(cctx, h, store, env.warehouse, compact.Options{
		TargetFileSize: 64 << 10, MinInputFiles: 2,
		Progress: func(p compact.Progress) {
			if p.Bin == 2 {
				cancel()
			}
		},
	})
	cancel()
	if err == nil || len(rep.Bins) < 2 {
		t.Fatalf("the compaction was to die in its second bin of %d: %v", len(rep.Bins), err)
	}
	if got := env.load(t).CurrentSnapshot().SnapshotID; got != before {
		t.Fatalf("the dead compaction changed the table: snapshot %d, was %d", got, before)
	}
	dir := strings.TrimPrefix(env.warehouse, "file://")
	left, _ := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "compacted-*.parquet"))
	if len(left) == 0 {
		t.Fatal("the dead compaction left no file: nothing to remove")
	}

	// A sink appends more while the orphans are removed, every data file
	// made two hours old before each removal: old enough, the sink's
	// uploads waiting for their commit included. (The metadata files keep
	// their age: those of a commit in flight are written before its swap,
	// and younger than any age the configuration allows.)
	dataDir := filepath.Join(dir, "kafka", env.topic, "data")
	produceEvents(t, broker.Brokers, env.topic, n, n)
	_, stop := startSink(t, text)
	var removed, pending, passes int
	deadline := time.Now().Add(2 * time.Minute)
	for len(env.scan(t)) < 2*n {
		ageData(t, dataDir)
		res, err := h.RemoveOrphans(ctx, store, table.OrphanOptions{OlderThan: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		removed, pending, passes = removed+res.Removed, pending+res.Pending, passes+1
		if time.Now().After(deadline) {
			t.Fatalf("the table holds %d rows after 2 minutes, want %d", len(env.scan(t)), 2*n)
		}
	}
	stop()
	if removed < len(left) {
		t.Errorf("%d files removed, the dead compaction left %d", removed, len(left))
	}
	for _, f := range left {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s, left by the dead compaction, is still there", f)
		}
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	t.Logf("%d removals while the sink ran: %d files removed, %d uploads spared as waiting for their commit", passes, removed, pending)
}

// ageData makes every file under dir two hours old.
func ageData(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file renamed or removed meanwhile
		}
		if err := os.Chtimes(p, old, old); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCompactTooSlow: a compaction that merged for longer than
// CommitWithin (half of remove_orphans_older_than, where orphan removal
// could take its files for orphans) gives up before its commit, deletes
// the files it wrote, and leaves the table as it was.
func TestCompactTooSlow(t *testing.T) {
	const partitions, n = 2, 2000
	env, broker, text := landSmallFiles(t, "slow", partitions, n)
	h, store := env.handle(t, text)
	before := env.load(t).CurrentSnapshot().SnapshotID
	// The clock jumps an hour once the run has started merging.
	start, calls := time.Now(), 0
	now := func() time.Time {
		calls++
		if calls == 1 {
			return start
		}
		return start.Add(time.Hour)
	}
	rep, err := compact.Table(context.Background(), h, store, env.warehouse, compact.Options{
		TargetFileSize: 64 << 10, MinInputFiles: 2, Now: now, CommitWithin: 30 * time.Minute,
	})
	if !errors.Is(err, compact.ErrTooSlow) {
		t.Fatalf("compaction of %d bins an hour long with CommitWithin 30m: err %v, want ErrTooSlow", len(rep.Bins), err)
	}
	if len(rep.Bins) == 0 {
		t.Fatal("nothing to compact: the test needs small files")
	}
	if got := env.load(t).CurrentSnapshot().SnapshotID; got != before {
		t.Errorf("the slow compaction changed the table: snapshot %d, was %d", got, before)
	}
	dir := strings.TrimPrefix(env.warehouse, "file://")
	if left, _ := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "compacted-*.parquet")); len(left) != 0 {
		t.Errorf("the slow compaction left %d files: %v", len(left), left)
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// landSmallFiles runs a sink of the test's table over n events on a topic
// of the given partitions, rotating every second, until the table holds
// them all, and stops it: small files for a compaction to take.
func landSmallFiles(t *testing.T, name string, partitions int32, n int) (*tableEnv, *kafkatest.Cluster, string) {
	t.Helper()
	env := newTableEnv(t, name)
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, name, "1s", 100)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	return env, broker, text
}
