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
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// timeMillisSchema has times of day in milliseconds at the top,
// nullable, in an array and in a union of several types, beside a
// timestamp-millis.
const timeMillisSchema = `{"type":"record","name":"R","namespace":"t","fields":[
	{"name":"tod","type":{"type":"int","logicalType":"time-millis"}},
	{"name":"maybe","type":["null",{"type":"int","logicalType":"time-millis"}]},
	{"name":"many","type":{"type":"array","items":{"type":"int","logicalType":"time-millis"}}},
	{"name":"either","type":["null",{"type":"int","logicalType":"time-millis"},"string"]},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// timeMillisRecord encodes a record of timeMillisSchema; either is a
// time when an int64, a string, or null.
func timeMillisRecord(tod int64, maybe *int64, many []int64, either any, ts int64) []byte {
	out := avro.AppendLong(nil, tod)
	if maybe == nil {
		out = avro.AppendLong(out, 0)
	} else {
		out = avro.AppendLong(avro.AppendLong(out, 1), *maybe)
	}
	if len(many) > 0 {
		out = avro.AppendLong(out, int64(len(many)))
		for _, m := range many {
			out = avro.AppendLong(out, m)
		}
	}
	out = avro.AppendLong(out, 0)
	switch e := either.(type) {
	case int64:
		out = avro.AppendLong(avro.AppendLong(out, 1), e)
	case string:
		out = append(avro.AppendLong(avro.AppendLong(out, 2), int64(len(e))), e...)
	default:
		out = avro.AppendLong(out, 0)
	}
	return avro.AppendLong(out, ts)
}

// TestReplayAvroTimeMillis replays Avro records with time-millis fields
// from a table's file, whose columns hold them in microseconds
// (schema.WidenTimeMillis, INT64 TIME(MICROS)), and from a file without a
// table (INT32 TIME(MILLIS)): each comes back as the producer's bytes,
// through the columnar path, reader.Rows and a whole replay alike.
func TestReplayAvroTimeMillis(t *testing.T) {
	s := avro.MustParse(timeMillisSchema)
	noon, zero := int64(43_200_000), int64(0)
	bodies := [][]byte{
		timeMillisRecord(45_296_789, &noon, []int64{0, 86_399_999}, int64(7), 1_700_000_000_123),
		timeMillisRecord(0, nil, nil, "x", -1),
		timeMillisRecord(math.MaxInt32, &zero, []int64{math.MinInt32, -1}, nil, 0),
	}
	for _, table := range []bool{true, false} {
		name := map[bool]string{true: "table", false: "plain"}[table]
		t.Run(name, func(t *testing.T) {
			ps, err := s.Parquet(rowgroup.EnvelopeNodeIn(schema.Micros))
			if err != nil {
				t.Fatal(err)
			}
			if table {
				if ps, _, err = schema.WidenMillis(ps); err != nil {
					t.Fatal(err)
				}
				if ps, _, err = schema.WidenTimeMillis(ps); err != nil {
					t.Fatal(err)
				}
			}
			file := timeMillisFile(t, s, ps, bodies)
			f, err := reader.Open(bytes.NewReader(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			wantPhys := map[bool]meta.Type{true: meta.TypeInt64, false: meta.TypeInt32}[table]
			for _, p := range []string{"tod", "maybe", "many.list.element", "either.member0"} {
				if l := f.Schema().Leaf(p); l.Physical != wantPhys || l.Logical.Kind != schema.Time {
					t.Fatalf("column %s is %s %s, want %s TIME", p, l.Physical, l.Logical, wantPhys)
				}
			}
			enc := avroEncoder(t, s)

			// The columnar path binds the file's columns.
			cols, _, err := enc.(format.ColumnEncoder).Columns(f, 0, nil)
			if err != nil {
				t.Fatalf("columnar: %v", err)
			}
			for i, want := range bodies {
				got, err := cols.AppendNext(nil)
				if err != nil {
					t.Fatalf("record %d, columnar: %v", i, err)
				}
				if w := append(schemaregistry.AppendWire(nil, 7), want...); !bytes.Equal(got, w) {
					t.Errorf("record %d, columnar: %x, want %x", i, got, w)
				}
			}
			cols.Release()

			rows, err := f.Rows()
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range bodies {
				v, err := rows.Next()
				if err != nil {
					t.Fatal(err)
				}
				got, err := enc.AppendRecord(nil, v)
				if err != nil {
					t.Fatalf("record %d through Rows: %v", i, err)
				}
				if w := append(schemaregistry.AppendWire(nil, 7), want...); !bytes.Equal(got, w) {
					t.Errorf("record %d through Rows: %x, want %x", i, got, w)
				}
			}

			dir := t.TempDir()
			path := filepath.Join(dir, filepath.FromSlash(sinkKey("avro", 0, 0)))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, file, 0o644); err != nil {
				t.Fatal(err)
			}
			c := &collector{}
			if _, err := (&archiveDir{dir: dir}).run(t, context.Background(), Options{Topic: "avro-target", Registry: &memRegistry{ids: map[string]uint32{}}}, openDir(t, dir), c); err != nil {
				t.Fatal(err)
			}
			if len(c.msgs) != len(bodies) {
				t.Fatalf("%d messages, want %d", len(c.msgs), len(bodies))
			}
			for i, m := range c.msgs {
				if _, body, err := schemaregistry.SplitWire(m.Value); err != nil || !bytes.Equal(body, bodies[i]) {
					t.Errorf("record %d replayed: body %x (%v), want %x", i, body, err, bodies[i])
				}
			}
		})
	}
}

// timeMillisFile writes the records of Avro schema s, shredded into
// Parquet schema ps, into a file as the sink lands it.
func timeMillisFile(t *testing.T, s *avro.Schema, ps *schema.Schema, bodies [][]byte) []byte {
	t.Helper()
	g := rowgroup.New(ps)
	dec, err := avrorow.NewDecoder(g, s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range bodies {
		if err := b.Append(body, &rowgroup.Envelope{Topic: "avro", Offset: int64(i), Timestamp: time.UnixMilli(int64(i))}); err != nil {
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
		archive.FooterLastOffset: strconv.Itoa(len(bodies) - 1), archive.FooterRecords: strconv.Itoa(len(bodies)), avro.MetadataKey: s.String()} {
		w.SetKeyValue(k, v)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
