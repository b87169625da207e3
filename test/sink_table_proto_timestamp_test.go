package test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// tsProto is the message of TestTableSinkProtobufTimestampMicros: a
// Timestamp always set, an optional one, and a repeated one.
const tsProto = `syntax = "proto3";
package pqsink.ts;
import "google/protobuf/timestamp.proto";
message Ev {
  int64 id = 1;
  google.protobuf.Timestamp ts = 2;
  google.protobuf.Timestamp seen = 3;
  repeated google.protobuf.Timestamp marks = 4;
}
`

// tsEvent is one record of tsProto; seen is unset when id%4 == 3.
type tsEvent struct {
	id    int64
	ts    time.Time
	marks []time.Time
}

func (e tsEvent) seen() (time.Time, bool) { return e.ts.Add(time.Hour), e.id%4 != 3 }

// encode writes the message; with micros, each Timestamp's nanoseconds
// cut to the microsecond, as a replay from the table gives it back.
func (e tsEvent) encode(micros bool) []byte {
	stamp := func(b []byte, num protowire.Number, at time.Time) []byte {
		secs, nanos := at.Unix(), int64(at.Nanosecond())
		if micros {
			nanos -= nanos % 1000
		}
		var m []byte
		if secs != 0 {
			m = protowire.AppendVarint(protowire.AppendTag(m, 1, protowire.VarintType), uint64(secs))
		}
		if nanos != 0 {
			m = protowire.AppendVarint(protowire.AppendTag(m, 2, protowire.VarintType), uint64(nanos))
		}
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	var b []byte
	if e.id != 0 { // proto3: the default is left out
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(e.id))
	}
	b = stamp(b, 2, e.ts)
	if at, ok := e.seen(); ok {
		b = stamp(b, 3, at)
	}
	for _, m := range e.marks {
		b = stamp(b, 4, m)
	}
	return b
}

// cut counts the event's Timestamps finer than a microsecond.
func (e tsEvent) cut() int64 {
	n := int64(0)
	all := append([]time.Time{e.ts}, e.marks...)
	if at, ok := e.seen(); ok {
		all = append(all, at)
	}
	for _, at := range all {
		if at.Nanosecond()%1000 != 0 {
			n++
		}
	}
	return n
}

// microsOf is the microseconds since the epoch of at, floored.
func microsOf(at time.Time) int64 {
	return at.Unix()*1_000_000 + int64(at.Nanosecond()/1000)
}

// TestTableSinkProtobufTimestampMicros archives Protobuf records with
// google.protobuf.Timestamp fields into a format version 2 table
// partitioned by day(ts), with table.timestamp_precision: micros, with
// format.proto_file and with a registry. Without the setting, the v2
// table refuses the message (timestamptz_ns is a version 3 type). With
// it: every file's Timestamp columns are TIMESTAMP(MICROS,true) and the
// table's fields timestamptz; DuckDB reads each value at its microsecond,
// in the folder of its day, years 1500 and 3000 (beyond 64-bit
// nanoseconds) included; the Timestamps finer than a microsecond are
// counted; iceberg-go's scans filtered on ts prune files and return
// exactly the matching rows; a Timestamp that is not valid is a dead
// letter; and a replay from the table gives every record's bytes back,
// those with finer Timestamps with their nanoseconds cut.
func TestTableSinkProtobufTimestampMicros(t *testing.T) {
	for _, mode := range []string{"file", "registry"} {
		t.Run(mode, func(t *testing.T) { testProtoTimestampMicros(t, mode) })
	}
}

func testProtoTimestampMicros(t *testing.T, mode string) {
	const partitions, n, schemaID = 2, 400, 43
	env := newTableEnv(t, "proto-ts-"+mode)
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq, "replayed", env.topic+"-ns")

	format := ""
	switch mode {
	case "file":
		path := filepath.Join(t.TempDir(), "ts.proto")
		if err := os.WriteFile(path, []byte(tsProto), 0o644); err != nil {
			t.Fatal(err)
		}
		format = fmt.Sprintf("format:\n  type: protobuf\n  proto_file: %s\n  message: pqsink.ts.Ev\n", path)
	case "registry":
		reg := &testRegistry{schemas: map[int]string{}, gets: map[int]int{}, answers: map[string]any{
			fmt.Sprintf("/schemas/ids/%d", schemaID): map[string]any{"schemaType": "PROTOBUF", "schema": tsProto},
		}}
		srv := httptest.NewServer(reg)
		t.Cleanup(srv.Close)
		format = fmt.Sprintf("format:\n  type: protobuf\n  registry: {url: %q, timeout: 2s}\n", srv.URL)
	}
	frame := func(body []byte) []byte {
		if mode == "registry" {
			return append(protobuf.AppendWire(nil, schemaID, []int{0}), body...)
		}
		return body
	}
	c := sinkConfig{
		brokers: broker.Brokers, group: "proto-ts", topic: env.topic, storeURL: env.warehouse,
		format: "protobuf", envelope: true, records: 100000, interval: "500ms", noPath: true,
		extra: fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: 1s
  partition_by: ["day(ts)"]
  format_version: 2
  timestamp_precision: micros
dead_letter:
  topic: %s
`, env.uri, dlq),
	}
	text := strings.Replace(c.yaml(t), "format:\n  type: protobuf\n", format, 1)

	// Without timestamp_precision, a format version 2 table has no type
	// for the Timestamps, and says so: a topic and group of their own,
	// errors: fail.
	refused := strings.Replace(text, "  timestamp_precision: micros\n", "", 1)
	refused = strings.Replace(refused, "topics: ["+env.topic+"]", "topics: ["+env.topic+"-ns]", 1)
	refused = strings.Replace(refused, "group: proto-ts\n", "group: proto-ts-ns\n", 1)
	refused = strings.Replace(refused, "dead_letter:\n  topic: "+dlq+"\n", "", 1)
	produceValues(t, broker.Brokers, env.topic+"-ns", [][]byte{frame(tsEvent{id: 1, ts: time.Unix(1, 5)}.encode(false))}, nil)
	checkTimestampsRefused(t, mode, refused)

	// The records cross midnight at id 200; every third has nanoseconds
	// below the microsecond; two are in years 64-bit nanoseconds cannot
	// hold.
	start := time.Date(2026, 11, 23, 23, 59, 20, 0, time.UTC)
	events := map[string]tsEvent{}
	var values [][]byte
	for i := range n + 2 {
		e := tsEvent{id: int64(i), ts: start.Add(time.Duration(i)*200*time.Millisecond + time.Duration(i%5)*time.Microsecond)}
		switch i {
		case n:
			e.ts = time.Date(1500, 6, 1, 12, 0, 0, 500, time.UTC)
		case n + 1:
			e.ts = time.Date(3000, 1, 1, 0, 0, 0, 1000, time.UTC)
		}
		if i%3 == 0 {
			e.ts = e.ts.Add(time.Duration(i%997 + 1))
		}
		if i%6 == 0 {
			e.marks = []time.Time{e.ts.Add(-time.Duration(i) * time.Millisecond), e.ts.Add(123)}
		}
		events[fmt.Sprintf("k%04d", i)] = e
		values = append(values, frame(e.encode(false)))
	}
	// A Timestamp whose nanos is 1e9: not valid.
	bad := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1_000_000_000)
	poison := [][]byte{frame(protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), bad))}
	produceValues(t, broker.Brokers, env.topic, values, poison)

	sink, stop := startSink(t, text)
	env.waitRows(t, len(values), 2*time.Minute)
	deadline := time.Now().Add(time.Minute)
	for sink.Stats().Snapshot().Rejected < 1 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := map[string]tsEvent{}
	var wantCut int64
	for id, p := range truth {
		if e, ok := events[string(p.Key)]; ok {
			byID[id] = e
			wantCut += e.cut()
		}
	}
	if got := sink.Stats().Snapshot().TimestampsTruncated; got != wantCut || wantCut == 0 {
		t.Errorf("%d Timestamps counted as cut, want %d", got, wantCut)
	}
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != 1 {
		t.Errorf("%d dead letters, want 1", len(letters))
	}
	for _, l := range letters {
		h := decodeHeaders(t, l.Headers)
		if string(l.Key) != "poison-0" || h["pqsink.reason"] != "decode" || !strings.Contains(h["pqsink.error"], "ts: timestamp 0s 1000000000ns is not valid") {
			t.Errorf("dead letter %s: reason %q, error %q; want poison-0, decode, not valid", l.Key, h["pqsink.reason"], h["pqsink.error"])
		}
	}

	// Every file holds its Timestamps in microseconds.
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*.parquet"))
	if err != nil || len(files) < 4 {
		t.Fatalf("%d files in day folders (%v), want files of four days", len(files), err)
	}
	for _, f := range files {
		s := openParquet(t, f).Schema()
		for _, col := range []string{"ts", "seen", "marks.list.element"} {
			l := s.Leaf(col).Logical
			if l.Kind != schema.Timestamp || l.Unit != schema.Micros || !l.UTC {
				t.Errorf("%s: column %s is %s, want TIMESTAMP(MICROS,true)", filepath.Base(f), col, l)
			}
		}
	}

	// DuckDB reads each value at its microsecond, in the folder of its day.
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o, epoch_us(ts) AS ts, epoch_us(seen) AS seen,
		list_transform(marks, m -> epoch_us(m)) AS marks, filename
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, hive_partitioning = false)`)
	if len(res.Rows) != len(byID) {
		t.Errorf("DuckDB reads %d rows, want %d", len(res.Rows), len(byID))
	}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		if !ok {
			t.Errorf("the files hold %s, which is not a good record", key)
			continue
		}
		if got := fmt.Sprint(res.Value(i, "ts")); got != fmt.Sprint(microsOf(e.ts)) {
			t.Errorf("%s: ts %s us, want %d (%s)", key, got, microsOf(e.ts), e.ts.Format(time.RFC3339Nano))
		}
		wantSeen := "<nil>"
		if at, ok := e.seen(); ok {
			wantSeen = fmt.Sprint(microsOf(at))
		}
		if got := fmt.Sprint(res.Value(i, "seen")); got != wantSeen {
			t.Errorf("%s: seen %s us, want %s", key, got, wantSeen)
		}
		var wantMarks []any
		for _, m := range e.marks {
			wantMarks = append(wantMarks, microsOf(m))
		}
		if got, want := fmt.Sprint(res.Value(i, "marks")), fmt.Sprint(wantMarks); got != want && !(len(wantMarks) == 0 && got == "[]") {
			t.Errorf("%s: marks %s, want %s", key, got, want)
		}
		if day := e.ts.Format("2006-01-02"); !strings.Contains(fmt.Sprint(res.Value(i, "filename")), "/ts_day="+day+"/") {
			t.Errorf("%s: in %s, want the folder of %s", key, res.Value(i, "filename"), day)
		}
	}

	// iceberg-go: a version 2 table of timestamptz; the filtered scans
	// prune and keep exactly the rows.
	tbl := env.load(t)
	if v := tbl.Metadata().Version(); v != 2 {
		t.Errorf("format version %d, want 2", v)
	}
	for _, col := range []string{"ts", "seen", "marks.element"} {
		f, ok := tbl.Schema().FindFieldByName(col)
		if !ok || f.Type.String() != "timestamptz" {
			t.Errorf("table field %s: %v (found %v), want timestamptz", col, f.Type, ok)
		}
	}
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	probe := events["k0123"].ts // a whole microsecond
	cutProbe := events["k0126"].ts
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "ts"}, []scanCase[tsEvent]{
		{"ts after midnight", iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())),
			func(e tsEvent) bool { return !e.ts.Before(midnight) }},
		{"ts of one record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsOf(probe))), func(e tsEvent) bool { return microsOf(e.ts) == microsOf(probe) }},
		{"ts of a cut record", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsOf(cutProbe))), func(e tsEvent) bool { return microsOf(e.ts) == microsOf(cutProbe) }},
		{"ts before 1970", iceberg.LessThan(iceberg.Reference("ts"), iceberg.Timestamp(0)), func(e tsEvent) bool { return e.ts.Unix() < 0 }},
	})

	// Replay from the table: every record's bytes, with the Timestamps
	// finer than a microsecond cut.
	cfgFile := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	want := map[string]produced{}
	for id, p := range truth {
		e, ok := byID[id]
		if !ok {
			continue
		}
		p.Value = frame(e.encode(true))
		want[id] = p
	}
	compareReplayedBytes(t, "replay from the table", want, readTopic(t, broker.Brokers, "replayed", partitions))
	if len(want) != n+2 {
		t.Errorf("%d good records, want %d", len(want), n+2)
	}
}

// checkTimestampsRefused runs a sink of text, whose table is format
// version 2 without timestamp_precision: micros, and checks that the
// table refuses the Timestamps: with proto_file the sink does not start,
// with a registry the record is rejected with reason schema (errors:
// fail stops the partition), naming the version 3 type and the setting.
func checkTimestampsRefused(t *testing.T, mode, text string) {
	t.Helper()
	const refusal = "field ts: TIMESTAMP(NANOS) is Iceberg's timestamptz_ns, which needs table.format_version 3 (table.timestamp_precision: micros"
	cfg, err := config.Parse([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(logTail(t, "refused"), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sink, err := connector.New(ctx, cfg, log)
	if mode == "file" {
		if err == nil {
			sink.Close()
			t.Fatal("a v2 table of Timestamps in nanoseconds: the sink started")
		}
		if !strings.Contains(err.Error(), refusal) {
			t.Errorf("a v2 table of Timestamps in nanoseconds: %v, want an error with %q", err, refusal)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && len(sink.Failed()) == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	failed := sink.Failed()
	cancel()
	<-done
	sink.Close()
	if got := sink.Stats().Snapshot().Rejects[[2]string{"schema", "fail"}]; got != 1 {
		t.Errorf("a v2 table of Timestamps in nanoseconds: %d records rejected with reason schema, want 1", got)
	}
	if len(failed) != 1 {
		t.Fatalf("%d partitions stopped, want 1: %v", len(failed), failed)
	}
	for _, err := range failed {
		if !strings.Contains(err.Error(), refusal) {
			t.Errorf("the stopped partition: %v, want an error with %q", err, refusal)
		}
	}
}
