package source

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// TestReplayAvroNanosMicros replays Avro records with nanosecond
// timestamps from a table's file of table.timestamp_precision micros,
// whose columns hold them floored to the microsecond
// (schema.NarrowNanos): each comes back as the microseconds times 1000,
// exact for whole microseconds, the digits below as zeros otherwise (the
// floor kept before 1970; int64's least nanosecond, which has no
// microsecond times 1000, comes back as itself), through the columnar
// path and reader.Rows alike; a millisecond timestamp comes back as it
// was.
func TestReplayAvroNanosMicros(t *testing.T) {
	const text = `{"type":"record","name":"R","namespace":"t","fields":[
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-nanos"}},
	{"name":"local","type":["null",{"type":"long","logicalType":"local-timestamp-nanos"}]},
	{"name":"many","type":{"type":"array","items":{"type":"long","logicalType":"timestamp-nanos"}}},
	{"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}}]}`
	s := avro.MustParse(text)
	rec := func(ts int64, local *int64, many []int64, ms int64) []byte {
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
		return avro.AppendLong(avro.AppendLong(out, 0), ms)
	}
	l1, l2 := int64(-1), int64(5_000)
	cases := []struct{ in, want []byte }{
		{rec(1_700_000_000_123_456_000, &l2, []int64{1000, -2000}, 17), nil},
		{rec(1_700_000_000_123_456_789, &l1, []int64{-1001, 999}, -1),
			rec(1_700_000_000_123_456_000, ptr(int64(-1000)), []int64{-2000, 0}, -1)},
		{rec(math.MaxInt64, nil, []int64{math.MinInt64}, 0), rec(math.MaxInt64/1000*1000, nil, []int64{math.MinInt64}, 0)},
	}
	ps, err := s.Parquet(rowgroup.EnvelopeNodeIn(schema.Micros))
	if err != nil {
		t.Fatal(err)
	}
	if ps, _, err = schema.WidenMillis(ps); err != nil {
		t.Fatal(err)
	}
	if ps, _, err = schema.NarrowNanos(ps); err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(ps)
	dec, err := avrorow.NewDecoder(g, s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		if err := b.Append(c.in, &rowgroup.Envelope{Topic: "avro", Offset: int64(i), Timestamp: time.UnixMilli(int64(i))}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, ps)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{archive.FooterTopic: "avro", archive.FooterPartition: "0", archive.FooterFirstOffset: "0",
		archive.FooterLastOffset: strconv.Itoa(len(cases) - 1), archive.FooterRecords: strconv.Itoa(len(cases)), avro.MetadataKey: s.String()} {
		w.SetKeyValue(k, v)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.FromSlash(sinkKey("avro", 0, 0)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want := func(i int) []byte {
		if cases[i].want != nil {
			return cases[i].want
		}
		return cases[i].in
	}
	reg := &memRegistry{ids: map[string]uint32{}}
	c := &collector{}
	if _, err := (&archiveDir{dir: dir}).run(t, context.Background(), Options{Topic: "avro-target", Registry: reg}, openDir(t, dir), c); err != nil {
		t.Fatal(err)
	}
	if len(c.msgs) != len(cases) {
		t.Fatalf("%d messages, want %d", len(c.msgs), len(cases))
	}
	for i, m := range c.msgs {
		if _, body, err := schemaregistry.SplitWire(m.Value); err != nil || !bytes.Equal(body, want(i)) {
			t.Errorf("record %d: body %x (%v), want %x", i, body, err, want(i))
		}
	}
	f, err := reader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	enc := avroEncoder(t, s)
	for i := range cases {
		v, err := rows.Next()
		if err != nil {
			t.Fatal(err)
		}
		got, err := enc.AppendRecord(nil, v)
		if err != nil {
			t.Fatalf("record %d through Rows: %v", i, err)
		}
		if w := append(schemaregistry.AppendWire(nil, 7), want(i)...); !bytes.Equal(got, w) {
			t.Errorf("record %d through Rows: %x, want %x", i, got, w)
		}
	}
}

func ptr[T any](v T) *T { return &v }
