package avrorow

import (
	"encoding/binary"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// nanosWriter has nanosecond timestamps at the top, nullable, in an
// array, beside a millisecond and a microsecond one.
const nanosWriter = `{"type":"record","name":"R","fields":[
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-nanos"}},
	{"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-nanos"}]},
	{"name":"many","type":{"type":"array","items":{"type":"long","logicalType":"timestamp-nanos"}}},
	{"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}}]}`

// nanosRecord encodes a record of nanosWriter.
func nanosRecord(ts int64, local *int64, many []int64, ms, us int64) []byte {
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
	return avro.AppendLong(avro.AppendLong(avro.AppendLong(out, 0), ms), us)
}

// TestAvroNanosNarrowed decodes nanosecond timestamps into a row group
// whose schema schema.NarrowNanos made of the widened one
// (schema.WidenMillis), as a table's files with
// table.timestamp_precision micros have it: each nanosecond column holds
// the value floored to the microsecond (before 1970 and at int64's ends
// too), the cut ones of the records appended whole are counted, a
// record that fails counts none, and the millisecond and microsecond
// columns are as without the setting.
func TestAvroNanosNarrowed(t *testing.T) {
	w := avro.MustParse(nanosWriter)
	ps, err := w.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	wide, _, err := schema.WidenMillis(ps)
	if err != nil {
		t.Fatal(err)
	}
	narrow, changed, err := schema.NarrowNanos(wide)
	if err != nil || !changed {
		t.Fatalf("NarrowNanos: changed %v, %v", changed, err)
	}
	g := rowgroup.New(narrow)
	var cut atomic.Int64
	d, err := NewDecoder(g, w, CountTruncated(&cut))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	local := int64(-1)
	for _, r := range [][]byte{
		nanosRecord(1_700_000_000_123_456_789, &local, []int64{1000, -1001, 999}, 5, 7),
		nanosRecord(-1_000, nil, nil, -1, 8),
		nanosRecord(math.MaxInt64, nil, []int64{math.MinInt64}, 0, 9),
	} {
		if err := b.Append(r, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := cut.Load(); got != 6 {
		t.Errorf("%d timestamps counted as cut, want 6", got)
	}
	// Cut, then cut short: no row, no count.
	bad := nanosRecord(1, nil, []int64{2}, 0, 0)
	if err := b.Append(bad[:len(bad)-1], nil); err == nil {
		t.Fatal("a record cut short was taken")
	}
	if got := cut.Load(); got != 6 {
		t.Errorf("after a failed record, %d timestamps counted as cut, want 6", got)
	}
	if g.NumRows() != 3 {
		t.Fatalf("%d rows, want 3", g.NumRows())
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{
		"ts":                {1_700_000_000_123_456, -1, math.MaxInt64 / 1000},
		"local":             {-1},
		"many.list.element": {1, -2, 0, math.MinInt64/1000 - 1},
		"ms":                {5000, -1000, 0},
		"us":                {7, 8, 9},
	}
	for path, vals := range want {
		leaf := narrow.Leaf(path)
		if l := leaf.Logical; l.Kind != schema.Timestamp || l.Unit != schema.Micros {
			t.Errorf("%s is %s, want TIMESTAMP(MICROS)", path, l)
		}
		if got := g.Column(leaf.Column).Int64; !slices.Equal(got, vals) {
			t.Errorf("column %s = %v, want %v", path, got, vals)
		}
	}

	// Without the narrowing the nanoseconds stay.
	g2 := rowgroup.New(wide)
	d2, err := NewDecoder(g2, w, CountTruncated(&cut))
	if err != nil {
		t.Fatal(err)
	}
	if err := d2.Append(nanosRecord(-1, nil, nil, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if got := g2.Column(wide.Leaf("ts").Column).Int64; !slices.Equal(got, []int64{-1}) || cut.Load() != 6 {
		t.Errorf("a nanosecond column holds %v and counted %d, want [-1] and 6", got, cut.Load())
	}
}

// TestLookupMicrosTimestamps: with MicrosTimestamps a Lookup's leaf of a
// nanosecond timestamp is TIMESTAMP(MICROS) and its value the one the
// narrowed column holds; without, the nanoseconds.
func TestLookupMicrosTimestamps(t *testing.T) {
	w := avro.MustParse(nanosWriter)
	rec := nanosRecord(-1_500, nil, nil, 0, 0)
	for _, c := range []struct {
		opts []Option
		unit schema.TimeUnit
		want int64
	}{
		{nil, schema.Nanos, -1_500},
		{[]Option{MicrosTimestamps()}, schema.Micros, -2},
	} {
		l, err := NewLookup(w, [][]string{{"ts"}}, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if u := l.Leaf(0).Logical.Unit; u != c.unit {
			t.Errorf("leaf unit %s, want %s", u, c.unit)
		}
		if err := l.Read(rec); err != nil {
			t.Fatal(err)
		}
		if got := int64(binary.LittleEndian.Uint64(l.Value(0))); got != c.want {
			t.Errorf("value %d, want %d", got, c.want)
		}
	}
}
