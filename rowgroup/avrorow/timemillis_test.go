package avrorow

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// timeWriter has times of day in milliseconds at the top, nullable, in
// an array, as a map's values and in a union of several types, beside a
// time-micros and a plain int.
const timeWriter = `{"type":"record","name":"R","fields":[
	{"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
	{"name":"maybe","type":["null",{"type":"int","logicalType":"time-millis"}]},
	{"name":"many","type":{"type":"array","items":{"type":"int","logicalType":"time-millis"}}},
	{"name":"byname","type":{"type":"map","values":{"type":"int","logicalType":"time-millis"}}},
	{"name":"either","type":["null",{"type":"int","logicalType":"time-millis"},"string"]},
	{"name":"us","type":{"type":"long","logicalType":"time-micros"}},
	{"name":"plain","type":"int"}]}`

// timeRecord is one record of timeWriter: maybe null when nil, either
// the time when it is a time, its text when a string, null otherwise.
type timeRecord struct {
	tod    int64
	maybe  *int64
	many   []int64
	byname map[string]int64
	either any
	us     int64
	plain  int64
}

func (r timeRecord) encode() []byte {
	out := avro.AppendLong(nil, r.tod)
	if r.maybe == nil {
		out = avro.AppendLong(out, 0)
	} else {
		out = avro.AppendLong(avro.AppendLong(out, 1), *r.maybe)
	}
	if len(r.many) > 0 {
		out = avro.AppendLong(out, int64(len(r.many)))
		for _, m := range r.many {
			out = avro.AppendLong(out, m)
		}
	}
	out = avro.AppendLong(out, 0)
	if len(r.byname) > 0 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range r.byname {
				if !yield(k) {
					return
				}
			}
		})
		out = avro.AppendLong(out, int64(len(keys)))
		for _, k := range keys {
			out = append(avro.AppendLong(out, int64(len(k))), k...)
			out = avro.AppendLong(out, r.byname[k])
		}
	}
	out = avro.AppendLong(out, 0)
	switch e := r.either.(type) {
	case int64:
		out = avro.AppendLong(avro.AppendLong(out, 1), e)
	case string:
		out = append(avro.AppendLong(avro.AppendLong(out, 2), int64(len(e))), e...)
	default:
		out = avro.AppendLong(out, 0)
	}
	return avro.AppendLong(avro.AppendLong(out, r.us), r.plain)
}

// TestAvroTimeMillisWidened decodes time-millis values into a row group
// whose schema schema.WidenTimeMillis made (after schema.WidenMillis, as
// a table's files have it): each such column is INT64 TIME(MICROS) and
// holds the value times 1000 (int32's ends and negative values too,
// nulls as nulls), a field a reader schema adds with a default is
// widened alike, an int beyond 32 bits is the record's error and leaves
// no row, and the time-micros and plain int columns are as without a
// table. Into the writer schema's own Parquet schema (a file without a
// table) the values stay INT32 milliseconds.
func TestAvroTimeMillisWidened(t *testing.T) {
	w := avro.MustParse(timeWriter)
	reader := avro.MustParse(strings.Replace(timeWriter, `{"name":"plain","type":"int"}`,
		`{"name":"plain","type":"int"},{"name":"added","type":{"type":"int","logicalType":"time-millis"},"default":1234}`, 1))
	ps, err := reader.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	wide, _, err := schema.WidenMillis(ps)
	if err != nil {
		t.Fatal(err)
	}
	wide, changed, err := schema.WidenTimeMillis(wide)
	if err != nil || !changed {
		t.Fatalf("WidenTimeMillis: changed %v, %v", changed, err)
	}
	g := rowgroup.New(wide)
	d, err := NewDecoder(g, w, ReaderSchema(reader))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	noon, neg := int64(43_200_000), int64(-1)
	records := []timeRecord{
		{tod: 45_296_789, maybe: &noon, many: []int64{0, 86_399_999}, byname: map[string]int64{"a": 1, "b": 2}, either: int64(7), us: 5, plain: 9},
		{tod: 0, either: "x", us: 6, plain: 10},
		{tod: math.MaxInt32, maybe: &neg, many: []int64{math.MinInt32}, us: 7, plain: 11},
	}
	for _, r := range records {
		if err := b.Append(r.encode(), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []timeRecord{
		{tod: math.MaxInt32 + 1},
		{many: []int64{1, math.MinInt32 - 1}},
	} {
		err := b.Append(bad.encode(), nil)
		var re *rowgroup.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "out of the 32-bit range") {
			t.Errorf("an int beyond 32 bits: got %v, want a RecordError saying so", err)
		}
	}
	if g.NumRows() != 3 {
		t.Fatalf("%d rows, want 3", g.NumRows())
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"tod":                    {45_296_789_000, 0, math.MaxInt32 * 1000},
		"maybe":                  {43_200_000_000, -1000},
		"many.list.element":      {0, 86_399_999_000, math.MinInt32 * 1000},
		"byname.key_value.value": {1000, 2000},
		"either.member0":         {7000},
		"added":                  {1_234_000, 1_234_000, 1_234_000},
	}
	for path, vals := range want {
		leaf := wide.Leaf(path)
		if leaf.Physical != meta.TypeInt64 || leaf.Logical.Kind != schema.Time || leaf.Logical.Unit != schema.Micros {
			t.Errorf("%s is %s %s, want INT64 TIME(MICROS)", path, leaf.Physical, leaf.Logical)
		}
		c := g.Column(leaf.Column)
		if got := c.Int64; !slices.Equal(got, vals) {
			t.Errorf("column %s = %v, want %v", path, got, vals)
		}
	}
	if got, want := g.Column(wide.Leaf("maybe").Column).NumValues(), 2; got != want {
		t.Errorf("maybe holds %d values, want %d (one null)", got, want)
	}
	if got := g.Column(wide.Leaf("us").Column).Int64; !slices.Equal(got, []int64{5, 6, 7}) {
		t.Errorf("time-micros column = %v, want [5 6 7]", got)
	}
	if got := g.Column(wide.Leaf("plain").Column).Int32; !slices.Equal(got, []int32{9, 10, 11}) {
		t.Errorf("plain int column = %v, want [9 10 11]", got)
	}

	// A file without a table: the writer schema's INT32 milliseconds.
	wps, err := w.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	g2 := rowgroup.New(wps)
	d2, err := NewDecoder(g2, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Append(records[0].encode()); err != nil {
		t.Fatal(err)
	}
	leaf := wps.Leaf("tod")
	if leaf.Physical != meta.TypeInt32 || leaf.Logical.Unit != schema.Millis {
		t.Errorf("without a table tod is %s %s, want INT32 TIME(MILLIS)", leaf.Physical, leaf.Logical)
	}
	if got := g2.Column(leaf.Column).Int32; !slices.Equal(got, []int32{45_296_789}) {
		t.Errorf("without a table tod = %v, want [45296789]", got)
	}
	if got := g2.Column(wps.Leaf("many.list.element").Column).Int32; !slices.Equal(got, []int32{0, 86_399_999}) {
		t.Errorf("without a table many = %v, want [0 86399999]", got)
	}
}

// TestLookupMicrosTimes: with MicrosTimes a Lookup's leaf of a
// time-millis is INT64 TIME(MICROS) and its value the widened column's,
// for a nullable field too; without, the INT32 milliseconds.
func TestLookupMicrosTimes(t *testing.T) {
	w := avro.MustParse(timeWriter)
	noon := int64(43_200_000)
	rec := timeRecord{tod: 45_296_789, maybe: &noon}.encode()
	for _, c := range []struct {
		opts []Option
		phys meta.Type
		unit schema.TimeUnit
		want [2]int64
	}{
		{nil, meta.TypeInt32, schema.Millis, [2]int64{45_296_789, 43_200_000}},
		{[]Option{MicrosTimes()}, meta.TypeInt64, schema.Micros, [2]int64{45_296_789_000, 43_200_000_000}},
	} {
		l, err := NewLookup(w, [][]string{{"tod"}, {"maybe"}}, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Read(rec); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			leaf := l.Leaf(i)
			if leaf.Physical != c.phys || leaf.Logical.Unit != c.unit {
				t.Errorf("leaf %d is %s %s, want %s in %s", i, leaf.Physical, leaf.Logical, c.phys, c.unit)
			}
			v := l.Value(i)
			var got int64
			if c.phys == meta.TypeInt32 {
				got = int64(int32(binary.LittleEndian.Uint32(v)))
			} else {
				got = int64(binary.LittleEndian.Uint64(v))
			}
			if got != c.want[i] {
				t.Errorf("value %d = %d, want %d", i, got, c.want[i])
			}
		}
	}
}
