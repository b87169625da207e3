package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/schema/avro"
)

// The writer schemas of TestTableSinkAvroPartitioned: A has region, a
// nullable string; B, registered later, drops it and adds extra. Both
// have level under two nullable records.
const (
	partIDA     = 21
	partIDB     = 22
	partSchemaA = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"long"},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"region","type":["null","string"],"default":null},
 {"name":"payload","type":["null",{"type":"record","name":"p","fields":[
   {"name":"nested","type":["null",{"type":"record","name":"n","fields":[{"name":"level","type":"int"}]}],"default":null}]}],"default":null}]}`
	partSchemaB = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"long"},
 {"name":"extra","type":"string","default":""},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"payload","type":["null",{"type":"record","name":"p","fields":[
   {"name":"nested","type":["null",{"type":"record","name":"n","fields":[{"name":"level","type":"int"}]}],"default":null}]}],"default":null}]}`
)

// partEvent is one record of the test's stream.
type partEvent struct {
	schema int // partIDA or partIDB
	id     int64
	ts     time.Time
	region string // "" for null (always with B)
	level  int    // -1 for a null payload, -2 for a null nested, else the level
}

func (e partEvent) encode() []byte {
	b := schemaregistry.AppendWire(nil, uint32(e.schema))
	b = avro.AppendLong(b, e.id)
	if e.schema == partIDB {
		b = append(avro.AppendLong(b, 3), "xyz"...)
	}
	b = avro.AppendLong(b, e.ts.UnixMicro())
	if e.schema == partIDA {
		if e.region == "" {
			b = avro.AppendLong(b, 0)
		} else {
			b = avro.AppendLong(b, 1)
			b = append(avro.AppendLong(b, int64(len(e.region))), e.region...)
		}
	}
	switch e.level {
	case -1:
		return avro.AppendLong(b, 0)
	case -2:
		return avro.AppendLong(avro.AppendLong(b, 1), 0)
	}
	return avro.AppendLong(avro.AppendLong(avro.AppendLong(b, 1), 1), int64(e.level))
}

// TestTableSinkAvroPartitioned archives an Avro topic into a table
// partitioned by day of a timestamp-micros field, bucket[2] of a long,
// identity of a nullable string and identity of an int below two nullable
// records, with two writer schemas mid-stream (B drops region: its
// records are in region's null partition), across a restart, with two
// records that do not decode as far as the fields (dead-lettered with
// reason decode); with schema_compatibility none and backward (where the
// A records after B must not be resolved onto B, which would drop their
// region). DuckDB reads every data file: every good record once, each in
// the folders its values say and with the values its folders say.
// iceberg-go's scans filtered on the partitioned columns prune files and
// return exactly the matching rows.
func TestTableSinkAvroPartitioned(t *testing.T) {
	for _, compat := range []string{"none", "backward"} {
		t.Run(compat, func(t *testing.T) { testAvroPartitioned(t, compat) })
	}
}

func testAvroPartitioned(t *testing.T, compat string) {
	const partitions, n = 2, 600
	env := newTableEnv(t, "avro-parted-"+compat)
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq)
	reg := &testRegistry{schemas: map[int]string{partIDA: partSchemaA, partIDB: partSchemaB}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-parted", "1s", 100000) + "dead_letter:\n  topic: " + dlq + "\n"
	text = strings.Replace(text, "registry: {url:", "schema_compatibility: "+compat+"\n  registry: {url:", 1)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["day(ts)", "bucket[2](id)", "identity(region)", "identity(payload.nested.level)"]`, 1)

	// The records cross midnight at id 300; B writes ids 250 to 449.
	start := time.Date(2026, 11, 23, 23, 59, 0, 0, time.UTC)
	events := map[string]partEvent{}
	var msgs []kafka.Message
	for i := range n {
		e := partEvent{schema: partIDA, id: int64(i), ts: start.Add(time.Duration(i) * 200 * time.Millisecond), level: 1 + i%2}
		if i >= 250 && i < 450 {
			e.schema = partIDB
		} else if i%2 == 0 {
			e.region = "eu"
		}
		switch i % 5 {
		case 0:
			e.level = -1
		case 1:
			e.level = -2
		}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: e.encode()})
	}
	bad := partEvent{schema: partIDA, id: 7, ts: start}.encode()
	poison := []kafka.Message{
		// region's union branch 5 of 2.
		{Key: []byte("poison-branch"), Value: append(avro.AppendLong(avro.AppendLong(schemaregistry.AppendWire(nil, partIDA), 7), start.UnixMicro()), 10)},
		// cut short after id.
		{Key: []byte("poison-cut"), Value: bad[:6]},
	}
	produce := func(m []kafka.Message) {
		w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
		defer w.Close()
		if err := w.WriteMessages(context.Background(), m...); err != nil {
			t.Fatal(err)
		}
	}

	// The first half, then a restart, then the rest.
	produce(append(msgs[:300:300], poison[0]))
	_, stop := startSink(t, text)
	env.waitRows(t, 300, 2*time.Minute)
	stop()
	produce(append(msgs[300:], poison[1]))
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	waitRejected(t, sink, stop, 1)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := byOffset(truth, events)

	// Both poison records are dead letters, with reason decode.
	letters := readTopic(t, broker.Brokers, dlq, partitions)
	if len(letters) != 2 {
		t.Errorf("%d dead letters, want 2", len(letters))
	}
	for _, l := range letters {
		h := decodeHeaders(t, l.Headers)
		if h["pqsink.reason"] != "decode" || !strings.Contains(h["pqsink.error"], "avro record") {
			t.Errorf("dead letter %s: reason %q, error %q; want decode", l.Key, h["pqsink.reason"], h["pqsink.error"])
		}
	}

	// DuckDB reads every file: each record once, in its folders.
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*", "*", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in four partition folders (%v)", err)
	}
	folders := regexp.MustCompile(`/data/ts_day=(2026-11-2[34])/id_bucket=([01])/region=([^/]+)/payload_nested_level=([^/]+)/[^/]+$`)
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT filename, "_kafka"."partition" AS p, "_kafka"."offset" AS o, id, strftime(ts, '%Y-%m-%d') AS day, region, payload.nested.level AS level
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, union_by_name = true, hive_partitioning = false)`)
	bucket := func(id int64) string {
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 2}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(id), Valid: true}).Val.Any())
	}
	const null = "__HIVE_DEFAULT_PARTITION__"
	seen := map[string]bool{}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		switch {
		case !ok:
			t.Errorf("the files hold %s, which is not a good record", key)
			continue
		case seen[key]:
			t.Errorf("%s is in the files twice", key)
		}
		seen[key] = true
		m := folders.FindStringSubmatch(filepath.ToSlash(fmt.Sprint(res.Value(i, "filename"))))
		if m == nil {
			t.Errorf("%s: file %s is not in four partition folders", key, res.Value(i, "filename"))
			continue
		}
		region, level := null, null
		if e.region != "" {
			region = e.region
		}
		if e.level >= 0 {
			level = fmt.Sprint(e.level)
		}
		want := []string{e.ts.Format("2006-01-02"), bucket(e.id), region, level}
		if got := m[1:]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s (id %d) is in folders %q, want %q", key, e.id, got, want)
		}
		// The file's columns hold the values of its folders.
		col := []string{fmt.Sprint(res.Value(i, "day")), "", fmt.Sprint(res.Value(i, "region")), fmt.Sprint(res.Value(i, "level"))}
		if col[2] == "<nil>" {
			col[2] = null
		}
		if col[3] == "<nil>" {
			col[3] = null
		}
		if col[0] != m[1] || col[2] != m[3] || col[3] != m[4] || fmt.Sprint(res.Value(i, "id")) != fmt.Sprint(e.id) {
			t.Errorf("%s: columns %q id %v in folders %q", key, col, res.Value(i, "id"), m[1:])
		}
	}
	if len(seen) != n {
		t.Errorf("the files hold %d distinct records, want %d", len(seen), n)
	}

	// iceberg-go: filtered scans prune by the partition values committed
	// and return exactly the matching rows.
	tbl := env.load(t)
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(files) {
		t.Errorf("the table has %d files, the data folder %d", len(all), len(files))
	}
	midnight := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "region"}, []scanCase[partEvent]{
		{"region = eu", iceberg.EqualTo(iceberg.Reference("region"), "eu"), func(e partEvent) bool { return e.region == "eu" }},
		{"region is null", iceberg.IsNull(iceberg.Reference("region")), func(e partEvent) bool { return e.region == "" }},
		{"level = 2", iceberg.EqualTo(iceberg.Reference("payload.nested.level"), int32(2)), func(e partEvent) bool { return e.level == 2 }},
		{"level is null", iceberg.IsNull(iceberg.Reference("payload.nested.level")), func(e partEvent) bool { return e.level < 0 }},
		{"id = 17", iceberg.EqualTo(iceberg.Reference("id"), int64(17)), func(e partEvent) bool { return e.id == 17 }},
		{"ts after midnight and region = eu", iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("ts"), iceberg.Timestamp(midnight.UnixMicro())), iceberg.EqualTo(iceberg.Reference("region"), "eu")),
			func(e partEvent) bool { return !e.ts.Before(midnight) && e.region == "eu" }},
	})
}

// TestTableSinkAvroPartitionedKilled kills `pqsink run` after it uploaded
// files of a table partitioned by Avro payload fields and before its
// table commit, then runs it again: reading the same offsets, the next
// run computes the same partition values, so the same keys, finds the
// uploaded objects there, adopts them and commits them, every record
// once.
func TestTableSinkAvroPartitionedKilled(t *testing.T) {
	const partitions, n = 2, 2000
	env := newTableEnv(t, "avro-parted-killed")
	broker := kafkatest.Start(t, partitions, env.topic)
	reg := &testRegistry{schemas: map[int]string{partIDA: partSchemaA, partIDB: partSchemaB}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	config := func(commit string) string {
		text := env.config(t, broker.Brokers, "avro-parted-killed", commit, 50)
		return strings.Replace(text, `["day(_kafka.timestamp)"]`, `["bucket[2](id)", "identity(region)", "identity(payload.nested.level)"]`, 1)
	}
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range n {
		e := partEvent{schema: partIDA, id: int64(i), ts: start.Add(time.Duration(i) * time.Millisecond), level: i % 3}
		if i%4 == 3 {
			e.schema = partIDB
		} else if i%2 == 0 {
			e.region = "eu"
		}
		if i%5 == 0 {
			e.level = -1
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%04d", i)), Value: e.encode()})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	p := startSinkProcess(t, "sink-uncommitted", config("10m"))
	p.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(p.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	p.kill(t)
	if rows := env.scan(t); len(rows) != 0 {
		t.Fatalf("the table holds %d rows before any commit", len(rows))
	}
	last := startSinkProcess(t, "sink-after", config("1s"))
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 2*time.Minute)
	last.terminate(t, 30*time.Second)
	if !strings.Contains(last.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	seen := map[string]int{}
	for _, r := range env.scan(t) {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		seen[id]++
		if p, ok := truth[id]; !ok || string(p.Key) != fmt.Sprintf("k%04d", r.id) {
			t.Errorf("the table holds %s with id %d, which Kafka does not", id, r.id)
		} else if seen[id] > 1 {
			t.Errorf("%s is in the table %d times", id, seen[id])
		}
	}
	if len(seen) != n {
		t.Errorf("the table holds %d distinct records, want %d", len(seen), n)
	}
}
