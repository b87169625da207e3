package test

import (
	"context"
	"fmt"
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

// nanosSchema has Avro's nanosecond timestamps: timestamp-nanos, and a
// nullable local-timestamp-nanos.
const (
	nanosID     = 32
	nanosSchema = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"long"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-nanos"}},
 {"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-nanos"}],"default":null}]}`
)

// nanosEvent is a record of nanosSchema; local is ts plus an hour, null
// when id%4 == 3.
type nanosEvent struct {
	id int64
	ts time.Time
}

func (e nanosEvent) local() (time.Time, bool) { return e.ts.Add(time.Hour), e.id%4 != 3 }

// encode writes the record; with micros, each timestamp floored to the
// microsecond, as a replay from the table gives it back.
func (e nanosEvent) encode(micros bool) []byte {
	ns := func(at time.Time) int64 {
		if micros {
			return microsFloor(at) * 1000
		}
		return at.UnixNano()
	}
	b := schemaregistry.AppendWire(nil, nanosID)
	b = avro.AppendLong(b, e.id)
	b = avro.AppendLong(b, ns(e.ts))
	at, ok := e.local()
	if !ok {
		return avro.AppendLong(b, 0)
	}
	return avro.AppendLong(avro.AppendLong(b, 1), ns(at))
}

// cut is how many of the record's timestamps have digits below the
// microsecond.
func (e nanosEvent) cut() int64 {
	n := int64(0)
	if e.ts.Nanosecond()%1000 != 0 {
		n++
		if _, ok := e.local(); ok {
			n++
		}
	}
	return n
}

// microsFloor is at in microseconds since 1970, floored.
func microsFloor(at time.Time) int64 {
	ns := at.UnixNano()
	us := ns / 1000
	if ns%1000 < 0 {
		us--
	}
	return us
}

// TestTableSinkAvroNanos archives Avro records with timestamp-nanos and
// local-timestamp-nanos into a format version 2 table partitioned by
// day(ts), with table.timestamp_precision: micros. Without the setting,
// the version 2 table refuses the schema (timestamptz_ns is a version 3
// type). With it: every file's columns are TIMESTAMP(MICROS) and the
// table's fields timestamptz and timestamp; DuckDB reads each value at
// its microsecond, floored (before 1970 too), in the folder of its day;
// the values with digits below the microsecond are counted; iceberg-go's
// scans filtered on ts prune files and return exactly the matching rows;
// and a replay from the table gives each record's Avro bytes with the
// timestamps floored to the microsecond.
func TestTableSinkAvroNanos(t *testing.T) {
	const partitions, n = 2, 400
	env := newTableEnv(t, "avro-nanos")
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq, "replayed", env.topic+"-ns")
	reg := &replayRegistry{schemas: map[int]string{nanosID: nanosSchema}, subjects: map[string]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-nanos", "1s", 100000)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["day(ts)"]`, 1)

	// Without timestamp_precision, a format version 2 table has no type
	// for the nanoseconds, and says so: a topic and group of their own,
	// errors: fail.
	refused := strings.Replace(text, "topics: ["+env.topic+"]", "topics: ["+env.topic+"-ns]", 1)
	refused = strings.Replace(refused, "group: avro-nanos\n", "group: avro-nanos-ns\n", 1)
	produceValues(t, broker.Brokers, env.topic+"-ns", [][]byte{nanosEvent{id: 1, ts: time.Unix(1, 5)}.encode(false)}, nil)
	checkTimestampsRefused(t, "registry", refused)

	text += "  timestamp_precision: micros\ndead_letter:\n  topic: " + dlq + "\n"
	if !strings.Contains(text, "  format_version: 2\n  timestamp_precision: micros\n") {
		t.Fatalf("the setting is not in the table section:\n%s", text)
	}

	// The records cross midnight at id 200; two of every three have
	// nanoseconds below the microsecond; the last is just before 1970.
	start := time.Date(2026, 11, 23, 23, 59, 20, 0, time.UTC)
	events := map[string]nanosEvent{}
	var msgs []kafka.Message
	var wantCut int64
	for i := range n + 1 {
		e := nanosEvent{id: int64(i), ts: start.Add(time.Duration(i)*200*time.Millisecond + time.Duration(i%5)*time.Microsecond)}
		if i%3 != 0 {
			e.ts = e.ts.Add(time.Duration(i%997 + 1))
		}
		if i == n {
			e.ts = time.Unix(0, -1).UTC()
		}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		wantCut += e.cut()
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: e.encode(false)})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	sink, stop := startSink(t, text)
	env.waitRows(t, n+1, 2*time.Minute)
	stop()
	if got := sink.Stats().Snapshot().TimestampsTruncated; got != wantCut || wantCut == 0 {
		t.Errorf("%d timestamps counted as cut, want %d", got, wantCut)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := byOffset(truth, events)
	if len(byID) != n+1 {
		t.Fatalf("%d records in the topic, want %d", len(byID), n+1)
	}

	// Every file holds ts and local in microseconds, and DuckDB reads
	// each value at its microsecond, in the folder of its day.
	checkMicrosFiles(t, env, n+1, byID)

	// iceberg-go: a version 2 table of timestamptz and timestamp; the
	// filtered scans prune and keep exactly the rows.
	tbl := env.load(t)
	if v := tbl.Metadata().Version(); v != 2 {
		t.Errorf("format version %d, want 2", v)
	}
	for col, want := range map[string]string{"ts": "timestamptz", "local": "timestamp"} {
		f, ok := tbl.Schema().FindFieldByName(col)
		if !ok || f.Type.String() != want {
			t.Errorf("table field %s: %v (found %v), want %s", col, f.Type, ok, want)
		}
	}
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	probe, cutProbe := events["k0123"].ts, events["k0124"].ts
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "ts"}, []scanCase[nanosEvent]{
		{"ts after midnight", iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())), func(e nanosEvent) bool { return !e.ts.Before(midnight) }},
		{"ts of one record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsFloor(probe))), func(e nanosEvent) bool { return microsFloor(e.ts) == microsFloor(probe) }},
		{"ts of a cut record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsFloor(cutProbe))), func(e nanosEvent) bool { return microsFloor(e.ts) == microsFloor(cutProbe) }},
		{"ts before 1970", iceberg.LessThan(iceberg.Reference("ts"), iceberg.Timestamp(0)), func(e nanosEvent) bool { return e.ts.Before(time.Unix(0, 0)) }},
	})

	// Replay from the table: every record's bytes, the timestamps floored
	// to the microsecond.
	cfgFile := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	reg.mu.Lock()
	replayID := reg.subjects["replayed-value\x00"+avroSchemaText(t, nanosSchema)]
	reg.mu.Unlock()
	want := map[string]produced{}
	for id, p := range truth {
		e := byID[id]
		_, body, _ := schemaregistry.SplitWire(e.encode(true))
		p.Value = append(schemaregistry.AppendWire(nil, uint32(replayID)), body...)
		want[id] = p
	}
	compareReplayedBytes(t, "replay from the table", want, readTopic(t, broker.Brokers, "replayed", partitions))
}

// checkMicrosFiles checks the table files of env's topic, partitioned by
// day(ts): files of at least three days, each holding ts and local as
// TIMESTAMP(MICROS), and, read by DuckDB, exactly the rows records of
// byID (by partition/offset), each at its microsecond (floored) and in the
// folder of its day.
func checkMicrosFiles(t *testing.T, env *tableEnv, rows int, byID map[string]nanosEvent) {
	t.Helper()
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*.parquet"))
	if err != nil || len(files) < 3 {
		t.Fatalf("%d files in day folders (%v), want files of three days", len(files), err)
	}
	for _, f := range files {
		s := openParquet(t, f).Schema()
		for _, col := range []string{"ts", "local"} {
			if l := s.Leaf(col).Logical; l.Kind != schema.Timestamp || l.Unit != schema.Micros {
				t.Errorf("%s: column %s is %s, want TIMESTAMP(MICROS)", filepath.Base(f), col, l)
			}
		}
	}
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o, epoch_us(ts) AS ts, epoch_us(local) AS local, filename
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, hive_partitioning = false)`)
	if len(res.Rows) != rows {
		t.Errorf("DuckDB reads %d rows, want %d", len(res.Rows), rows)
	}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		if !ok {
			t.Errorf("the files hold %s, which is not a record", key)
			continue
		}
		if got := fmt.Sprint(res.Value(i, "ts")); got != fmt.Sprint(microsFloor(e.ts)) {
			t.Errorf("%s: ts %s us, want %d (%s)", key, got, microsFloor(e.ts), e.ts.Format(time.RFC3339Nano))
		}
		wantLocal := "<nil>"
		if at, ok := e.local(); ok {
			wantLocal = fmt.Sprint(microsFloor(at))
		}
		if got := fmt.Sprint(res.Value(i, "local")); got != wantLocal {
			t.Errorf("%s: local %s us, want %s", key, got, wantLocal)
		}
		if day := e.ts.Format("2006-01-02"); !strings.Contains(fmt.Sprint(res.Value(i, "filename")), "/ts_day="+day+"/") {
			t.Errorf("%s: in %s, want the folder of %s", key, res.Value(i, "filename"), day)
		}
	}
}
