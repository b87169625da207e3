package avrorow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

func newDecoder(t testing.TB, writer *avro.Schema, opts ...Option) (*rowgroup.RowGroup, *Decoder, *rowgroup.Builder) {
	t.Helper()
	reader := writer
	for _, o := range opts {
		var ao options
		o(&ao)
		if ao.reader != nil {
			reader = ao.reader
		}
	}
	ps, err := reader.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(ps)
	d, err := NewDecoder(g, writer, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	return g, d, b
}

// eventRecords returns n records of the reference shape, as JSON and as Avro.
func eventRecords(t testing.TB, n int) (jsonRecs, avroRecs [][]byte) {
	gen := events.New(1, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for range n {
		j := gen.Append(nil)
		a, err := avroevents.Append(nil, j)
		if err != nil {
			t.Fatal(err)
		}
		jsonRecs, avroRecs = append(jsonRecs, j), append(avroRecs, a)
	}
	return jsonRecs, avroRecs
}

// TestAvroEventsMatchJSON: the reference records as Avro fill the same
// columns as the same records as JSON through the JSON shredder, and the
// Avro schema's Parquet schema is the JSON one.
func TestAvroEventsMatchJSON(t *testing.T) {
	s := avro.MustParse(avroevents.Schema)
	ps, err := s.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	js := schema.MustParse(events.Schema)
	if !ps.Equal(js) {
		t.Fatalf("Avro schema's Parquet schema\n%s\nwant\n%s", ps, js)
	}
	jsonRecs, avroRecs := eventRecords(t, 500)
	ga, _, ba := newDecoder(t, s)
	gj := rowgroup.New(js)
	sj, err := rowgroup.NewJSONShredder(gj)
	if err != nil {
		t.Fatal(err)
	}
	bj, _ := rowgroup.NewBuilder(gj, sj)
	for i := range avroRecs {
		if err := ba.Append(avroRecs[i], nil); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if err := bj.Append(jsonRecs[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ga.Check(); err != nil {
		t.Fatal(err)
	}
	for c := range ga.Columns() {
		a, j := ga.Column(c), gj.Column(c)
		if !slices.Equal(a.Rep, j.Rep) || !slices.Equal(a.Def, j.Def) || !slices.Equal(a.Int32, j.Int32) ||
			!slices.Equal(a.Int64, j.Int64) || !slices.Equal(a.Double, j.Double) || !slices.Equal(a.Bool, j.Bool) ||
			!slices.Equal(a.Bytes, j.Bytes) || !slices.Equal(a.Offsets, j.Offsets) {
			t.Errorf("column %s differs between Avro and JSON", a.Leaf.PathString())
		}
	}
}

// TestAvroTruncated: every prefix of a record is a clean rowgroup.RecordError, and
// the row group is as before.
func TestAvroTruncated(t *testing.T) {
	s := avro.MustParse(avroevents.Schema)
	_, avroRecs := eventRecords(t, 20)
	g, _, b := newDecoder(t, s)
	for i, rec := range avroRecs {
		if err := b.Append(rec, nil); err != nil {
			t.Fatal(err)
		}
		size, rows := g.Size(), g.NumRows()
		for cut := range len(rec) {
			err := b.Append(rec[:cut], nil)
			var re *rowgroup.RecordError
			if !errors.As(err, &re) {
				t.Fatalf("record %d cut at %d: %v, want a *rowgroup.RecordError", i, cut, err)
			}
			if g.Size() != size || g.NumRows() != rows {
				t.Fatalf("record %d cut at %d: the row group changed", i, cut)
			}
		}
		if err := b.Append(append(slices.Clone(rec), 0), nil); err == nil || !strings.Contains(err.Error(), "after the end") {
			t.Fatalf("trailing byte: %v", err)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestAvroBadValues(t *testing.T) {
	s := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"u","type":["null","string"]},
		{"name":"b","type":"boolean"},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"id","type":{"type":"string","logicalType":"uuid"}},
		{"name":"i","type":"int"},
		{"name":"nulls","type":{"type":"array","items":"null"}}]}`)
	str := func(b []byte, v string) []byte { return append(avro.AppendLong(b, int64(len(v))), v...) }
	good := func() []byte {
		b := avro.AppendLong(nil, 1)
		b = str(b, "x")
		b = append(b, 1)
		b = avro.AppendLong(b, 1)
		b = str(b, "123e4567-e89b-12d3-a456-426614174000")
		b = avro.AppendLong(b, -5)
		return append(b, 0)
	}
	cases := []struct {
		name, want string
		rec        []byte
	}{
		{"union branch", "union branch 2", avro.AppendLong(nil, 2)},
		{"negative union branch", "union branch -1", avro.AppendLong(nil, -1)},
		{"string length", "length 1000000", avro.AppendLong(avro.AppendLong(nil, 1), 1_000_000)},
		{"negative length", "length -3", avro.AppendLong(avro.AppendLong(nil, 1), -3)},
		{"varint", "longer than 10 bytes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"utf8", "UTF-8", str(avro.AppendLong(nil, 1), "\xff")},
		{"boolean", "boolean byte 0x07", append(avro.AppendLong(nil, 0), 7)},
		{"enum", "enum index 9", avro.AppendLong(append(avro.AppendLong(nil, 0), 1), 9)},
		{"uuid", "not a UUID", str(avro.AppendLong(append(avro.AppendLong(nil, 0), 1), 0), "nope")},
		{"int range", "32-bit range", avro.AppendLong(str(avro.AppendLong(append(avro.AppendLong(nil, 0), 1), 0), "123e4567-e89b-12d3-a456-426614174000"), math.MaxInt32+1)},
		{"null items", "take no bytes", avro.AppendLong(avro.AppendLong(str(avro.AppendLong(append(avro.AppendLong(nil, 0), 1), 0), "123e4567-e89b-12d3-a456-426614174000"), 1), 1<<40)},
	}
	g, _, b := newDecoder(t, s)
	if err := b.Append(good(), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		err := b.Append(c.rec, nil)
		var re *rowgroup.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "avro record") {
			t.Errorf("%s: got %v, want a rowgroup.RecordError with %q", c.name, err, c.want)
		}
	}
	if g.NumRows() != 1 {
		t.Fatalf("%d rows, want 1", g.NumRows())
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestAvroResolution reads records of an old writer schema with a newer
// reader schema: a field added with a default, one removed, promotions,
// an enum grown, a union widened, and fields matched by alias.
func TestAvroResolution(t *testing.T) {
	w := avro.MustParse(`{"type":"record","name":"R","namespace":"a","fields":[
		{"name":"id","type":"int"},
		{"name":"gone","type":{"type":"array","items":{"type":"map","values":"string"}}},
		{"name":"name","type":"string"},
		{"name":"blob","type":"bytes"},
		{"name":"f","type":"float"},
		{"name":"l","type":"long"},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},
		{"name":"u","type":["null","int"]},
		{"name":"old_name","type":"string"},
		{"name":"plain","type":"int"}]}`)
	r := avro.MustParse(`{"type":"record","name":"R","namespace":"b","aliases":["a.R"],"fields":[
		{"name":"id","type":"long"},
		{"name":"name","type":"bytes"},
		{"name":"blob","type":"string"},
		{"name":"f","type":"double"},
		{"name":"l","type":"float"},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["C","B","A"]}},
		{"name":"u","type":["null","string","long"]},
		{"name":"new_name","aliases":["old_name"],"type":"string"},
		{"name":"plain","type":["null","int"]},
		{"name":"added","type":{"type":"record","name":"Added","fields":[{"name":"x","type":"int"},{"name":"tags","type":{"type":"array","items":"string"}}]},
		 "default":{"x":7,"tags":["t1","t2"]}},
		{"name":"added_opt","type":["null","string"],"default":null}]}`)
	str := func(b []byte, v string) []byte { return append(avro.AppendLong(b, int64(len(v))), v...) }
	var rec []byte
	rec = avro.AppendLong(rec, 41)                              // id
	rec = str(avro.AppendLong(avro.AppendLong(rec, 1), 1), "k") // gone: a block of one map of one entry
	rec = str(rec, "v")
	rec = append(rec, 0, 0) // end of map, end of array
	rec = str(rec, "nm")
	rec = str(rec, "bl")
	rec = append(rec, 0, 0, 0xc0, 0x3f)               // f = 1.5
	rec = avro.AppendLong(rec, 1<<40)                 // l
	rec = avro.AppendLong(rec, 0)                     // e = A
	rec = avro.AppendLong(avro.AppendLong(rec, 1), 5) // u = int 5
	rec = str(rec, "alias")
	rec = avro.AppendLong(rec, -9)

	g, _, b := newDecoder(t, w, ReaderSchema(r))
	if err := b.Append(rec, nil); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	col := func(path string) *rowgroup.Column {
		n := g.Schema().Leaf(path)
		if n == nil {
			t.Fatalf("no column %s", path)
		}
		return g.Column(n.Column)
	}
	check := func(path string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	check("id", col("id").Int64, []int64{41})
	check("name", string(col("name").ByteArray(0)), "nm")
	check("blob", string(col("blob").ByteArray(0)), "bl")
	check("f", col("f").Double, []float64{1.5})
	check("l", col("l").Float, []float32{1 << 40})
	check("e", string(col("e").ByteArray(0)), "A")
	check("u.member0 def", col("u.member0").Def, []uint8{1})
	check("u.member1", col("u.member1").Int64, []int64{5})
	check("new_name", string(col("new_name").ByteArray(0)), "alias")
	check("plain", col("plain").Int32, []int32{-9})
	check("added.x", col("added.x").Int32, []int32{7})
	check("added.tags", string(col("added.tags.list.element").Bytes), "t1t2")
	check("added_opt def", col("added_opt").Def, []uint8{0})

	// Incompatible: a reader field without default the writer lacks, and
	// a narrowing.
	for _, bad := range []string{
		`{"type":"record","name":"R","fields":[{"name":"id","type":"int"},{"name":"z","type":"int"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"l","type":"int"}]}`,
		`{"type":"record","name":"R","fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}}]}`,
	} {
		rs := avro.MustParse(bad)
		ps, _ := rs.Parquet()
		_, err := NewDecoder(rowgroup.New(ps), w, ReaderSchema(rs))
		var re *avro.ResolutionError
		if !errors.As(err, &re) {
			t.Errorf("reader %s: got %v, want a ResolutionError", bad, err)
		}
	}
}

// TestAvroSchemaMismatch: a row group whose schema is not the Avro
// schema's is refused at construction.
func TestAvroSchemaMismatch(t *testing.T) {
	s := avro.MustParse(avroevents.Schema)
	g := rowgroup.New(schema.MustParse(`message m { required int32 id; }`))
	if _, err := NewDecoder(g, s); err == nil {
		t.Fatal("no error for a row group of another schema")
	}
	// With the envelope beside it, it is accepted.
	ps, err := s.Parquet(rowgroup.EnvelopeNode())
	if err != nil {
		t.Fatal(err)
	}
	g = rowgroup.New(ps)
	d, err := NewDecoder(g, s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil || !b.HasEnvelope() {
		t.Fatalf("builder: %v, envelope %v", err, b.HasEnvelope())
	}
	_, recs := eventRecords(t, 3)
	for i, r := range recs {
		if err := b.Append(r, &rowgroup.Envelope{Topic: "t", Offset: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
}
