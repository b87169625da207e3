package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// The tests here build rows the way the sink does, through
// rowgroup.Builder with a payload and the Kafka envelope, write them with
// the writer, and read the files back with DuckDB, arrow-go and
// parquet-go.

// envelopeUserSchema is the typed JSON payload: a VARIANT field among
// typed ones.
const envelopeUserSchema = `message m {
  required int64 id;
  optional binary name (STRING);
  optional group tags (LIST) { repeated group list { required binary element (STRING); } }
  optional group attrs (VARIANT(1)) { required binary metadata; required binary value; }
}`

// envelopeOf returns the envelope of record i. Keys and headers take every
// shape: null key, empty key, no headers, a null header value, an empty
// one, non-UTF-8 bytes. Timestamps carry microseconds, which the
// millisecond column drops.
func envelopeOf(i int) *rowgroup.Envelope {
	e := &rowgroup.Envelope{
		Topic:     "orders-" + strconv.Itoa(i%3),
		Partition: int32(i % 4),
		Offset:    int64(5_000_000_000 + i),
		Timestamp: time.UnixMilli(1714979289000 + int64(i)*1001).Add(789 * time.Microsecond),
	}
	switch i % 5 {
	case 0: // null key, no headers
	case 1:
		e.Key = []byte{}
		e.Headers = []rowgroup.Header{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}, {Key: "none"}}
	case 2:
		e.Key = []byte("user-" + strconv.Itoa(i))
		e.Headers = []rowgroup.Header{}
	case 3:
		e.Key = []byte{0, 0xfe, 0xff}
		e.Headers = []rowgroup.Header{{Key: "empty", Value: []byte{}}, {Key: "bin", Value: []byte{0xff, 0}}}
	case 4:
		e.Key = []byte("k")
		e.Headers = []rowgroup.Header{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("3")}} // a repeated key
	}
	return e
}

// envelopeKey renders what a reader saw of an envelope, for comparison:
// the timestamp in milliseconds, binaries in hex, null as "null".
func envelopeKey(topic string, partition int32, offset, ms int64, key []byte, keyNull bool, headers [][2]string) string {
	k := "null"
	if !keyNull {
		k = fmt.Sprintf("%x", key)
	}
	return fmt.Sprintf("%s|%d|%d|%d|%s|%v", topic, partition, offset, ms, k, headers)
}

func wantEnvelopeKey(e *rowgroup.Envelope) string {
	var hs [][2]string
	for _, h := range e.Headers {
		v := "null"
		if h.Value != nil {
			v = fmt.Sprintf("%x", h.Value)
		}
		hs = append(hs, [2]string{h.Key, v})
	}
	return envelopeKey(e.Topic, e.Partition, e.Offset, e.Timestamp.UnixMilli(), e.Key, e.Key == nil, hs)
}

// envelopeCase is one payload kind.
type envelopeCase struct {
	name    string
	schema  func(t *testing.T, records []string) *schema.Schema
	payload func(t *testing.T, g *rowgroup.RowGroup) rowgroup.Payload
	record  func(i int) string // a record that fits
	bad     func(i int) string // a record that fails in the payload
	variant bool               // the payload is the VARIANT column "payload"
	leaves  []string           // leaf columns the schema must have
}

func envelopeCases() []envelopeCase {
	jsonRecord := func(i int) string {
		switch i % 4 {
		case 0:
			return fmt.Sprintf(`{"id":%d,"name":"n%d","tags":["a","b%d"],"attrs":{"score":%d.5,"ok":true}}`, i, i, i, i)
		case 1:
			return fmt.Sprintf(`{"id":%d,"tags":[],"attrs":[1,"two",null]}`, i)
		case 2:
			return fmt.Sprintf(`{"id":%d,"name":null,"attrs":null}`, i)
		}
		return fmt.Sprintf(`{"id":%d,"name":"only","attrs":"s%d"}`, i, i)
	}
	variantRecord := func(i int) string {
		switch {
		case i%7 == 3:
			return fmt.Sprintf(`[%d,"x",{"y":null}]`, i)
		case i%11 == 5:
			return `null`
		case i%5 == 2:
			return fmt.Sprintf(`{"id":"s%d","extra":{"deep":[1.25,true]}}`, i)
		}
		return fmt.Sprintf(`{"id":%d,"tags":["t%d","u"],"user":{"name":"u%d","age":%d}}`, i, i%3, i, i%90)
	}
	variantBad := func(i int) string {
		return []string{`{"a":1,"a":2}`, `{"a":`, `[1,2,]`, `{"n":1e999999}`}[i%4]
	}
	variantSchema := func(shape func(t *testing.T, records []string) variant.Shape) func(*testing.T, []string) *schema.Schema {
		return func(t *testing.T, records []string) *schema.Schema {
			node, err := rowgroup.VariantNode("payload", schema.Required, shape(t, records))
			if err != nil {
				t.Fatal(err)
			}
			s, err := schema.New("m", node, rowgroup.EnvelopeNode())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	variantPayload := func(t *testing.T, g *rowgroup.RowGroup) rowgroup.Payload {
		p, err := rowgroup.NewVariantShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return []envelopeCase{
		{
			name: "json",
			schema: func(t *testing.T, _ []string) *schema.Schema {
				user := schema.MustParse(envelopeUserSchema)
				s, err := schema.New("m", append(user.Fields()[:len(user.Fields()):len(user.Fields())], rowgroup.EnvelopeNode())...)
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			payload: func(t *testing.T, g *rowgroup.RowGroup) rowgroup.Payload {
				p, err := rowgroup.NewJSONShredder(g)
				if err != nil {
					t.Fatal(err)
				}
				return p
			},
			record: jsonRecord,
			bad: func(i int) string {
				return []string{
					fmt.Sprintf(`{"id":%d,"tags":["x","y",3]}`, i), // fails half-way through a list
					`{"name":"no id"}`,
					fmt.Sprintf(`{"id":%d,"_kafka":{"topic":"from the record"}}`, i),
					fmt.Sprintf(`{"id":%d,"attrs":{"k":1,"k":2}}`, i),
				}[i%4]
			},
		},
		{
			name:    "variant-unshredded",
			schema:  variantSchema(func(*testing.T, []string) variant.Shape { return variant.Shape{} }),
			payload: variantPayload, record: variantRecord, bad: variantBad, variant: true,
		},
		{
			name: "variant-shredded-given",
			schema: variantSchema(func(t *testing.T, _ []string) variant.Shape {
				s, err := variant.ParseShapePaths("$.id int64\n$.tags[*] string\n$.user.name string\n$.user.age int8")
				if err != nil {
					t.Fatal(err)
				}
				return s
			}),
			payload: variantPayload, record: variantRecord, bad: variantBad, variant: true,
			leaves: []string{"payload.typed_value.tags.typed_value.list.element.typed_value", "payload.typed_value.user.typed_value.age.typed_value"},
		},
		{
			name: "variant-shredded-inferred",
			schema: variantSchema(func(t *testing.T, records []string) variant.Shape {
				inf := variant.NewInferrer(variant.InferOptions{MinTypeShare: 0.6})
				for _, r := range records {
					md, val, err := variant.FromJSON([]byte(r))
					if err != nil {
						t.Fatal(err)
					}
					v, err := variant.New(md, val)
					if err != nil {
						t.Fatal(err)
					}
					if err := inf.Add(v); err != nil {
						t.Fatal(err)
					}
				}
				return inf.Shape()
			}),
			payload: variantPayload, record: variantRecord, bad: variantBad, variant: true,
			leaves: []string{"payload.typed_value.user.typed_value.name.typed_value"},
		},
	}
}

// envelopeFile is a file written through the Builder.
type envelopeFile struct {
	path    string
	records []string
	envs    []*rowgroup.Envelope
	chunks  [][]crossread.Chunk // per row group, as written
}

const (
	envelopeRows     = 240
	envelopeGroupLen = 70 // rows per row group: the last one is short
)

// writeEnvelopeFile builds envelopeRows rows, with a failing record before
// every third one, in row groups of envelopeGroupLen rows, and writes them
// to dir/name.parquet with w (Reset onto the file). After each failed
// Append the row group must be exactly as before.
func writeEnvelopeFile(t *testing.T, c envelopeCase, w **writer.Writer, dir string) *envelopeFile {
	t.Helper()
	ef := &envelopeFile{path: filepath.Join(dir, c.name+".parquet")}
	for i := range envelopeRows {
		ef.records = append(ef.records, c.record(i))
		ef.envs = append(ef.envs, envelopeOf(i))
	}
	s := c.schema(t, ef.records)
	g := rowgroup.New(s)
	b, err := rowgroup.NewBuilder(g, c.payload(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if !b.HasEnvelope() {
		t.Fatal("the builder does not fill the envelope")
	}
	f, err := os.Create(ef.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if *w == nil {
		*w, err = writer.New(f, s, writer.KeyValue("pqsink.version", "test"), writer.PageRowLimit(16))
	} else {
		err = (*w).Reset(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		ef.chunks = append(ef.chunks, crossread.FromRowGroup(g))
		if err := (*w).WriteRowGroup(g); err != nil {
			t.Fatal(err)
		}
		g.Reset()
	}
	for i, r := range ef.records {
		if i%3 == 0 {
			before := builtColumnLengths(g)
			bad := c.bad(i)
			err := b.Append([]byte(bad), envelopeOf(1000+i))
			var re *rowgroup.RecordError
			if !asRecordError(err, &re) {
				t.Fatalf("Append(%s) = %v, want a *RecordError", bad, err)
			}
			if err := g.Check(); err != nil {
				t.Fatalf("after Append(%s) failed: %v", bad, err)
			}
			if after := builtColumnLengths(g); !reflect.DeepEqual(before, after) {
				t.Fatalf("Append(%s) failed but changed the columns:\n%v\n%v", bad, before, after)
			}
		}
		if err := b.Append([]byte(r), ef.envs[i]); err != nil {
			t.Fatalf("Append(%s): %v", r, err)
		}
		if g.NumRows() == envelopeGroupLen {
			flush()
		}
	}
	flush()
	(*w).SetKeyValue("pqsink.kafka.last_offset", strconv.FormatInt(ef.envs[len(ef.envs)-1].Offset, 10))
	(*w).SetKeyValue("pqsink.kafka.records", strconv.Itoa(envelopeRows))
	if _, err := (*w).Close(); err != nil {
		t.Fatal(err)
	}
	for _, leaf := range c.leaves {
		if s.Leaf(leaf) == nil {
			t.Errorf("schema lacks %s:\n%s", leaf, s)
		}
	}
	return ef
}

// builtColumnLengths is every column's level and value counts and buffer
// lengths.
func builtColumnLengths(g *rowgroup.RowGroup) [][6]int {
	var out [][6]int
	for _, c := range g.Columns() {
		out = append(out, [6]int{c.NumLevels(), c.NumValues(), len(c.Rep), len(c.Def), len(c.Bytes), len(c.Offsets)})
	}
	return append(out, [6]int{g.NumRows()})
}

func asRecordError(err error, re **rowgroup.RecordError) bool {
	e, ok := err.(*rowgroup.RecordError)
	*re = e
	return ok
}

// TestBuilderEnvelopeReaders writes files through rowgroup.Builder with
// the envelope beside typed JSON and VARIANT payloads (unshredded, and
// shredded by a given and an inferred shape) and reads them back: DuckDB
// and arrow-go must see every envelope value (topic, partition, offset,
// the timestamp in milliseconds, key bytes or null, the headers map with
// null and empty values, or empty) and the payload as given; parquet-go,
// arrow-go's column readers and pqsink's reader must see the levels and
// values that were written; the footer holds the per-file entries of
// SetKeyValue, which the next file after Reset does not.
func TestBuilderEnvelopeReaders(t *testing.T) {
	dir := t.TempDir()
	db := duckdb.Start(t)
	var w *writer.Writer // one writer per case, Reset from file to file
	for _, c := range envelopeCases() {
		t.Run(c.name, func(t *testing.T) {
			w = nil
			ef := writeEnvelopeFile(t, c, &w, dir)
			t.Run("duckdb", func(t *testing.T) { checkEnvelopeDuckDB(t, db, c, ef) })
			t.Run("arrow-go", func(t *testing.T) { checkEnvelopeArrow(t, c, ef) })
			t.Run("levels", func(t *testing.T) {
				for name, read := range map[string]func(string) ([][]crossread.Chunk, error){
					"parquet-go": crossread.ParquetGo, "arrow-go": crossread.Arrow, "pqsink": crossread.PQSink,
				} {
					got, err := read(ef.path)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !reflect.DeepEqual(got, ef.chunks) {
						t.Errorf("%s reads other levels or values than were written", name)
					}
				}
			})
			t.Run("footer", func(t *testing.T) {
				want := map[string]string{
					"pqsink.version":           "test",
					"pqsink.kafka.last_offset": strconv.FormatInt(ef.envs[len(ef.envs)-1].Offset, 10),
					"pqsink.kafka.records":     strconv.Itoa(envelopeRows),
				}
				checkFooterKeyValues(t, db, ef.path, want)
				// The next file of the writer has only the defaults.
				next := filepath.Join(dir, c.name+"-next.parquet")
				f, err := os.Create(next)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := w.Reset(f); err != nil {
					t.Fatal(err)
				}
				if _, err := w.Close(); err != nil {
					t.Fatal(err)
				}
				checkFooterKeyValues(t, db, next, map[string]string{"pqsink.version": "test"})
			})
		})
	}
}

func checkFooterKeyValues(t *testing.T, db *duckdb.DB, path string, want map[string]string) {
	t.Helper()
	res := db.Query(t, "SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata("+duckdb.Quote(path)+")")
	got := map[string]string{}
	for _, row := range res.Rows {
		got[fmt.Sprint(row[0])] = fmt.Sprint(row[1])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("duckdb: key-value metadata %v, want %v", got, want)
	}
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	got = map[string]string{}
	kv := rdr.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		got[k] = kv.Values()[i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("arrow-go: key-value metadata %v, want %v", got, want)
	}
}

func checkEnvelopeDuckDB(t *testing.T, db *duckdb.DB, c envelopeCase, ef *envelopeFile) {
	// Variants are rendered apart: DuckDB's to_json prints decimals below
	// one without their leading zero, which fixDuckJSON mends.
	payload, attrs := "to_json({'id': id, 'name': name, 'tags': tags})::VARCHAR", "attrs::JSON::VARCHAR"
	if c.variant {
		payload, attrs = "payload::JSON::VARCHAR", "NULL"
	}
	res := db.Query(t, `SELECT _kafka.topic, _kafka.partition, _kafka.offset, epoch_ms(_kafka.timestamp), _kafka.key,
		_kafka.headers, `+payload+` AS payload, `+attrs+` AS attrs
		FROM read_parquet(`+duckdb.Quote(ef.path)+`, file_row_number = true) ORDER BY file_row_number`)
	if len(res.Rows) != len(ef.records) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(ef.records))
	}
	var payloads [][]byte
	for i, row := range res.Rows {
		partition, _ := strconv.ParseInt(fmt.Sprint(row[1]), 10, 32)
		offset, _ := strconv.ParseInt(fmt.Sprint(row[2]), 10, 64)
		ms, _ := strconv.ParseInt(fmt.Sprint(row[3]), 10, 64)
		var key []byte
		if row[4] != nil {
			var err error
			if key, err = duckdb.Blob(row[4]); err != nil {
				t.Fatal(err)
			}
		}
		var headers [][2]string
		entries, ok := row[5].([]any)
		if !ok {
			t.Fatalf("row %d: headers %T %v, want a map", i, row[5], row[5])
		}
		for _, e := range entries {
			m := e.(map[string]any)
			v := "null"
			if m["value"] != nil {
				b, err := duckdb.Blob(m["value"])
				if err != nil {
					t.Fatal(err)
				}
				v = fmt.Sprintf("%x", b)
			}
			headers = append(headers, [2]string{m["key"].(string), v})
		}
		got := envelopeKey(fmt.Sprint(row[0]), int32(partition), offset, ms, key, row[4] == nil, headers)
		if want := wantEnvelopeKey(ef.envs[i]); got != want {
			t.Errorf("row %d envelope:\n got %s\nwant %s", i, got, want)
		}
		s, _ := row[6].(string)
		p := fixDuckJSON([]byte(s))
		if !c.variant {
			a, _ := row[7].(string)
			p = append(append(p[:len(p)-1], `,"attrs":`...), fixDuckJSON([]byte(a))...)
			p = append(p, '}')
		}
		payloads = append(payloads, p)
	}
	comparePayloads(t, c, ef.records, payloads)
}

// comparePayloads compares what a reader gave for each row's payload with
// the record: the Variant's JSON, or for typed JSON an object of every
// field, absent ones null.
func comparePayloads(t *testing.T, c envelopeCase, records []string, got [][]byte) {
	t.Helper()
	want := records
	if !c.variant {
		want = nil
		for _, r := range records {
			m := map[string]json.RawMessage{"id": nil, "name": nil, "tags": nil, "attrs": nil}
			if err := json.Unmarshal([]byte(r), &m); err != nil {
				t.Fatal(err)
			}
			for k, v := range m {
				if v == nil {
					m[k] = json.RawMessage("null")
				}
			}
			b, _ := json.Marshal(m)
			want = append(want, string(b))
		}
	}
	compareVariantLines(t, want, got)
}

func checkEnvelopeArrow(t *testing.T, c envelopeCase, ef *envelopeFile) {
	rdr, err := file.OpenParquetFile(ef.path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go read: %v", err)
	}
	defer tbl.Release()
	columns := map[string][]arrow.Array{}
	for i := range int(tbl.NumCols()) {
		columns[tbl.Schema().Field(i).Name] = tbl.Column(i).Data().Chunks()
	}

	row := 0
	for _, chunk := range columns[rowgroup.EnvelopeField] {
		st := chunk.(*array.Struct)
		typ := st.DataType().(*arrow.StructType)
		field := func(name string) arrow.Array {
			i, ok := typ.FieldIdx(name)
			if !ok {
				t.Fatalf("arrow-go: no field %s in %v", name, typ)
			}
			return st.Field(i)
		}
		topic, partition, offset := field("topic").(*array.String), field("partition").(*array.Int32), field("offset").(*array.Int64)
		ts, key, headers := field("timestamp").(*array.Timestamp), field("key").(*array.Binary), field("headers").(*array.Map)
		if unit := ts.DataType().(*arrow.TimestampType).Unit; unit != arrow.Millisecond {
			t.Fatalf("arrow-go: timestamp unit %v, want milliseconds", unit)
		}
		hkeys, hvals := headers.Keys().(*array.String), headers.Items().(*array.Binary)
		for i := range st.Len() {
			var hs [][2]string
			start, end := headers.ValueOffsets(i)
			for j := int(start); j < int(end); j++ {
				v := "null"
				if !hvals.IsNull(j) {
					v = fmt.Sprintf("%x", hvals.Value(j))
				}
				hs = append(hs, [2]string{hkeys.Value(j), v})
			}
			got := envelopeKey(topic.Value(i), partition.Value(i), offset.Value(i), int64(ts.Value(i)), key.Value(i), key.IsNull(i), hs)
			if want := wantEnvelopeKey(ef.envs[row]); got != want {
				t.Errorf("row %d envelope:\n got %s\nwant %s", row, got, want)
			}
			row++
		}
	}
	if row != len(ef.envs) {
		t.Fatalf("arrow-go: %d envelopes, want %d", row, len(ef.envs))
	}

	var payloads [][]byte
	if c.variant {
		for _, chunk := range columns["payload"] {
			payloads = append(payloads, arrowVariants(t, chunk)...)
		}
	} else {
		for ci, chunk := range columns["id"] {
			attrs := arrowVariants(t, columns["attrs"][ci])
			for i := range chunk.Len() {
				m := map[string]any{"attrs": json.RawMessage(attrs[i])}
				for _, name := range []string{"id", "name", "tags"} {
					m[name] = columns[name][ci].GetOneForMarshal(i)
				}
				b, err := json.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				payloads = append(payloads, b)
			}
		}
	}
	comparePayloads(t, c, ef.records, payloads)
}

// arrowVariants renders a VARIANT extension array as JSON, null as null.
func arrowVariants(t *testing.T, chunk arrow.Array) [][]byte {
	va, ok := chunk.(*extensions.VariantArray)
	if !ok {
		t.Fatalf("arrow-go reads a VARIANT as %T (%v)", chunk, chunk.DataType())
	}
	var out [][]byte
	for i := range va.Len() {
		if va.IsNull(i) {
			out = append(out, []byte("null"))
			continue
		}
		v, err := va.Value(i)
		if err != nil {
			t.Fatalf("arrow-go: %v", err)
		}
		b, err := variant.AppendJSON(nil, v.Metadata().Bytes(), v.Bytes())
		if err != nil {
			t.Fatalf("arrow-go: %v", err)
		}
		out = append(out, b)
	}
	return out
}

// TestConvertVariantField converts JSON with a declared schema whose
// fields include VARIANT groups, required and optional, at the top and in
// a list, and reads the file back with DuckDB and arrow-go.
func TestConvertVariantField(t *testing.T) {
	const text = `message m {
  required int64 id;
  required group attrs (VARIANT) { required binary metadata; required binary value; }
  optional group extra (VARIANT(1)) { required binary metadata; required binary value; }
}`
	lines := []string{
		`{"id":1,"attrs":{"color":"red","size":[1,2.5,{"x":null}]},"extra":{"n":1}}`,
		`{"id":2,"attrs":null,"extra":null}`,
		`{"id":3,"attrs":"just text"}`,
		`{"id":4,"attrs":[],"extra":-0.000123}`,
		`{"id":5,"attrs":{"nested":{"deep":{"deeper":[true,false]}}},"extra":"2024-05-06"}`,
	}
	path := filepath.Join(t.TempDir(), "attrs.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := convertSchemaRun(f, schema.MustParse(text), strings.Join(lines, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st != int64(len(lines)) {
		t.Fatalf("%d rows, want %d", st, len(lines))
	}
	want := func(field string) []string {
		var out []string
		for _, l := range lines {
			m := map[string]json.RawMessage{}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatal(err)
			}
			v := m[field]
			if v == nil {
				v = json.RawMessage("null")
			}
			out = append(out, string(v))
		}
		return out
	}

	db := duckdb.Start(t)
	// DuckDB casts a null VARIANT to the JSON null: extra IS NULL tells
	// the null group apart.
	res := db.Query(t, "SELECT attrs::JSON::VARCHAR, extra::JSON::VARCHAR, extra IS NULL FROM read_parquet("+duckdb.Quote(path)+", file_row_number = true) ORDER BY file_row_number")
	for col, field := range []string{"attrs", "extra"} {
		var got [][]byte
		for _, row := range res.Rows {
			s, ok := row[col].(string)
			if !ok {
				s = "null" // SQL NULL: a null optional VARIANT
			}
			got = append(got, fixDuckJSON([]byte(s)))
		}
		t.Run("duckdb/"+field, func(t *testing.T) { compareVariantLines(t, want(field), got) })
	}
	for i, row := range res.Rows {
		if isNull := row[2] == true; isNull != (i == 1 || i == 2) {
			t.Errorf("duckdb: extra IS NULL is %v in row %d", row[2], i)
		}
	}

	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go read: %v", err)
	}
	defer tbl.Release()
	for col, field := range []string{"attrs", "extra"} {
		var got [][]byte
		for _, chunk := range tbl.Column(col + 1).Data().Chunks() {
			got = append(got, arrowVariants(t, chunk)...)
		}
		t.Run("arrow-go/"+field, func(t *testing.T) { compareVariantLines(t, want(field), got) })
	}
}

// convertSchemaRun converts input, JSON lines, with the schema s into out, as
// `pqsink convert --schema` does, and returns the rows written.
func convertSchemaRun(out *os.File, s *schema.Schema, input string) (int64, error) {
	st, err := convert.Run(context.Background(), strings.NewReader(input), out, convert.Options{Schema: s})
	return st.Rows, err
}
