package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/linkedin/goavro/v2"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestCompactTakesBackRewritten archives a topic into a table as small
// files (JSON, and Avro through a registry), deletes some records
// copy-on-write as Spark's or Trino's `DELETE FROM` does by default
// (iceberg-go's: the files holding them are rewritten without them, with
// the _kafka columns but not the sink's footer), and runs `pqsink
// compact`. The rewritten files are taken back: none is live after it,
// and it says how many it took. The table reads exactly the records left
// (iceberg-go's scan, and DuckDB over its live data files), the deleted
// ones do not come back, each new file's footer lists its Kafka ranges
// with its rows in (partition, offset) order, and `pqsink replay --from
// iceberg:kafka.TOPIC` of the compacted snapshot produces exactly the
// records left, in offset order, with their keys, headers, timestamps and
// value bytes (the producer's Avro bytes: the new files carry the sink's
// records' schema).
func TestCompactTakesBackRewritten(t *testing.T) {
	for _, format := range []string{"json", "avro"} {
		t.Run(format, func(t *testing.T) { testCompactTakesBackRewritten(t, format) })
	}
}

func testCompactTakesBackRewritten(t *testing.T, format string) {
	const partitions, n = 3, 600
	ctx := context.Background()
	env := newTableEnv(t, "cow-"+format)
	broker := kafkatest.Start(t, partitions, env.topic, "replayed")
	var codec *goavro.Codec
	var reg *replayRegistry
	if format == "avro" {
		reg = &replayRegistry{schemas: map[int]string{cowAvroID: cowAvroSchema}, subjects: map[string]int{}}
		srv := httptest.NewServer(reg)
		defer srv.Close()
		env.avroRegistry = srv.URL
		var err error
		if codec, err = goavro.NewCodec(cowAvroSchema); err != nil {
			t.Fatal(err)
		}
		produceCowAvro(t, broker.Brokers, env.topic, codec, n)
	} else {
		produceEvents(t, broker.Brokers, env.topic, 0, n)
	}
	text := env.config(t, broker.Brokers, "cow-"+format, "1s", 60) // small files
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)

	// Delete offsets at the start, middle and end of files, in every
	// partition, copy-on-write.
	deleted := []int64{0, 5, 6, 7, 59, 60, 61, 100, 150}
	tx := env.load(t).NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: itable.WriteModeCopyOnWrite}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("_kafka.offset"), deleted...), nil); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	want := map[string]produced{}
	for id, p := range truth {
		if !slices.Contains(deleted, p.Offset) {
			want[id] = p
		}
	}
	if len(want) >= len(truth) {
		t.Fatal("the delete deletes nothing")
	}
	rewritten := func() []string {
		t.Helper()
		tasks, err := env.load(t).Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, task := range tasks {
			if base := filepath.Base(task.File.FilePath()); !strings.Contains(base, "+") && !strings.HasPrefix(base, "compacted-") {
				out = append(out, task.File.FilePath())
			}
		}
		return out
	}
	before := rewritten()
	if len(before) == 0 {
		t.Fatal("the delete rewrote no file")
	}
	checkRows(t, env, want)

	cfgFile := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "compact", "--config", cfgFile, "--table", "kafka."+env.topic,
		"--min-input-files", "2", "--older-than", "0s", "--quiet").CombinedOutput()
	t.Logf("compact: %s", out)
	if err != nil {
		t.Fatalf("compact: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("took back %d data files another engine rewrote", len(before))) || strings.Contains(string(out), "pqsink did not write them") {
		t.Errorf("compact does not say it took back the %d rewritten files:\n%s", len(before), out)
	}
	if left := rewritten(); len(left) > 0 {
		t.Errorf("rewritten files live after the compaction: %v", left)
	}
	checkRows(t, env, want)

	// DuckDB over the live data files: the records left, each once; each
	// new file's footer says its ranges, its rows in order.
	tasks, err := env.load(t).Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := duckdb.Start(t)
	var paths []string
	compacted := 0
	for _, task := range tasks {
		p := strings.TrimPrefix(task.File.FilePath(), "file://")
		paths = append(paths, duckdb.Quote(p))
		if strings.HasPrefix(filepath.Base(p), "compacted-") {
			compacted++
			checkCompactedFile(t, db, p)
		}
	}
	if compacted == 0 {
		t.Fatal("the compaction wrote no file")
	}
	res := db.Query(t, "SELECT string_agg(_kafka.partition::VARCHAR || '/' || _kafka.offset::VARCHAR, ',' ORDER BY _kafka.partition, _kafka.offset) AS ids, count(*) AS n FROM read_parquet(["+strings.Join(paths, ",")+"])")
	var ids []string
	for id := range want {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return compareIDs(want[a], want[b]) })
	if got := fmt.Sprint(res.Value(0, "ids")); got != strings.Join(ids, ",") {
		t.Errorf("DuckDB reads %s rows from the live files (%s), want %d", fmt.Sprint(res.Value(0, "n")), got, len(want))
	}

	out, err = exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	got := readTopic(t, broker.Brokers, "replayed", partitions)
	if format == "avro" {
		reg.mu.Lock()
		id := reg.subjects["replayed-value\x00"+avroSchemaText(t, cowAvroSchema)]
		reg.mu.Unlock()
		compareReplayed(t, want, got, id)
	} else {
		compareReplayedBytes(t, "the compacted table", want, got)
	}
}

// compareIDs orders records by partition and offset.
func compareIDs(a, b produced) int {
	if a.Partition != b.Partition {
		return a.Partition - b.Partition
	}
	return int(a.Offset - b.Offset)
}

// checkRows compares the table's rows, as iceberg-go scans them, with
// want: every record once by partition and offset, with its key and
// timestamp.
func checkRows(t *testing.T, env *tableEnv, want map[string]produced) {
	t.Helper()
	rows := env.scan(t)
	if len(rows) != len(want) {
		t.Errorf("the table holds %d rows, want %d", len(rows), len(want))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		p, ok := want[id]
		switch {
		case !ok:
			t.Errorf("the table holds %s, deleted or never produced", id)
		case seen[id]:
			t.Errorf("the table holds %s twice", id)
		case string(r.key) != string(p.Key) || (r.key == nil) != (p.Key == nil) || r.timeMs != p.TimeMs:
			t.Errorf("%s: key %q time %d, want key %q time %d", id, r.key, r.timeMs, p.Key, p.TimeMs)
		}
		seen[id] = true
	}
}

// produceCowAvro writes n orders of cowAvroSchema to topic, in the
// registry's wire format, keyed.
func produceCowAvro(t *testing.T, brokers []string, topic string, codec *goavro.Codec, n int) {
	t.Helper()
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range n {
		rec := map[string]any{"id": int64(i), "customer": fmt.Sprintf("c-%03d", i%37), "qty": int32(i % 5),
			"price": float64(i) * 0.5, "paid": i%2 == 0, "at": at.Add(time.Duration(i) * time.Second),
			"tags": []any{fmt.Sprint(i % 3)}, "note": nil, "ship": nil}
		if i%3 == 0 {
			rec["note"] = goavro.Union("string", fmt.Sprintf("n%d", i))
			rec["ship"] = goavro.Union("shop.address", map[string]any{"city": "Bergen", "zip": nil})
		}
		body, err := codec.BinaryFromNative(nil, rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%03d", i)), Value: append(schemaregistry.AppendWire(nil, cowAvroID), body...)})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}
