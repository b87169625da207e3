package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// TestReplayTableDeletes archives a topic into a table with the sink, then
// deletes rows of it with iceberg-go as another engine would (a GDPR
// `DELETE FROM t WHERE …`), one kind of delete after the other:
// merge-on-read position delete files (format version 2), a copy-on-write
// rewrite of the files (new data files with the _kafka columns but no
// pqsink footer), and, after an upgrade to format version 3, deletion
// vectors. `pqsink replay --from iceberg:kafka.TOPIC@SNAPSHOT` at each of
// those snapshots produces exactly the records the snapshot still holds,
// in offset order per partition, each with its key, headers, timestamp
// and value bytes. A snapshot with an equality delete file is refused,
// naming the file, and produces nothing. On a file:// warehouse and on
// MinIO.
func TestReplayTableDeletes(t *testing.T) {
	for _, s3 := range []bool{false, true} {
		name := "file"
		if s3 {
			name = "s3"
		}
		t.Run(name, func(t *testing.T) { testReplayTableDeletes(t, s3) })
	}
}

func testReplayTableDeletes(t *testing.T, s3 bool) {
	const partitions, n = 3, 900
	topic := "gdpr"
	targets := []string{"after-pos", "after-cow", "after-dv", "errors"}
	broker := kafkatest.Start(t, partitions, append([]string{topic}, targets...)...)
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-replay-deletes", topic: topic, format: "json",
		envelope: true, records: 100, interval: "500ms", noPath: true, storeURL: "file://" + filepath.Join(dir, "warehouse")}
	props := iceberg.Properties{}
	if s3 {
		srv := minio.Start(t)
		cfg.storeURL = fmt.Sprintf("s3://%s/warehouse", srv.NewBucket(t))
		cfg.s3 = &s3Target{endpoint: srv.Endpoint, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey}
		props = iceberg.Properties{icebergio.S3EndpointURL: srv.Endpoint, icebergio.S3Region: srv.Region,
			icebergio.S3AccessKeyID: srv.AccessKey, icebergio.S3SecretAccessKey: srv.SecretKey, icebergio.S3ForceVirtualAddressing: "false"}
	}
	props["warehouse"] = cfg.storeURL
	uri := "sqlite://" + filepath.Join(dir, "catalog.db")
	cfg.extra = fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: 1s
  partition_by: ["day(_kafka.timestamp)"]
`, uri)
	text := cfg.yaml(t)
	cfgFile := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlOpenSQLite(uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, props)
	if err != nil {
		t.Fatal(err)
	}
	ident := itable.Identifier{"kafka", topic}
	load := func() *itable.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}

	produceReplayEvents(t, broker.Brokers, topic, n, false)
	all := readTopic(t, broker.Brokers, topic, partitions)
	_, stop := startSink(t, text)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		tbl, err := cat.LoadTable(ctx, ident)
		if err == nil && tbl.CurrentSnapshot() != nil && tbl.CurrentSnapshot().Summary.Properties["total-records"] == fmt.Sprint(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table does not hold %d records after 2 minutes", n)
		}
		time.Sleep(300 * time.Millisecond)
	}
	stop()

	// deleteRows deletes, in one snapshot, the records of partition p whose
	// offsets are in offs, with the table's write.delete.mode, and drops
	// them from want. It returns the new snapshot's id.
	want := map[string]produced{}
	for k, v := range all {
		want[k] = v
	}
	deleteRows := func(mode string, p int32, offs ...int64) int64 {
		t.Helper()
		tx := load().NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: mode}); err != nil {
			t.Fatal(err)
		}
		for _, o := range offs {
			id := fmt.Sprintf("%d/%d", p, o)
			if _, ok := want[id]; !ok {
				t.Fatalf("no record %s to delete", id)
			}
			delete(want, id)
		}
		filter := iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("_kafka.partition"), p),
			iceberg.IsIn(iceberg.Reference("_kafka.offset"), offs...))
		if err := tx.Delete(ctx, filter, nil); err != nil {
			t.Fatalf("%s delete: %v", mode, err)
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			t.Fatalf("%s delete: %v", mode, err)
		}
		return tbl.CurrentSnapshot().SnapshotID
	}
	// manifestsHold counts the live entries of the current snapshot's
	// manifests by content and format (data, position deletes in Parquet
	// or Puffin), and, as "rewritten", the data files the sink did not
	// name.
	manifestsHold := func() map[string]int {
		t.Helper()
		tbl := load()
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := tbl.CurrentSnapshot().Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, m := range ms {
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					t.Fatal(err)
				}
				df := e.DataFile()
				out[fmt.Sprintf("%v/%v", df.ContentType(), df.FileFormat())]++
				if df.ContentType() == iceberg.EntryContentData && !strings.Contains(filepath.Base(df.FilePath()), "+") {
					out["rewritten"]++ // not named as the sink names its files
				}
			}
		}
		return out
	}
	replay := func(from, target string) (string, error) {
		out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", from, "--topic", target, "--progress", "log").CombinedOutput()
		return string(out), err
	}
	check := func(snap int64, target string) {
		t.Helper()
		from := fmt.Sprintf("iceberg:kafka.%s@%d", topic, snap)
		out, err := replay(from, target)
		if err != nil {
			t.Fatalf("replay --from %s: %v\n%s", from, err, out)
		}
		compareReplayedBytes(t, from, want, readTopic(t, broker.Brokers, target, partitions))
	}

	// Merge-on-read in format version 2: position delete files. Offsets
	// at the start, middle and end of partition 0's files, and a run.
	posSnap := deleteRows(itable.WriteModeMergeOnRead, 0, 0, 1, 77, 99, 100, 200, 201, 202, 203, 249)
	kinds := manifestsHold()
	t.Logf("after the merge-on-read delete: %v", kinds)
	if kinds[fmt.Sprintf("%v/%v", iceberg.EntryContentPosDeletes, iceberg.ParquetFile)] == 0 {
		t.Fatalf("the merge-on-read delete wrote no position delete file: %v", kinds)
	}
	check(posSnap, "after-pos")

	// Copy-on-write: the files of partition 1 that held the rows are
	// rewritten without them, by iceberg-go.
	cowSnap := deleteRows(itable.WriteModeCopyOnWrite, 1, 0, 5, 6, 7, 98, 99, 101, 240)
	check(cowSnap, "after-cow")

	// Format version 3: deletion vectors, for partitions 2 and 0 (whose
	// files have position deletes already).
	tx := load().NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	deleteRows(itable.WriteModeMergeOnRead, 2, 3, 4, 99, 100, 101)
	dvSnap := deleteRows(itable.WriteModeMergeOnRead, 0, 2, 76, 78)
	kinds = manifestsHold()
	t.Logf("after the deletes in format version 3: %v", kinds)
	if kinds[fmt.Sprintf("%v/%v", iceberg.EntryContentPosDeletes, iceberg.PuffinFile)] == 0 {
		t.Fatalf("the merge-on-read deletes in format version 3 wrote no deletion vector: %v", kinds)
	}
	check(dvSnap, "after-dv")

	// An equality delete is refused, naming its file.
	eqFile := addEqualityDelete(t, load())
	out, err := replay("iceberg:kafka."+topic, "errors")
	var exit *exec.ExitError
	t.Logf("replay of a snapshot with an equality delete: %s", lastLine(out))
	if !errors.As(err, &exit) || !strings.Contains(out, "equality delete file") || !strings.Contains(out, eqFile) {
		t.Errorf("replay of a snapshot with an equality delete: %v, want a refusal naming %s:\n%s", err, eqFile, out)
	}
	if got := readTopic(t, broker.Brokers, "errors", partitions); len(got) != 0 {
		t.Errorf("the refused replay produced %d records", len(got))
	}
}

// addEqualityDelete commits to tbl an equality delete file on
// _kafka.offset, in the partition of the table's first data file, and
// returns its location. iceberg-go's equality delete writer wants the
// partition's source columns beside the key, which here sit in the
// _kafka struct, so the entry is built by hand, with no file behind it:
// replay refuses it from the manifest, before its file would be read.
func addEqualityDelete(t *testing.T, tbl *itable.Table) string {
	t.Helper()
	ctx := context.Background()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var partition map[int]any
	for _, m := range ms {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			if partition == nil && e.DataFile().ContentType() == iceberg.EntryContentData {
				partition = e.DataFile().Partition()
			}
		}
	}
	field, ok := tbl.Schema().FindFieldByName("_kafka.offset")
	if !ok {
		t.Fatal("the table has no _kafka.offset")
	}
	loc := tbl.Location() + "/data/eq-delete-00001.parquet"
	b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentEqDeletes, loc, iceberg.ParquetFile,
		partition, nil, nil, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddDeletes(b.EqualityFieldIDs([]int{field.ID}).Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return loc
}
