package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableCompactStores compacts a table whose warehouse is on Google
// Cloud Storage (fake-gcs-server) or Azure Blob Storage (Azurite), in both
// ways that pqsink offers: `pqsink compact`, then the daemon's own
// maintenance (table.maintenance) while it appends more. The table, read
// with iceberg-go through its own IO for the store, holds every record
// exactly once after each, in fewer files than the sink wrote, and its
// history has a replace snapshot for each way. (TestTableCompact and
// TestTableMaintenance go further on a directory.)
func TestTableCompactStores(t *testing.T) {
	for _, kind := range []string{"gcs", "azure"} {
		t.Run(kind, func(t *testing.T) { testTableCompactStore(t, newStoreTarget(t, kind, "lake")) })
	}
}

func testTableCompactStore(t *testing.T, target storeTarget) {
	const partitions, n = 6, 2400
	env := newTableEnv(t, "compact"+target.kind)
	env.warehouse = target.tableURL
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "cmp-"+target.kind, "1s", 100) // a file every 100 records
	text = replaceYAML(t, text, "  url: "+env.warehouse+"\n", "  url: "+env.warehouse+"\n"+target.keys)
	cfgPath := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func() *itable.Table {
		t.Helper()
		db, dialect := env.openCatalog(t)
		t.Cleanup(func() { db.Close() })
		props := iceberg.Properties{"warehouse": env.warehouse}
		for k, v := range target.iceberg {
			props[k] = v
		}
		cat, err := sqlcat.NewCatalog("pqsink", db, dialect, props)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(context.Background(), itable.Identifier{"kafka", env.topic})
		if err != nil {
			return nil
		}
		return tbl
	}
	rows := func() []tableRow {
		if tbl := load(); tbl != nil {
			return env.rows(t, tbl)
		}
		return nil
	}
	waitRows := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); len(rows()) < want; time.Sleep(300 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the table holds %d rows after 2 minutes, want %d", len(rows()), want)
			}
		}
	}
	liveFiles := func() int {
		t.Helper()
		tasks, err := load().Scan().PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(tasks)
	}
	replaces := func() int {
		var n int
		for _, s := range load().Metadata().Snapshots() {
			if s.Summary != nil && s.Summary.Operation == "replace" {
				n++
			}
		}
		return n
	}

	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, text)
	waitRows(n)
	stop()
	before := liveFiles()
	if before < 2*partitions {
		t.Fatalf("the sink wrote %d files; the test needs many small ones", before)
	}

	// pqsink compact.
	out, err := exec.Command(pqsinkBinary(t), "compact", "--config", cfgPath, "--quiet",
		"--older-than", "0s", "--min-input-files", "2", "--target-file-size", "1MiB").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rewrote") {
		t.Fatalf("pqsink compact: %v\n%s", err, out)
	}
	after := liveFiles()
	if after >= before || replaces() != 1 {
		t.Errorf("after pqsink compact: %d files (before %d), %d replace snapshots; want fewer files and one", after, before, replaces())
	}
	checkTableRows(t, rows(), readTopic(t, broker.Brokers, env.topic, partitions))

	// The daemon's maintenance, while it appends more records.
	produceEvents(t, broker.Brokers, env.topic, n, n)
	maintained := replaceYAML(t, text, "  format_version: 2\n", "  format_version: 2\n"+
		"  maintenance: {compact_every: 2s, target_file_size: 1MiB}\n")
	_, stop = startSink(t, maintained)
	waitRows(2 * n)
	for deadline := time.Now().Add(2 * time.Minute); replaces() < 2; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's maintenance compacted nothing in 2 minutes")
		}
	}
	stop()
	checkTableRows(t, rows(), readTopic(t, broker.Brokers, env.topic, partitions))
	t.Logf("%s: %d files, %d after pqsink compact, %d at the end", target.tableURL, before, after, liveFiles())
}
