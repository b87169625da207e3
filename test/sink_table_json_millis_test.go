package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// jsonMillisSchema is a schema file with millisecond timestamps and a
// millisecond time of day.
const jsonMillisSchema = `message ev {
  required int64 id;
  required int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 local (TIMESTAMP(MILLIS,false));
  optional int32 tod (TIME(MILLIS,true));
}`

// TestTableSinkJSONMillis archives JSON records of a schema file with
// TIMESTAMP(MILLIS) columns into a table partitioned by day(ts), their
// timestamps given as numbers of milliseconds and as RFC 3339 strings,
// and a TIME(MILLIS) column, which Iceberg's time (microseconds) cannot
// take as it is.
// Iceberg's timestamps are microseconds in Parquet, and engines misread a
// millisecond column (table.TestMillisTimestampColumn), so the table's
// files hold those columns as TIMESTAMP(MICROS) (and the time of day as
// TIME(MICROS)): every file's schema says so, DuckDB reads each value at
// its instant in the folder of its day,
// iceberg-go's scans filtered on ts prune files and return exactly the
// matching rows, a number of milliseconds microseconds cannot hold is a
// dead letter, and a replay of the table gives each record's JSON with
// the schema file's milliseconds, as a replay of files without a table
// renders them.
func TestTableSinkJSONMillis(t *testing.T) {
	const partitions, n = 2, 400
	env := newTableEnv(t, "json-millis")
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq, "replayed")
	text := env.config(t, broker.Brokers, "json-millis", "1s", 100000) + "dead_letter:\n  topic: " + dlq + "\n"
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["day(ts)"]`, 1)
	m := regexp.MustCompile(`schema_file: (\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no schema_file in\n%s", text)
	}
	if err := os.WriteFile(m[1], []byte(jsonMillisSchema), 0o644); err != nil {
		t.Fatal(err)
	}

	// The records cross midnight at id 200; odd ids give their
	// timestamps as numbers, even ones as strings, and local is absent
	// when id%4 == 3. replayed is each record's JSON as replay renders it.
	start := time.Date(2026, 11, 23, 23, 59, 20, 0, time.UTC)
	events := map[string]millisEvent{}
	replayed := map[string][]byte{}
	var msgs []kafka.Message
	for i := range n {
		e := millisEvent{id: int64(i), ts: start.Add(time.Duration(i)*200*time.Millisecond + time.Duration(i%7)*time.Millisecond)}
		local := e.ts.Add(time.Hour)
		tsText, localText := e.ts.Format(`"2006-01-02T15:04:05.000Z"`), local.Format(`"2006-01-02T15:04:05.000"`)
		want := fmt.Sprintf(`{"id":%d,"ts":%s`, i, tsText)
		value := want
		if i%2 == 1 {
			value = fmt.Sprintf(`{"id":%d,"ts":%d`, i, e.ts.UnixMilli())
		}
		if i%4 != 3 {
			want += `,"local":` + localText
			if i%2 == 1 {
				value += fmt.Sprintf(`,"local":%d`, local.UnixMilli())
			} else {
				value += `,"local":` + localText
			}
		}
		if i%5 != 4 {
			tod := time.Duration(e.ts.UnixMilli()%86_400_000) * time.Millisecond
			want += `,"tod":` + time.Unix(0, 0).UTC().Add(tod).Format(`"15:04:05.000"`)
			if i%2 == 1 {
				value += fmt.Sprintf(`,"tod":%d`, tod.Milliseconds())
			} else {
				value += `,"tod":` + time.Unix(0, 0).UTC().Add(tod).Format(`"15:04:05.000Z"`)
			}
		}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		replayed[key] = []byte(want + "}")
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: []byte(value + "}")})
	}
	// A number of milliseconds one past what microseconds hold.
	msgs = append(msgs, kafka.Message{Key: []byte("poison-huge"), Value: fmt.Appendf(nil, `{"id":9999,"ts":%d}`, int64(9223372036854776))})
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
	if len(byID) != n {
		t.Fatalf("%d good records in the topic, want %d", len(byID), n)
	}
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != 1 {
		t.Errorf("%d dead letters, want 1", len(letters))
	}
	for _, l := range letters {
		h := decodeHeaders(t, l.Headers)
		if string(l.Key) != "poison-huge" || !strings.Contains(h["pqsink.error"], "out of the range of the table's microsecond column") {
			t.Errorf("dead letter %s: reason %q, error %q; want poison-huge, out of the range", l.Key, h["pqsink.reason"], h["pqsink.error"])
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
		if l := s.Leaf("tod"); l.Logical.Kind != schema.Time || l.Logical.Unit != schema.Micros || l.Physical != meta.TypeInt64 {
			t.Errorf("%s: column tod is %s %s, want INT64 TIME(MICROS)", filepath.Base(f), l.Physical, l.Logical)
		}
	}

	// DuckDB reads each value at its instant, in the folder of its day.
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o, epoch_ms(ts) AS ts, epoch_ms(local) AS local, epoch_ms(DATE '1970-01-01' + tod) AS tod, filename
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
		wantTod := fmt.Sprint(e.ts.UnixMilli() % 86_400_000)
		if e.id%5 == 4 {
			wantTod = "<nil>"
		}
		if got := fmt.Sprint(res.Value(i, "tod")); got != wantTod {
			t.Errorf("%s: tod %s ms, want %s", key, got, wantTod)
		}
		if day := e.ts.Format("2006-01-02"); !strings.Contains(fmt.Sprint(res.Value(i, "filename")), "/ts_day="+day+"/") {
			t.Errorf("%s: in %s, want the folder of %s", key, res.Value(i, "filename"), day)
		}
	}

	// iceberg-go: the table's time field; the filtered scans prune and
	// keep exactly the rows.
	tbl := env.load(t)
	if f, ok := tbl.Schema().FindFieldByName("tod"); !ok || f.Type.String() != "time" {
		t.Errorf("table field tod: %v (found %v), want time", f.Type, ok)
	}
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	probe, probeOdd := events["k0123"].ts, events["k0124"].ts
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "ts"}, []scanCase[millisEvent]{
		{"ts after midnight", iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())), func(e millisEvent) bool { return !e.ts.Before(midnight) }},
		{"ts of one record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(probe.UnixMicro())), func(e millisEvent) bool { return e.ts.Equal(probe) }},
		{"ts of a string", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(probeOdd.UnixMicro())), func(e millisEvent) bool { return e.ts.Equal(probeOdd) }},
	})

	// Replay: each record's JSON with the schema file's milliseconds.
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
		if v, ok := replayed[string(p.Key)]; ok {
			p.Value = v
			good[id] = p
		}
	}
	compareReplayedBytes(t, "replay from the table", good, readTopic(t, broker.Brokers, "replayed", partitions))
}
