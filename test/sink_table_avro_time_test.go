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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// timeSchema has Avro's time of day in milliseconds: a time-millis, a
// nullable one and an array of them.
const (
	timeID     = 32
	timeSchema = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"long"},
 {"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"maybe","type":["null",{"type":"int","logicalType":"time-millis"}],"default":null},
 {"name":"many","type":{"type":"array","items":{"type":"int","logicalType":"time-millis"}}}]}`
)

// timeEvent is a record of timeSchema: tod in milliseconds after
// midnight; maybe is null when id%4 == 3, else tod's mirror in the day;
// many is tod and the last millisecond of the day.
type timeEvent struct {
	id  int64
	tod int64
}

const lastMilli = 86_399_999

func (e timeEvent) maybe() (int64, bool) { return lastMilli - e.tod, e.id%4 != 3 }

func (e timeEvent) encode() []byte {
	b := schemaregistry.AppendWire(nil, timeID)
	b = avro.AppendLong(b, e.id)
	b = avro.AppendLong(b, e.tod)
	if m, ok := e.maybe(); ok {
		b = avro.AppendLong(avro.AppendLong(b, 1), m)
	} else {
		b = avro.AppendLong(b, 0)
	}
	b = avro.AppendLong(avro.AppendLong(avro.AppendLong(b, 2), e.tod), lastMilli)
	return append(b, 0)
}

// TestTableSinkAvroTimeMillis archives Avro records with time-millis
// fields into a table partitioned by bucket[4](tod). Iceberg's time is
// microseconds in an INT64, which Avro's time-millis (Parquet's INT32
// TIME(MILLIS)) is not: the table's files hold those columns as INT64
// TIME(MICROS) (a table refused the schema before). Every file's schema
// says so, the table's fields are times, DuckDB and iceberg-go read each
// value as its time of day, iceberg-go's scan of one time prunes by the
// bucket and returns exactly its rows, and a replay of the table
// produces the original Avro bytes (milliseconds again).
func TestTableSinkAvroTimeMillis(t *testing.T) {
	const partitions, n = 2, 400
	env := newTableEnv(t, "avro-time")
	broker := kafkatest.Start(t, partitions, env.topic, "replayed")
	reg := &replayRegistry{schemas: map[int]string{timeID: timeSchema}, subjects: map[string]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-time", "1s", 100000)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["bucket[4](tod)"]`, 1)

	events := map[string]timeEvent{}
	var msgs []kafka.Message
	for i := range n {
		// Spread over the day, its first and last milliseconds included.
		e := timeEvent{id: int64(i), tod: int64(i) * 216_541 % (lastMilli + 1)}
		if i == n-1 {
			e.tod = lastMilli
		}
		key := fmt.Sprintf("k%04d", i)
		events[key] = e
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: e.encode()})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	if r := sink.Stats().Snapshot().Rejected; r != 0 {
		t.Errorf("%d records rejected, want none", r)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	byID := byOffset(truth, events)

	// Every file holds the times in INT64 microseconds.
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*.parquet"))
	if err != nil || len(files) < 2 {
		t.Fatalf("%d files in bucket folders (%v), want several", len(files), err)
	}
	for _, f := range files {
		s := openParquet(t, f).Schema()
		for _, col := range []string{"tod", "maybe", "many.list.element"} {
			l := s.Leaf(col)
			if l.Physical != meta.TypeInt64 || l.Logical.Kind != schema.Time || l.Logical.Unit != schema.Micros {
				t.Errorf("%s: column %s is %s %s, want INT64 TIME(MICROS)", filepath.Base(f), col, l.Physical, l.Logical)
			}
		}
	}

	// DuckDB reads each value as its time of day.
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o,
		epoch_ms(DATE '1970-01-01' + tod) AS tod, epoch_ms(DATE '1970-01-01' + maybe) AS maybe,
		len(many) AS n, epoch_ms(DATE '1970-01-01' + many[1]) AS m1, epoch_ms(DATE '1970-01-01' + many[2]) AS m2
		FROM read_parquet(`+duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, hive_partitioning = false)`)
	if len(res.Rows) != n {
		t.Errorf("DuckDB reads %d rows, want %d", len(res.Rows), n)
	}
	for i := range res.Rows {
		key := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		e, ok := byID[key]
		if !ok {
			t.Errorf("the files hold %s, which is not a record of the topic", key)
			continue
		}
		wantMaybe := "<nil>"
		if m, ok := e.maybe(); ok {
			wantMaybe = fmt.Sprint(m)
		}
		got := fmt.Sprintf("%v %v %v %v %v", res.Value(i, "tod"), res.Value(i, "maybe"), res.Value(i, "n"), res.Value(i, "m1"), res.Value(i, "m2"))
		if want := fmt.Sprintf("%d %s 2 %d %d", e.tod, wantMaybe, e.tod, lastMilli); got != want {
			t.Errorf("%s: tod, maybe, len(many), many = %s ms, want %s", key, got, want)
		}
	}

	// iceberg-go: the table's fields are times, each value its time of
	// day; a scan of one time prunes by the bucket and keeps its rows.
	tbl := env.load(t)
	for _, name := range []string{"tod", "maybe"} {
		if f, ok := tbl.Schema().FindFieldByName(name); !ok || f.Type.String() != "time" {
			t.Errorf("table field %s: %v (found %v), want time", name, f.Type, ok)
		}
	}
	if got := scanTimes(t, tbl.Scan(itable.WithSelectedFields("_kafka.partition", "_kafka.offset", "tod"))); len(got) != n {
		t.Errorf("iceberg-go reads %d rows, want %d", len(got), n)
	} else {
		for id, us := range got {
			if e := byID[id]; us != e.tod*1000 {
				t.Errorf("%s: iceberg-go reads tod %d µs, want %d", id, us, e.tod*1000)
			}
		}
	}
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	probe := events["k0123"].tod
	checkFilteredScans(t, tbl, len(all), byID, []string{"id", "tod"}, []scanCase[timeEvent]{
		{"tod of one record", iceberg.EqualTo(iceberg.Reference("tod"), iceberg.Time(probe*1000)), func(e timeEvent) bool { return e.tod == probe }},
		{"the last millisecond", iceberg.EqualTo(iceberg.Reference("tod"), iceberg.Time(lastMilli*1000)), func(e timeEvent) bool { return e.tod == lastMilli }},
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
	reg.mu.Lock()
	replayID := reg.subjects["replayed-value\x00"+avroSchemaText(t, timeSchema)]
	reg.mu.Unlock()
	compareReplayed(t, truth, readTopic(t, broker.Brokers, "replayed", partitions), replayID)
}

// scanTimes runs scan, which selects _kafka.partition, _kafka.offset and
// tod, and returns each row's tod in microseconds by "partition/offset".
func scanTimes(t *testing.T, scan *itable.Scan) map[string]int64 {
	t.Helper()
	at, err := scan.ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scanning: %v", err)
	}
	defer at.Release()
	kidx, tidx := at.Schema().FieldIndices("_kafka"), at.Schema().FieldIndices("tod")
	if len(kidx) != 1 || len(tidx) != 1 {
		t.Fatalf("scan: schema %v", at.Schema())
	}
	if typ := at.Schema().Field(tidx[0]).Type; !arrow.TypeEqual(typ, arrow.FixedWidthTypes.Time64us) {
		t.Errorf("iceberg-go reads tod as %s, want time64[us]", typ)
	}
	kc, tc := at.Column(kidx[0]).Data().Chunks(), at.Column(tidx[0]).Data().Chunks()
	out := map[string]int64{}
	for c := range kc {
		st := kc[c].(*array.Struct)
		typ := st.DataType().(*arrow.StructType)
		pi, _ := typ.FieldIdx("partition")
		oi, _ := typ.FieldIdx("offset")
		parts, offs := st.Field(pi).(*array.Int32), st.Field(oi).(*array.Int64)
		tods, ok := tc[c].(*array.Time64)
		if !ok {
			t.Fatalf("scan: tod is a %T", tc[c])
		}
		for j := 0; j < st.Len(); j++ {
			out[fmt.Sprintf("%d/%d", parts.Value(j), offs.Value(j))] = int64(tods.Value(j))
		}
	}
	return out
}
