package protorow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// microsProto has Timestamps alone, optional, in a list and as map
// values, beside a Duration and a string that can fail after them.
const microsProto = `syntax = "proto3";
package pqsink.micros;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
message M {
  google.protobuf.Timestamp ts = 1;
  repeated google.protobuf.Timestamp many = 2;
  map<string, google.protobuf.Timestamp> named = 3;
  google.protobuf.Duration took = 4;
  string note = 5;
}
`

func microsDescriptor(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	path := filepath.Join(t.TempDir(), "micros.proto")
	if err := os.WriteFile(path, []byte(microsProto), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := protobuf.LoadFile(context.Background(), path, nil, "pqsink.micros.M")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// stamp is a Timestamp (or Duration) message.
func stamp(secs int64, nanos int32) []byte {
	var b []byte
	if secs != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), uint64(secs))
	}
	if nanos != 0 {
		b = protowire.AppendVarint(protowire.AppendTag(b, 2, protowire.VarintType), uint64(int64(nanos)))
	}
	return b
}

// microsMsg is a message of microsProto; a nil ts leaves it unset.
type microsMsg struct {
	ts    []byte
	many  [][]byte
	named map[string][]byte
	took  []byte
	note  []byte // written as is: a bad string fails the message after its Timestamps
}

func (m microsMsg) encode() []byte {
	var b []byte
	if m.ts != nil {
		b = protowire.AppendBytes(protowire.AppendTag(b, 1, protowire.BytesType), m.ts)
	}
	for _, e := range m.many {
		b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), e)
	}
	keys := make([]string, 0, len(m.named))
	for k := range m.named {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		entry := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		entry = protowire.AppendBytes(protowire.AppendTag(entry, 2, protowire.BytesType), m.named[k])
		b = protowire.AppendBytes(protowire.AppendTag(b, 3, protowire.BytesType), entry)
	}
	if m.took != nil {
		b = protowire.AppendBytes(protowire.AppendTag(b, 4, protowire.BytesType), m.took)
	}
	if m.note != nil {
		b = protowire.AppendBytes(protowire.AppendTag(b, 5, protowire.BytesType), m.note)
	}
	return b
}

// Bounds of a Timestamp, 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const (
	minSecs = -62135596800
	maxSecs = 253402300799
)

// TestTimestampMicros decodes Timestamps into the columns that
// schema.NarrowNanos makes of them, as a table's files have them with
// table.timestamp_precision: micros. Each value is seconds*1e6 +
// nanos/1000 (floored: before 1970 too), over the Timestamp's whole range
// (beyond INT64 nanoseconds'); an unset one is NULL, a list and a map
// hold theirs in order; a Duration stays in nanoseconds. The counter
// takes the Timestamps whose nanoseconds were cut, of messages appended
// whole only; an invalid Timestamp is the record's error and leaves no
// row.
func TestTimestampMicros(t *testing.T) {
	md := microsDescriptor(t)
	ps, err := protobuf.Parquet(md)
	if err != nil {
		t.Fatal(err)
	}
	wide, changed, err := schema.NarrowNanos(ps)
	if err != nil || !changed {
		t.Fatalf("NarrowNanos: changed %v, %v", changed, err)
	}
	g := rowgroup.New(wide)
	var cut atomic.Int64
	d, err := NewDecoder(g, md, CountTruncated(&cut))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, d)
	if err != nil {
		t.Fatal(err)
	}
	good := []microsMsg{
		// 2026-11-27T12:00:00.123456789Z: cut (1).
		{ts: stamp(1_795_780_800, 123_456_789), took: stamp(2, 5)},
		// Unset, with a list: a whole microsecond, the epoch, and cut (2).
		{many: [][]byte{stamp(1, 1000), stamp(0, 0), stamp(-1, 999_999_999)}},
		// Before 1970 with nanos: floored, -0.5s + 1ns is -500000us; cut (3).
		{ts: stamp(-1, 500_000_001), named: map[string][]byte{"a": stamp(60, 0), "b": stamp(0, 999)}}, // b cut (4)
		// The range's edges, far beyond INT64 nanoseconds' (1677-2262).
		{ts: stamp(minSecs, 0), many: [][]byte{stamp(maxSecs, 999_999_000)}},
		{ts: stamp(maxSecs, 999_999_999)}, // cut (5)
	}
	for i, m := range good {
		if err := b.Append(m.encode(), nil); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if got := cut.Load(); got != 5 {
		t.Errorf("%d Timestamps counted as cut, want 5", got)
	}
	for _, c := range []struct {
		name string
		m    microsMsg
		want string
	}{
		{"past 9999", microsMsg{ts: stamp(maxSecs+1, 0)}, "ts: timestamp 253402300800s 0ns is not valid"},
		{"before 0001", microsMsg{many: [][]byte{stamp(minSecs-1, 0)}}, "many: timestamp -62135596801s 0ns is not valid"},
		{"nanos too large", microsMsg{named: map[string][]byte{"x": stamp(0, 1_000_000_000)}}, "named.value: timestamp 0s 1000000000ns is not valid"},
		{"nanos negative", microsMsg{ts: stamp(5, -1)}, "ts: timestamp 5s -1ns is not valid"},
		// Its Timestamp is cut, but the message fails after it: not counted.
		{"bad string after a cut", microsMsg{ts: stamp(1, 1), note: []byte{0xff}}, "note: string is not valid UTF-8"},
	} {
		err := b.Append(c.m.encode(), nil)
		var re *rowgroup.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a RecordError with %q", c.name, err, c.want)
		}
	}
	if got := cut.Load(); got != 5 {
		t.Errorf("after the refused messages, %d Timestamps counted as cut, want 5", got)
	}
	if g.NumRows() != len(good) {
		t.Fatalf("%d rows, want %d", g.NumRows(), len(good))
	}
	for _, leaf := range wide.Leaves() {
		if l := leaf.Logical; l.Kind == schema.Timestamp && (l.Unit != schema.Micros || !l.UTC) {
			t.Errorf("leaf %s is %s, want TIMESTAMP(MICROS,true)", leaf.PathString(), l)
		}
	}
	if l := wide.Leaf("took").Logical; l.Kind != schema.None {
		t.Errorf("the Duration is %s, want a plain INT64", l)
	}
	want := map[string][]int64{
		"ts":                    {1_795_780_800_123_456, -500_000, minSecs * 1e6, maxSecs*1e6 + 999_999},
		"many.list.element":     {1_000_001, 0, -1, maxSecs*1e6 + 999_999},
		"named.key_value.value": {60_000_000, 0},
		"took":                  {2_000_000_005},
	}
	for path, vals := range want {
		c := g.Column(wide.Leaf(path).Column)
		if !slices.Equal(c.Int64, vals) {
			t.Errorf("column %s = %v, want %v", path, c.Int64, vals)
		}
	}
	// The rows read back: row 1's ts is NULL, the others' lists and maps
	// are empty, not NULL.
	rows := readBack(t, g)
	if !bytes.Contains(rows[1], []byte(`"ts":null`)) || bytes.Contains(rows[0], []byte(`"ts":null`)) {
		t.Errorf("row 1 should have a NULL ts and row 0 not:\n%s\n%s", rows[0], rows[1])
	}
	if !bytes.Contains(rows[0], []byte(`"many":[]`)) {
		t.Errorf("row 0's list: %s", rows[0])
	}
}

// TestTimestampNanosUnchanged: without narrowing, a Timestamp is in
// nanoseconds as before, and one beyond INT64 nanoseconds (the year 1000)
// is refused, where the microsecond column takes it; nothing is counted.
func TestTimestampNanosUnchanged(t *testing.T) {
	md := microsDescriptor(t)
	g, b := newBuilder(t, md)
	if err := b.Append(microsMsg{ts: stamp(1, 1)}.encode(), nil); err != nil {
		t.Fatal(err)
	}
	if got := g.Column(g.Schema().Leaf("ts").Column).Int64; !slices.Equal(got, []int64{1_000_000_001}) {
		t.Errorf("ts = %v, want nanoseconds", got)
	}
	const year1000 = -30610224000
	if err := b.Append(microsMsg{ts: stamp(year1000, 0)}.encode(), nil); err == nil || !strings.Contains(err.Error(), "beyond what INT64 nanoseconds hold") {
		t.Errorf("the year 1000 in nanoseconds: %v", err)
	}
	ps, _ := protobuf.Parquet(md)
	narrow, _, err := schema.NarrowNanos(ps)
	if err != nil {
		t.Fatal(err)
	}
	gm := rowgroup.New(narrow)
	dm, err := NewDecoder(gm, md)
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.Append(microsMsg{ts: stamp(year1000, 0)}.encode()); err != nil {
		t.Errorf("the year 1000 in microseconds: %v", err)
	}
	if got := gm.Column(narrow.Leaf("ts").Column).Int64; !slices.Equal(got, []int64{year1000 * 1_000_000}) {
		t.Errorf("ts = %v, want %d", got, year1000*1_000_000)
	}
}

// TestLookupMicros: with MicrosTimestamps, a Lookup's Leaf of a Timestamp
// is the narrowed column and its value the microseconds the Decoder
// writes there (floored); without, nanoseconds.
func TestLookupMicros(t *testing.T) {
	md := microsDescriptor(t)
	paths := [][]string{{"ts"}, {"took"}}
	for _, c := range []struct {
		name string
		opts []Option
		unit schema.TimeUnit
		ts   int64
	}{
		{"micros", []Option{MicrosTimestamps()}, schema.Micros, -500_000},
		{"nanos", nil, schema.Nanos, -499_999_999},
	} {
		l, err := NewLookup(md, paths, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if u := l.Leaf(0).Logical.Unit; u != c.unit {
			t.Errorf("%s: leaf unit %v, want %v", c.name, u, c.unit)
		}
		if err := l.Read(microsMsg{ts: stamp(-1, 500_000_001), took: stamp(3, 0)}.encode()); err != nil {
			t.Fatal(err)
		}
		got := int64(0)
		for i, x := range l.Value(0) {
			got |= int64(x) << (8 * i)
		}
		if got != c.ts {
			t.Errorf("%s: ts %d, want %d", c.name, got, c.ts)
		}
		if v := l.Value(1); len(v) != 8 || v[0] == 0 && v[1] == 0 {
			t.Errorf("%s: took %v", c.name, v)
		}
		if err := l.Read(microsMsg{ts: stamp(maxSecs+1, 0)}.encode()); err == nil {
			t.Errorf("%s: a Timestamp past 9999 read without error", c.name)
		}
	}
}
