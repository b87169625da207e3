package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestReplayTablePrunesByManifest lands a topic in a table in many small
// files, then replays a time window of it, and a time window of one
// partition, with `pqsink replay --from iceberg:kafka.TOPIC --since
// --until [--partitions]`: the target gets exactly the source records in
// the window (and partition), byte for byte and in order, while the
// replay opens only a few of the table's files: the others are ruled out
// by their manifest bounds (files_pruned_by_manifest in the last log
// line) and never opened.
func TestReplayTablePrunesByManifest(t *testing.T) {
	const partitions, n = 3, 1500
	topic := "clicks"
	broker := kafkatest.Start(t, partitions, topic, "window", "window-p1")
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-replay-prune", topic: topic, format: "json",
		envelope: true, records: 20, interval: "30s", noPath: true, storeURL: "file://" + filepath.Join(dir, "warehouse")}
	uri := "sqlite://" + filepath.Join(dir, "catalog.db")
	cfg.extra = fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: 1s
`, uri)
	text := cfg.yaml(t)
	cfgFile := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// current reads the table's row and data file counts with iceberg-go.
	current := func() (rows, files int64) {
		t.Helper()
		db, err := sqlOpenSQLite(uri)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": cfg.storeURL})
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(context.Background(), itable.Identifier{"kafka", topic})
		if err != nil || tbl.CurrentSnapshot() == nil {
			return 0, 0
		}
		s := tbl.CurrentSnapshot()
		rows, _ = strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		files, _ = strconv.ParseInt(s.Summary.Properties["total-data-files"], 10, 64)
		return rows, files
	}

	produceReplayEvents(t, broker.Brokers, topic, n, false)
	all := readTopic(t, broker.Brokers, topic, partitions)
	_, stop := startSink(t, text)
	deadline := time.Now().Add(2 * time.Minute)
	rows, files := current()
	for ; rows < n; rows, files = current() {
		if time.Now().After(deadline) {
			t.Fatalf("the table holds %d rows, want %d", rows, n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	stop()
	if files < 60 {
		t.Fatalf("the table has %d data files, want at least 60 (records: 20 a file)", files)
	}

	// produceReplayEvents gives record i the time base + 7i s, spread
	// over the partitions: the window holds 60 of them.
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	since, until := base.Add(700*7*time.Second), base.Add(760*7*time.Second)
	for _, tc := range []struct {
		target    string
		partition int // -1: all
	}{
		{"window", -1},
		{"window-p1", 1},
	} {
		t.Run(tc.target, func(t *testing.T) {
			args := []string{"replay", "--config", cfgFile, "--from", "iceberg:kafka." + topic, "--topic", tc.target, "--progress", "log",
				"--since", since.Format(time.RFC3339), "--until", until.Format(time.RFC3339)}
			if tc.partition >= 0 {
				args = append(args, "--partitions", strconv.Itoa(tc.partition))
			}
			out, err := exec.Command(pqsinkBinary(t), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			want := map[string]produced{}
			for id, r := range all {
				if r.TimeMs >= since.UnixMilli() && r.TimeMs < until.UnixMilli() && (tc.partition < 0 || r.Partition == tc.partition) {
					want[id] = r
				}
			}
			if len(want) == 0 {
				t.Fatal("no source record in the window")
			}
			compareReplayedBytes(t, tc.target, want, readTopic(t, broker.Brokers, tc.target, partitions))

			last := lastLine(string(out))
			opened, pruned := logCount(t, last, "files_opened"), logCount(t, last, "files_pruned_by_manifest")
			t.Logf("%d of the table's %d files opened, %d pruned by the manifests: %s", opened, files, pruned, last)
			// The window's records lie in at most a few files of each
			// partition replayed.
			if opened*5 > files {
				t.Errorf("the replay opened %d of the table's %d files, want at most a fifth", opened, files)
			}
			if pruned == 0 {
				t.Errorf("files_pruned_by_manifest is 0: %s", last)
			}
		})
	}
}

// logCount reads the count key=N of a log line.
func logCount(t *testing.T, line, key string) int64 {
	t.Helper()
	m := regexp.MustCompile(`\b` + key + `=(\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no %s in the log line %q", key, line)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}
