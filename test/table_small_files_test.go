package test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector/metrics"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// tableSample is what a look at a table's current snapshot finds.
type tableSample struct {
	// live are the data files, small those under the small size; mostSmall
	// the most small files one folder holds, mostCompacted the most small
	// files of compactions.
	live, small, mostSmall, mostCompacted int
	snapshots, manifests                  int
	metadataBytes                         int64
	// snapshotLog and metadataLog are the entries of the metadata's
	// snapshot-log and metadata-log.
	snapshotLog, metadataLog int
}

// sampleTable looks at the table's current snapshot (iceberg-go's scan
// planning) and metadata; small is the size under which a file counts as
// small.
func (e *tableEnv) sampleTable(t *testing.T, small int64) tableSample {
	t.Helper()
	ctx := context.Background()
	tbl := e.load(t)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md := tbl.Metadata()
	s := tableSample{live: len(tasks), snapshots: len(md.Snapshots())}
	for range md.SnapshotLogs() {
		s.snapshotLog++
	}
	for range md.PreviousFiles() {
		s.metadataLog++
	}
	byFolder, compacted := map[string]int{}, map[string]int{}
	for _, task := range tasks {
		if task.File.FileSizeBytes() < small {
			s.small++
			dir := path.Dir(task.File.FilePath())
			byFolder[dir]++
			if strings.HasPrefix(path.Base(task.File.FilePath()), "compacted-") {
				compacted[dir]++
			}
		}
	}
	for _, n := range byFolder {
		s.mostSmall = max(s.mostSmall, n)
	}
	for _, n := range compacted {
		s.mostCompacted = max(s.mostCompacted, n)
	}
	if snap := tbl.CurrentSnapshot(); snap != nil {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		s.manifests = len(manifests)
	}
	if fi, err := os.Stat(strings.TrimPrefix(tbl.MetadataLocation(), "file://")); err == nil {
		s.metadataBytes = fi.Size()
	}
	return s
}

// TestTableSmallFilesBounded runs a sink committing every second, a file
// every 30 records of each of 4 partitions, with table.maintenance's
// small_files_above: between the hourly runs, the lease holder compacts
// the folder each time it holds more than the bound. Whenever the sink has
// caught up and the holder with it, no folder holds more small files than
// the bound, although the sink wrote many times as many; at any moment a
// folder holds at most half the bound and one in small compacted files
// (tiered: those of similar sizes are merged again); the snapshots
// expired after each compaction are bounded by keep_snapshots and the
// commits since; every record is in the table once.
func TestTableSmallFilesBounded(t *testing.T) {
	const (
		partitions = 4
		bound      = 12
		keep       = 5
		small      = 3 << 20 / 4 // three quarters of target_file_size
		rounds     = 12
		perRound   = 2000
	)
	env := newTableEnv(t, "smallfiles")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "sf", "1s", 30)
	text = strings.Replace(text, "  format_version: 2\n", "  format_version: 2\n"+
		"  maintenance: {compact_every: 1h, small_files_above: 12, target_file_size: 1MiB, rewrite_manifests_above: 10, expire_snapshots_older_than: 1s, keep_snapshots: 5, remove_orphans_older_than: 2m}\n", 1)
	if !strings.Contains(text, "small_files_above") {
		t.Fatalf("no maintenance in the config:\n%s", text)
	}
	sink, stop := startSink(t, text)
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMetrics)

	produced := 0
	var most tableSample
	for round := range rounds {
		// A burst: the sink commits it over a few seconds, a file per
		// partition per rotation, while the holder compacts.
		for range 4 {
			produceEvents(t, broker.Brokers, env.topic, produced, perRound/4)
			produced += perRound / 4
			time.Sleep(300 * time.Millisecond)
			s := env.sampleTable(t, small)
			if s.mostCompacted > bound/2+1 {
				t.Errorf("round %d: a folder holds %d small compacted files: the tiered compactions keep at most %d and add one", round, s.mostCompacted, bound/2)
			}
			most = tableSample{live: max(most.live, s.live), small: max(most.small, s.small), mostSmall: max(most.mostSmall, s.mostSmall), mostCompacted: max(most.mostCompacted, s.mostCompacted),
				snapshots: max(most.snapshots, s.snapshots), manifests: max(most.manifests, s.manifests), metadataBytes: max(most.metadataBytes, s.metadataBytes)}
		}
		env.waitRows(t, produced, 2*time.Minute)
		// Caught up: the holder looks at each new snapshot, and compacts
		// until no folder is over the bound (a hang guard, no timing).
		deadline := time.Now().Add(2 * time.Minute)
		s := env.sampleTable(t, small)
		for s.mostSmall > bound {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: a folder still holds %d small files after 2 minutes, bound %d (%d small compactions run)",
					round, s.mostSmall, bound, int(maintenanceMetric(t, addr, "small_files_runs_total")))
			}
			time.Sleep(200 * time.Millisecond)
			s = env.sampleTable(t, small)
		}
		// Each sink commit since the last expiry added a small file to a
		// folder, which holds at most the bound: the snapshots are those
		// kept, the one with the state, a manifest rewrite's, and at most
		// bound commits.
		if s.snapshots > keep+2+bound {
			t.Errorf("round %d: %d snapshots, want at most keep_snapshots %d + 2 + %d", round, s.snapshots, keep, bound)
		}
		t.Logf("round %d: %d records; live files %d, small %d, most small in a folder %d; snapshots %d, manifests %d, metadata %d bytes (snapshot log %d, metadata log %d); small compactions %v",
			round, produced, s.live, s.small, s.mostSmall, s.snapshots, s.manifests, s.metadataBytes, s.snapshotLog, s.metadataLog, maintenanceMetric(t, addr, "small_files_runs_total"))
	}
	triggered := maintenanceMetric(t, addr, "small_files_runs_total")
	rewritten := maintenanceMetric(t, addr, "files_rewritten_total")
	written := maintenanceMetric(t, addr, "files_written_total")
	for _, task := range []string{"compact", "manifests", "expire"} {
		if n := maintenanceMetric(t, addr, `errors_total{task="`+task+`"}`); n != 0 {
			t.Errorf("%v %s runs failed", n, task)
		}
	}
	stop()

	// What the sink wrote: its files are all still in the store (orphan
	// removal waits for the hourly run).
	sinkFiles := 0
	var sinkBytes, compactedBytes int64
	dir := strings.TrimPrefix(env.warehouse, "file://")
	for _, key := range env.files(t) {
		fi, err := os.Stat(path.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(path.Base(key), "compacted-") {
			compactedBytes += fi.Size()
		} else {
			sinkFiles++
			sinkBytes += fi.Size()
		}
	}
	// Every compaction's output is still in the store: the bytes written
	// again for each byte the sink wrote.
	amplification := float64(compactedBytes) / float64(sinkBytes)
	if sinkFiles < 4*bound {
		t.Errorf("the sink wrote %d files: too few to test a bound of %d", sinkFiles, bound)
	}
	if triggered < 2 {
		t.Errorf("%v small-files compactions, want several", triggered)
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	final := env.sampleTable(t, small)
	t.Logf("compactions wrote %d bytes for the sink's %d: %.2f times", compactedBytes, sinkBytes, amplification)
	t.Logf("%d records, %d sink files written, %v small-files compactions rewrote %v files into %v; at most during the bursts: live %d, small %d, in a folder %d (compacted %d), snapshots %d, manifests %d, metadata %d bytes; at the end: live %d, snapshots %d, manifests %d, metadata %d bytes",
		produced, sinkFiles, triggered, rewritten, written, most.live, most.small, most.mostSmall, most.mostCompacted, most.snapshots, most.manifests, most.metadataBytes,
		final.live, final.snapshots, final.manifests, final.metadataBytes)
}
