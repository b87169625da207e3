package avrorow

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// TestAvroMillisWidened decodes millisecond timestamps (timestamp-millis,
// a nullable local-timestamp-millis, one in an array, and one a reader
// schema adds with a default) into a row group whose schema
// schema.WidenMillis made, as a table's files have it: each column holds
// the value times 1000, a long microseconds cannot hold is the record's
// error and leaves no row, and a timestamp-micros stays as it is.
func TestAvroMillisWidened(t *testing.T) {
	writer := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}]},
		{"name":"many","type":{"type":"array","items":{"type":"long","logicalType":"timestamp-millis"}}},
		{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}}]}`)
	reader := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-millis"}]},
		{"name":"many","type":{"type":"array","items":{"type":"long","logicalType":"timestamp-millis"}}},
		{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"added","type":{"type":"long","logicalType":"timestamp-millis"},"default":1234}]}`)
	ps, err := reader.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	wide, changed, err := schema.WidenMillis(ps)
	if err != nil || !changed {
		t.Fatalf("WidenMillis: changed %v, %v", changed, err)
	}
	for _, leaf := range wide.Leaves() {
		if l := leaf.Logical; l.Kind == schema.Timestamp && l.Unit != schema.Micros {
			t.Errorf("widened leaf %s is %s", leaf.PathString(), l)
		}
	}
	g := rowgroup.New(wide)
	d, err := NewDecoder(g, writer, ReaderSchema(reader))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(ts int64, local *int64, many []int64, us int64) []byte {
		out := avro.AppendLong(nil, ts)
		if local == nil {
			out = avro.AppendLong(out, 0)
		} else {
			out = avro.AppendLong(avro.AppendLong(out, 1), *local)
		}
		if len(many) > 0 {
			out = avro.AppendLong(out, int64(len(many)))
			for _, m := range many {
				out = avro.AppendLong(out, m)
			}
		}
		return avro.AppendLong(avro.AppendLong(out, 0), us)
	}
	local := int64(-1500)
	for _, r := range [][]byte{
		rec(1_700_000_000_123, &local, []int64{1, -2}, 7),
		rec(-1, nil, nil, 8),
		rec(math.MaxInt64/1000, nil, nil, 9),
	} {
		if err := b.Append(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range [][]byte{
		rec(math.MaxInt64/1000+1, nil, nil, 1),
		rec(0, nil, []int64{math.MinInt64 / 999}, 1),
	} {
		err := b.Append(bad, nil)
		var re *rowgroup.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "out of the range of microseconds") {
			t.Errorf("out of range: got %v, want a RecordError saying so", err)
		}
	}
	if g.NumRows() != 3 {
		t.Fatalf("%d rows, want 3", g.NumRows())
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"ts":                {1_700_000_000_123_000, -1000, math.MaxInt64 / 1000 * 1000},
		"local":             {-1_500_000},
		"many.list.element": {1000, -2000},
		"us":                {7, 8, 9},
		"added":             {1_234_000, 1_234_000, 1_234_000},
	}
	for path, vals := range want {
		c := g.Column(wide.Leaf(path).Column)
		if got := c.Int64; !slices.Equal(got, vals) {
			t.Errorf("column %s = %v, want %v", path, got, vals)
		}
	}
}
