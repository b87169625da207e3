package avrorow

import (
	"errors"
	"os"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// FuzzDecoder feeds arbitrary bytes to compiled decoders of the
// reference record and of the all-types schema (every type and logical
// type), read as written and, for the reference record, resolved onto a
// reader schema that promotes, drops and adds fields; the all-types
// schema also into its table's columns, its millisecond timestamps and
// times of day widened and nanosecond timestamps narrowed to
// microseconds. A value is either
// appended, leaving a consistent row group, or rejected with a
// *rowgroup.RecordError, leaving it unchanged; it never panics. The seed corpus is
// in testdata/fuzz/FuzzDecoder and the records added below.
func FuzzDecoder(f *testing.F) {
	events := avro.MustParse(avroevents.Schema)
	text, err := os.ReadFile("../../schema/avro/testdata/all_types.avsc")
	if err != nil {
		f.Fatal(err)
	}
	all := avro.MustParse(string(text))
	reader := avro.MustParse(`{"type":"record","name":"event","fields":[
		{"name":"id","type":"double"},{"name":"user","type":"bytes"},
		{"name":"tags","type":["null",{"type":"array","items":"bytes"}],"default":null},
		{"name":"extra","type":{"type":"map","values":"long"},"default":{"a":1}}]}`)
	_, recs := eventRecords(f, 8)
	for _, r := range recs {
		f.Add(r)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 64))

	type target struct {
		g *rowgroup.RowGroup
		b *rowgroup.Builder
	}
	var targets []target
	for _, c := range []struct {
		w    *avro.Schema
		opts []Option
	}{{events, nil}, {all, nil}, {events, []Option{ReaderSchema(reader)}}} {
		g, _, b := newDecoder(f, c.w, c.opts...)
		targets = append(targets, target{g, b})
	}
	g, b := tableDecoder(f, all)
	targets = append(targets, target{g, b})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tg := range targets {
			if tg.g.NumRows() > 1000 {
				tg.g.Reset()
			}
			size, rows := tg.g.Size(), tg.g.NumRows()
			err := tg.b.Append(data, nil)
			if err != nil {
				var re *rowgroup.RecordError
				if !errors.As(err, &re) {
					t.Fatalf("error %v is a %T, want *rowgroup.RecordError", err, err)
				}
				if tg.g.Size() != size || tg.g.NumRows() != rows {
					t.Fatalf("rejected record changed the row group")
				}
				continue
			}
			if err := tg.g.Check(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// tableDecoder is a decoder of w into the Parquet schema of w as a
// table's files have it: schema.WidenMillis, schema.WidenTimeMillis and
// schema.NarrowNanos applied.
func tableDecoder(t testing.TB, w *avro.Schema) (*rowgroup.RowGroup, *rowgroup.Builder) {
	t.Helper()
	ps, err := w.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	for _, retime := range []func(*schema.Schema) (*schema.Schema, bool, error){schema.WidenMillis, schema.WidenTimeMillis, schema.NarrowNanos} {
		if ps, _, err = retime(ps); err != nil {
			t.Fatal(err)
		}
	}
	g := rowgroup.New(ps)
	d, err := NewDecoder(g, w)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	return g, b
}
