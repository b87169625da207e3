package test

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// millisSchema has the millisecond timestamps of Avro, the common ones of
// Confluent producers: timestamp-millis, and a nullable
// local-timestamp-millis.
const (
	millisID     = 31
	millisSchema = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"long"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}],"default":null}]}`
)

// millisEvent is a record of millisSchema; local is null when id%4 == 3.
type millisEvent struct {
	id int64
	ts time.Time
}

func (e millisEvent) encode() []byte {
	b := schemaregistry.AppendWire(nil, millisID)
	b = avro.AppendLong(b, e.id)
	b = avro.AppendLong(b, e.ts.UnixMilli())
	if e.id%4 == 3 {
		return avro.AppendLong(b, 0)
	}
	return avro.AppendLong(avro.AppendLong(b, 1), e.ts.Add(time.Hour).UnixMilli())
}

// TestTableSinkAvroMillis archives Avro records with millisecond
// timestamps into a table partitioned by day(ts). Iceberg's timestamps are
// microseconds in Parquet, and engines misread or refuse a millisecond
// column (iceberg-go's row filter keeps no row of one, see
// table.TestMillisTimestampColumn; Iceberg's vectorized Spark reader
// failed on them), so the table's files hold those columns as
// TIMESTAMP(MICROS): every file's schema says so, DuckDB reads each value
// at its instant, iceberg-go's scans filtered on ts prune files and return
// exactly the matching rows, a value microseconds cannot hold is a dead
// letter, and a replay of the table produces the
// original Avro bytes (milliseconds again).
func TestTableSinkAvroMillis(t *testing.T) {
	const partitions, n = 2, 400
	env := newTableEnv(t, "avro-millis")
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq, "replayed")
	reg := &replayRegistry{schemas: map[int]string{millisID: millisSchema}, subjects: map[string]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-millis", "1s", 100000) + "dead_letter:\n  topic: " + dlq + "\n"
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["day(ts)"]`, 1)

	// The records cross midnight at id 200.
	start := time.Date(2026, 11, 23, 23, 59, 20, 0, time.UTC)
	events := map[string]millisEvent{}
	var msgs []kafka.Message
	for i := range n {
		e := millisEvent{id: int64(i), ts: start.Add(time.Duration(i)*200*time.Millisecond + time.Duration(i%7)*time.Millisecond)}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: e.encode()})
	}
	// A timestamp-millis one past what microseconds hold (its day is a
	// partition value, in the year 292278).
	huge := avro.AppendLong(avro.AppendLong(schemaregistry.AppendWire(nil, millisID), 9999), math.MaxInt64/1000+1)
	msgs = append(msgs, kafka.Message{Key: []byte("poison-huge"), Value: avro.AppendLong(huge, 0)})
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	waitRejected(t, sink, stop, 1)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := byOffset(truth, events)
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != 1 {
		t.Errorf("%d dead letters, want 1", len(letters))
	}
	for _, l := range letters {
		h := decodeHeaders(t, l.Headers)
		// The partition value of day(ts) is computed first, in the
		// table's microseconds (avrorow's TestAvroMillisWidened has the
		// decoder's own refusal).
		if string(l.Key) != "poison-huge" || h["pqsink.reason"] != "path" || !strings.Contains(h["pqsink.error"], "column ts: value does not fit") {
			t.Errorf("dead letter %s: reason %q, error %q; want poison-huge, path, does not fit", l.Key, h["pqsink.reason"], h["pqsink.error"])
		}
	}

	// Every file holds ts and local in microseconds.
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*.parquet"))
	if err != nil || len(files) < 2 {
		t.Fatalf("%d files in day folders (%v), want files of two days", len(files), err)
	}
	for _, f := range files {
		s := openParquet(t, f).Schema()
		for _, col := range []string{"ts", "local"} {
			l := s.Leaf(col).Logical
			if l.Kind != schema.Timestamp || l.Unit != schema.Micros {
				t.Errorf("%s: column %s is %s, want TIMESTAMP(MICROS)", filepath.Base(f), col, l)
			}
		}
	}

	// DuckDB reads each value at its instant, in the folder of its day.
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o, epoch_ms(ts) AS ts, epoch_ms(local) AS local, filename
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, hive_partitioning = false)`)
	if len(res.Rows) != n {
		t.Errorf("DuckDB reads %d rows, want %d", len(res.Rows), n)
	}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		if !ok {
			t.Errorf("the files hold %s, which is not a good record", key)
			continue
		}
		if got := fmt.Sprint(res.Value(i, "ts")); got != fmt.Sprint(e.ts.UnixMilli()) {
			t.Errorf("%s: ts %s ms, want %d", key, got, e.ts.UnixMilli())
		}
		wantLocal := fmt.Sprint(e.ts.Add(time.Hour).UnixMilli())
		if e.id%4 == 3 {
			wantLocal = "<nil>"
		}
		if got := fmt.Sprint(res.Value(i, "local")); got != wantLocal {
			t.Errorf("%s: local %s ms, want %s", key, got, wantLocal)
		}
		if day := e.ts.Format("2006-01-02"); !strings.Contains(fmt.Sprint(res.Value(i, "filename")), "/ts_day="+day+"/") {
			t.Errorf("%s: in %s, want the folder of %s", key, res.Value(i, "filename"), day)
		}
	}

	// iceberg-go: the filtered scans prune and keep exactly the rows.
	tbl := env.load(t)
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	probe := events["k0123"].ts
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "ts"}, []scanCase[millisEvent]{
		{"ts after midnight", iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())), func(e millisEvent) bool { return !e.ts.Before(midnight) }},
		{"ts of one record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(probe.UnixMicro())), func(e millisEvent) bool { return e.ts.Equal(probe) }},
	})

	// Replay: the Avro values come back as they were produced.
	cfgFile := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	good := map[string]produced{}
	for id, p := range truth {
		if _, ok := byID[id]; ok {
			good[id] = p
		}
	}
	reg.mu.Lock()
	replayID := reg.subjects["replayed-value\x00"+avroSchemaText(t, millisSchema)]
	reg.mu.Unlock()
	compareReplayed(t, good, readTopic(t, broker.Brokers, "replayed", partitions), replayID)
}

// avroSchemaText is the schema as replay registers it: parsed and printed.
func avroSchemaText(t *testing.T, text string) string {
	t.Helper()
	s, err := avro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return s.String()
}
