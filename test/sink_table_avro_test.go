package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	pqreader "github.com/pqsink/pqsink/reader"
)

// TestTableSinkAvroEvolution archives the Avro stream of TestSinkAvro
// into a table that does not exist yet: the first writer schema (v1)
// creates it, v2 adds the field channel mid-stream and the table's schema
// gains it as an optional column with a new id before the first file that
// holds it is committed, v1 producers writing on after v2 appeared land
// with channel NULL, and v3 (id turned from long into string), which the
// table cannot take, is dead-lettered with reason schema, naming the field.
// iceberg-go reads the table back: every v1 and v2 record once with its id
// and channel; the files carry the table's field ids.
func TestTableSinkAvroEvolution(t *testing.T) {
	const partitions = 2
	env := newTableEnv(t, "avro-tbl")
	dlq := env.topic + ".dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq)
	sent := produceAvroStream(t, broker.Brokers, env.topic)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)

	reg := &testRegistry{schemas: map[int]string{avroIDv1: avroV1, avroIDv2: avroV2, avroIDv3: avroV3}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-tbl", "1s", 100000) + "dead_letter:\n  topic: " + dlq + "\n"

	good := 0
	for _, s := range sent {
		if s.version == 1 || s.version == 2 {
			good++
		}
	}
	sink, stop := startSink(t, text)
	env.waitRows(t, good, 2*time.Minute)
	deadline := time.Now().Add(time.Minute)
	for sink.Stats().Snapshot().Consumed < int64(len(truth)) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	st := sink.Stats().Snapshot()
	if st.TableSchemaUpdates != 1 {
		t.Errorf("table schema updates: %d, want 1 (v2's channel)", st.TableSchemaUpdates)
	}

	// The table: v1 and v2 records, once each, with their ids and channels.
	tbl := env.load(t)
	channel, ok := tbl.Schema().FindFieldByName("channel")
	if !ok || channel.Required || channel.Type.String() != "string" {
		t.Fatalf("the table's channel column is %+v (found %v), want an optional string", channel, ok)
	}
	for _, f := range tbl.Schema().Fields() {
		if f.Name != "channel" && f.ID >= channel.ID {
			t.Errorf("channel has id %d, not above the first schema's (%s has %d)", channel.ID, f.Name, f.ID)
		}
	}
	if n := len(tbl.Metadata().Schemas()); n != 2 {
		t.Errorf("the table has %d schemas, want 2 (created from v1, evolved by v2)", n)
	}
	rows := env.scan(t)
	channels := env.scanStrings(t, tbl, "channel")
	seen := map[string]bool{}
	for _, r := range rows {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		p, ok := truth[id]
		s := sent[string(p.Key)]
		var ev struct{ ID int64 }
		if !ok || json.Unmarshal(s.event, &ev) != nil {
			t.Errorf("the table holds %s, which was not produced", id)
			continue
		}
		if seen[id] {
			t.Errorf("%s is in the table twice", id)
		}
		seen[id] = true
		got, isSet := channels[id]
		switch {
		case s.version != 1 && s.version != 2:
			t.Errorf("%s (writer schema v%d) is in the table", id, s.version)
		case ev.ID != r.id || string(r.key) != string(p.Key):
			t.Errorf("%s: id %d key %q, produced id %d key %q", id, r.id, r.key, ev.ID, p.Key)
		case s.version == 2 && (!isSet || got != s.channel):
			t.Errorf("%s (v2): channel %q (set %v), want %q", id, got, isSet, s.channel)
		case s.version == 1 && isSet:
			t.Errorf("%s (v1): channel %q, want NULL", id, got)
		}
	}
	if len(seen) != good {
		t.Errorf("the table holds %d distinct records, want %d", len(seen), good)
	}

	// v3 and the poison records are dead letters: schema (naming id) for
	// v3 and for the truncated record, which has v3's header; decode for
	// the others.
	reasons := map[string]int{}
	for _, l := range readTopic(t, broker.Brokers, dlq, partitions) {
		h := decodeHeaders(t, l.Headers)
		reasons[h["pqsink.reason"]]++
		orig := findByKey(truth, l.Key)
		if v := sent[string(l.Key)].version; v == 3 && (h["pqsink.reason"] != "schema" || !strings.Contains(h["pqsink.error"], "field id")) {
			t.Errorf("dead letter %s (v3): reason %q, error %q", l.Key, h["pqsink.reason"], h["pqsink.error"])
		}
		if string(l.Value) != string(orig.Value) {
			t.Errorf("dead letter %s: value differs from the record", l.Key)
		}
	}
	if reasons["schema"] != 201 || reasons["decode"] != 2 {
		t.Errorf("dead letters by reason: %v, want 201 schema and 2 decode", reasons)
	}

	// Every file carries the table's ids; a file written with v2 has
	// channel's.
	withChannel := 0
	for _, key := range env.files(t) {
		path := filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), key)
		checkFieldIDs(t, path)
		for _, e := range parquetElements(t, path) {
			if e.name == "channel" {
				withChannel++
				if e.fieldID != int32(channel.ID) {
					t.Errorf("%s: channel has field_id %d, the table %d", key, e.fieldID, channel.ID)
				}
			}
		}
	}
	if withChannel == 0 {
		t.Errorf("no file has the channel column")
	}
}

// load loads the table with iceberg-go through a catalog connection of its
// own.
func (e *tableEnv) load(t *testing.T) *itable.Table {
	t.Helper()
	tbl, done, err := e.openTable(t)
	t.Cleanup(done)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// scanStrings reads a top-level string column of the table's current
// snapshot by (partition, offset): only the rows where it is set.
func (e *tableEnv) scanStrings(t *testing.T, tbl *itable.Table, column string) map[string]string {
	t.Helper()
	at, err := tbl.Scan(itable.WithSelectedFields("_kafka.partition", "_kafka.offset", column)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scanning %s: %v", column, err)
	}
	defer at.Release()
	out := map[string]string{}
	idx := at.Schema().FieldIndices(column)
	kidx := at.Schema().FieldIndices("_kafka")
	if len(idx) != 1 || len(kidx) != 1 {
		t.Fatalf("scan of %s: schema %v", column, at.Schema())
	}
	kc, vc := at.Column(kidx[0]).Data().Chunks(), at.Column(idx[0]).Data().Chunks()
	for i := range kc {
		st := kc[i].(*array.Struct)
		vals := vc[i].(*array.String)
		typ := st.DataType().(*arrow.StructType)
		pi, ok1 := typ.FieldIdx("partition")
		oi, ok2 := typ.FieldIdx("offset")
		if !ok1 || !ok2 {
			t.Fatalf("scan of %s: _kafka is %v", column, typ)
		}
		parts, offs := st.Field(pi).(*array.Int32), st.Field(oi).(*array.Int64)
		for j := 0; j < st.Len(); j++ {
			if !vals.IsNull(j) {
				out[fmt.Sprintf("%d/%d", parts.Value(j), offs.Value(j))] = vals.Value(j)
			}
		}
	}
	return out
}

// parquetElement is a schema element of a Parquet file: its name and
// field_id (0 when it has none).
type parquetElement struct {
	name    string
	fieldID int32
}

// parquetElements reads the schema elements of the Parquet file at path
// with pqsink's reader.
func parquetElements(t *testing.T, path string) []parquetElement {
	t.Helper()
	r := openParquet(t, path)
	var out []parquetElement
	for _, e := range r.Metadata().Schema[1:] {
		pe := parquetElement{name: e.Name}
		if e.FieldID != nil {
			pe.fieldID = *e.FieldID
		}
		out = append(out, pe)
	}
	return out
}

// openParquet opens the Parquet file at path with pqsink's reader, for the
// test's life.
func openParquet(t *testing.T, path string) *pqreader.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r, err := pqreader.Open(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}
