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

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// jsonNanosSchema is a schema file with nanosecond timestamps.
const jsonNanosSchema = `message ev {
  required int64 id;
  required int64 ts (TIMESTAMP(NANOS,true));
  optional int64 local (TIMESTAMP(NANOS,false));
}`

// TestTableSinkJSONNanos archives JSON records of a schema file with
// TIMESTAMP(NANOS) columns, given as numbers and as RFC 3339 strings, into
// a format version 2 table partitioned by day(ts) with
// table.timestamp_precision: micros. Without the setting the version 2
// table refuses the schema file at startup. With it: every file's columns
// are TIMESTAMP(MICROS); DuckDB reads each value floored to its
// microsecond (before 1970 too) in the folder of its day; the values with
// digits below the microsecond are counted; iceberg-go's scans filtered on
// ts prune files and return exactly the rows; a replay of the table gives
// each record's JSON with nine fraction digits, those below the
// microsecond zeros.
func TestTableSinkJSONNanos(t *testing.T) {
	const partitions, n = 2, 300
	env := newTableEnv(t, "json-nanos")
	broker := kafkatest.Start(t, partitions, env.topic, "replayed")
	text := env.config(t, broker.Brokers, "json-nanos", "1s", 100000)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["day(ts)"]`, 1)
	m := regexp.MustCompile(`schema_file: (\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no schema_file in\n%s", text)
	}
	if err := os.WriteFile(m[1], []byte(jsonNanosSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	checkTimestampsRefused(t, "file", text)
	text += "  timestamp_precision: micros\n"
	if !strings.Contains(text, "  format_version: 2\n  timestamp_precision: micros\n") {
		t.Fatalf("the setting is not in the table section:\n%s", text)
	}

	// The records cross midnight at id 200; two of every three have
	// nanoseconds below the microsecond; the last is just before 1970.
	// Odd ids give their timestamps as numbers, even ones as strings.
	start := time.Date(2026, 11, 23, 23, 59, 20, 0, time.UTC)
	events := map[string]nanosEvent{}
	replayed := map[string][]byte{}
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
		floored := func(at time.Time) time.Time { return time.Unix(0, microsFloor(at)*1000).UTC() }
		value := fmt.Sprintf(`{"id":%d,"ts":%s`, i, e.ts.Format(`"2006-01-02T15:04:05.999999999Z"`))
		if i%2 == 1 {
			value = fmt.Sprintf(`{"id":%d,"ts":%d`, i, e.ts.UnixNano())
		}
		want := fmt.Sprintf(`{"id":%d,"ts":%s`, i, floored(e.ts).Format(`"2006-01-02T15:04:05.000000000Z"`))
		if at, ok := e.local(); ok {
			want += `,"local":` + floored(at).Format(`"2006-01-02T15:04:05.000000000"`)
			if i%2 == 1 {
				value += fmt.Sprintf(`,"local":%d`, at.UnixNano())
			} else {
				value += `,"local":` + at.Format(`"2006-01-02T15:04:05.999999999"`)
			}
		}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		wantCut += e.cut()
		replayed[key] = []byte(want + "}")
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: []byte(value + "}")})
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

	checkMicrosFiles(t, env, n+1, byID)

	tbl := env.load(t)
	if v := tbl.Metadata().Version(); v != 2 {
		t.Errorf("format version %d, want 2", v)
	}
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	probe, cutProbe := events["k0123"].ts, events["k0124"].ts
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "ts"}, []scanCase[nanosEvent]{
		{"ts after midnight", iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())), func(e nanosEvent) bool { return !e.ts.Before(midnight) }},
		{"ts of a number", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsFloor(probe))), func(e nanosEvent) bool { return microsFloor(e.ts) == microsFloor(probe) }},
		{"ts of a string", iceberg.EqualTo(iceberg.Reference("ts"), iceberg.Timestamp(microsFloor(cutProbe))), func(e nanosEvent) bool { return microsFloor(e.ts) == microsFloor(cutProbe) }},
		{"ts before 1970", iceberg.LessThan(iceberg.Reference("ts"), iceberg.Timestamp(0)), func(e nanosEvent) bool { return e.ts.Before(time.Unix(0, 0)) }},
	})

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
		p.Value = replayed[string(p.Key)]
		want[id] = p
	}
	compareReplayedBytes(t, "replay from the table", want, readTopic(t, broker.Brokers, "replayed", partitions))
}
