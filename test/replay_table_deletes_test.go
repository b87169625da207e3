package test

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
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
// and value bytes. Then an equality delete file erases every record of a
// few keys, in every partition (a null key is not an empty one), and the
// replay of that snapshot leaves them out too; one whose column is not of
// its field's type is refused, naming the file, and produces nothing. On a file://
// warehouse and on MinIO.
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
	targets := []string{"after-pos", "after-cow", "after-dv", "after-eq", "after-compact", "errors"}
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

	// Equality deletes, as a GDPR erasure by key writes them: every
	// record with key k1, k22 or k301, or with an empty key (not a null
	// one), in any partition.
	erased := map[string]bool{"k1": true, "k22": true, "k301": true, "": true}
	for id, r := range want {
		if r.Key != nil && erased[string(r.Key)] {
			delete(want, id)
		}
	}
	var keys []string
	for k := range erased {
		keys = append(keys, fmt.Sprintf(`{"kafka":{"key":%q}}`, base64.StdEncoding.EncodeToString([]byte(k))))
	}
	eqSnap, _ := addEqualityDelete(t, load(), "_kafka.key", "binary", keys...)
	check(eqSnap, "after-eq")

	// `pqsink compact` applies the deletes: the sink's files are
	// rewritten without the deleted rows (the copy-on-write output is
	// taken back too, placed by its _kafka columns), the delete files
	// that applied only to them are gone, and the replay of the compacted
	// snapshot still produces exactly the records left, in offset order.
	before := manifestsHold()
	deletesIn := func(kinds map[string]int) int {
		n := 0
		for k, v := range kinds {
			if !strings.HasPrefix(k, fmt.Sprint(iceberg.EntryContentData)+"/") && k != "rewritten" {
				n += v
			}
		}
		return n
	}
	cout, err := exec.Command(pqsinkBinary(t), "compact", "--config", cfgFile, "--table", "kafka."+topic,
		"--min-input-files", "2", "--older-than", "0s").CombinedOutput()
	t.Logf("compact: %s", cout)
	if err != nil || !strings.Contains(string(cout), "applied ") {
		t.Fatalf("compact: %v, want it to apply the delete files:\n%s", err, cout)
	}
	after := manifestsHold()
	t.Logf("after the compaction: %v", after)
	if deletesIn(after) >= deletesIn(before) || after[fmt.Sprint(iceberg.EntryContentData)+"/"+fmt.Sprint(iceberg.ParquetFile)] >= before[fmt.Sprint(iceberg.EntryContentData)+"/"+fmt.Sprint(iceberg.ParquetFile)] {
		t.Errorf("the compaction left %d delete files and %v data files, of %d and %v", deletesIn(after), after, deletesIn(before), before)
	}
	check(load().CurrentSnapshot().SnapshotID, "after-compact")

	// An equality delete file whose column is not of its field's type (a
	// long written as bytes) is refused, naming it, before anything is
	// produced.
	_, eqFile := addEqualityDelete(t, load(), "_kafka.offset", "binary", `{"kafka":{"offset":"AAAA"}}`)
	out, err := replay("iceberg:kafka."+topic, "errors")
	var exit *exec.ExitError
	t.Logf("replay of a snapshot with a bad equality delete: %s", lastLine(out))
	if !errors.As(err, &exit) || !strings.Contains(out, "equality delete file "+eqFile) || !strings.Contains(out, "is INT64 in the data file") {
		t.Errorf("replay of a snapshot with a bad equality delete: %v, want a refusal naming %s:\n%s", err, eqFile, out)
	}
	if got := readTopic(t, broker.Brokers, "errors", partitions); len(got) != 0 {
		t.Errorf("the refused replay produced %d records", len(got))
	}
}

// addEqualityDelete commits to tbl an equality delete file on the field
// at path (a top-level field, or one of the _kafka struct) of Parquet
// type typ, with rows (JSON objects of the field), in the partition of
// the table's first data file, and returns the new snapshot's id and the
// file's location. iceberg-go's equality delete writer wants the
// partition's source column beside the key, and that column is in the
// _kafka struct, so the file is written with pqsink's writer and its
// entry built with iceberg-go's DataFileBuilder.
func addEqualityDelete(t *testing.T, tbl *itable.Table, path, typ string, rows ...string) (int64, string) {
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
	field, ok := tbl.Schema().FindFieldByName(path)
	if !ok {
		t.Fatalf("the table has no %s", path)
	}
	leaf := fmt.Sprintf("optional %s %s = %d;", typ, path[strings.LastIndexByte(path, '.')+1:], field.ID)
	if parent, _, ok := strings.Cut(path, "."); ok {
		// pqsink's JSON shredder keeps the name _kafka for the envelope;
		// Iceberg finds columns by field id, which the group keeps.
		pf, _ := tbl.Schema().FindFieldByName(parent)
		leaf = fmt.Sprintf("optional group %s = %d { %s }", strings.TrimPrefix(parent, "_"), pf.ID, leaf)
	}
	msg, err := schema.Parse("message eq { " + leaf + " }")
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, msg)
	for _, r := range rows {
		if err := b.Append([]byte(r), nil); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
	var buf bytes.Buffer
	w, err := writer.New(&buf, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	loc := fmt.Sprintf("%s/data/eq-delete-%d.parquet", tbl.Location(), field.ID)
	if err := fsys.(icebergio.WriteFileIO).WriteFile(loc, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	db, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentEqDeletes, loc, iceberg.ParquetFile,
		partition, nil, nil, int64(len(rows)), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddDeletes(db.EqualityFieldIDs([]int{field.ID}).Build()).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err = tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.CurrentSnapshot().SnapshotID, loc
}
