package avrorow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/avro"
)

// lookupV1 has a field of every scalar type a partition can take, fields
// to skip before and after them, and a nested path through a nullable
// record; lookupV2 is a later version: fields reordered, country removed,
// id widened to long, a field added in front.
const (
	lookupV1 = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"id","type":"int"},
 {"name":"skip","type":{"type":"array","items":"string"}},
 {"name":"country","type":["null","string"],"default":null},
 {"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsu","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"day","type":{"type":"int","logicalType":"date"}},
 {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"famount","type":{"type":"fixed","name":"f5","size":5,"logicalType":"decimal","precision":10,"scale":2}},
 {"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B"]}},
 {"name":"ok","type":"boolean"},
 {"name":"u","type":{"type":"string","logicalType":"uuid"}},
 {"name":"payload","type":["null",{"type":"record","name":"p","fields":[
   {"name":"x","type":"double"},
   {"name":"nested","type":{"type":"record","name":"q","fields":[{"name":"level","type":"string"}]}}]}],"default":null},
 {"name":"tail","type":"string"}]}`
	lookupV2 = `{"type":"record","name":"ev","namespace":"t","fields":[
 {"name":"added","type":"string"},
 {"name":"payload","type":["null",{"type":"record","name":"p","fields":[
   {"name":"nested","type":{"type":"record","name":"q","fields":[{"name":"level","type":"string"}]}}]}],"default":null},
 {"name":"id","type":"long"}]}`
)

var lookupPaths = [][]string{{"id"}, {"country"}, {"ts"}, {"tsu"}, {"day"}, {"amount"}, {"famount"}, {"kind"}, {"ok"}, {"u"}, {"payload", "nested", "level"}, {"missing"}, {"payload", "gone"}}

func str(b []byte, s string) []byte { return append(avro.AppendLong(b, int64(len(s))), s...) }

// v1Record encodes a record of lookupV1; country and payload are null
// when empty.
func v1Record(id int32, country string, tsMillis, tsMicros int64, day int32, amount []byte, famount [5]byte, kind int64, ok bool, level string) []byte {
	b := avro.AppendLong(nil, int64(id))
	b = avro.AppendLong(b, 2) // skip: two strings, one block
	b = str(str(b, "a"), "bc")
	b = avro.AppendLong(b, 0)
	if country == "" {
		b = avro.AppendLong(b, 0)
	} else {
		b = str(avro.AppendLong(b, 1), country)
	}
	b = avro.AppendLong(b, tsMillis)
	b = avro.AppendLong(b, tsMicros)
	b = avro.AppendLong(b, int64(day))
	b = append(avro.AppendLong(b, int64(len(amount))), amount...)
	b = append(b, famount[:]...)
	b = avro.AppendLong(b, kind)
	if ok {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = str(b, "0f8fad5b-d9cb-469f-a165-70867728950e")
	if level == "" {
		b = avro.AppendLong(b, 0)
	} else {
		b = avro.AppendLong(b, 1)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(1.5))
		b = str(b, level)
	}
	return str(b, "the end")
}

func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// TestLookup: the values of scalar fields of records of two writer
// schemas, as PLAIN values of each writer's column, for every scalar
// type and logical type; null for a null or absent field (absent in the
// writer schema, or below a null record); the Decoder's errors for
// records that do not decode as far as the last field looked up.
func TestLookup(t *testing.T) {
	v1, v2 := avro.MustParse(lookupV1), avro.MustParse(lookupV2)
	l1, err := NewLookup(v1, lookupPaths)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := NewLookup(v2, lookupPaths)
	if err != nil {
		t.Fatal(err)
	}
	uuid := []byte{0x0f, 0x8f, 0xad, 0x5b, 0xd9, 0xcb, 0x46, 0x9f, 0xa1, 0x65, 0x70, 0x86, 0x77, 0x28, 0x95, 0x0e}
	full := v1Record(-7, "fr", 1767323045123, 1767323045123456, 20455, []byte{0x30, 0x39}, [5]byte{0, 0, 0, 0x30, 0x39}, 1, true, "deep")
	v2rec := str(nil, "new")
	v2rec = avro.AppendLong(v2rec, 1)
	v2rec = str(v2rec, "lvl")
	v2rec = avro.AppendLong(v2rec, 1<<40)
	for _, c := range []struct {
		name   string
		l      *Lookup
		value  []byte
		want   [][]byte // by path; nil: null
		err    string   // part of the error; "" for none
		leaves []string // the physical type and logical type of each path's column, "" when absent
	}{
		{name: "every type", l: l1, value: full, want: [][]byte{le32(-7), []byte("fr"), le64(1767323045123), le64(1767323045123456), le32(20455),
			{0x30, 0x39}, {0, 0, 0, 0x30, 0x39}, []byte("B"), {1}, uuid, []byte("deep"), nil, nil}},
		{name: "nulls", l: l1, value: v1Record(3, "", 0, -1, -1, nil, [5]byte{}, 0, false, ""), want: [][]byte{le32(3), nil, le64(0), le64(-1), le32(-1),
			{0}, {0, 0, 0, 0, 0}, []byte("A"), {0}, uuid, nil, nil, nil}},
		{name: "another writer schema", l: l2, value: v2rec, want: [][]byte{le64(1 << 40), nil, nil, nil, nil, nil, nil, nil, nil, nil, []byte("lvl"), nil, nil}},
		{name: "cut short", l: l1, value: full[:5], err: "skip[]: length 2, with 0 bytes left"},
		{name: "cut after the last field looked up", l: l1, value: full[:len(full)-4], want: [][]byte{le32(-7), []byte("fr"), le64(1767323045123), le64(1767323045123456), le32(20455),
			{0x30, 0x39}, {0, 0, 0, 0x30, 0x39}, []byte("B"), {1}, uuid, []byte("deep"), nil, nil}},
		{name: "bad union branch", l: l1, value: bytes.Replace(full, []byte{2, 4, 'f', 'r'}, []byte{6, 4, 'f', 'r'}, 1), err: "country: union branch 3"},
		{name: "not UTF-8", l: l1, value: bytes.Replace(full, []byte("fr"), []byte{0xff, 0xfe}, 1), err: "country: string is not valid UTF-8"},
		{name: "enum out of range", l: l1, value: v1Record(1, "", 0, 0, 0, nil, [5]byte{}, 5, false, ""), err: "kind: enum index 5"},
		{name: "empty", l: l2, value: nil, err: "record ends early"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.l.Read(c.value)
			if c.err != "" {
				var re *rowgroup.RecordError
				if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &re) {
					t.Fatalf("error %v, want a RecordError with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range lookupPaths {
				if got := c.l.Value(i); !bytes.Equal(got, c.want[i]) || (got == nil) != (c.want[i] == nil) {
					t.Errorf("%s = %x, want %x", strings.Join(p, "."), got, c.want[i])
				}
			}
		})
	}
	// The columns are the writer schemas' own.
	for _, c := range []struct {
		l    *Lookup
		path int
		want string // the leaf's physical and logical type; "" when absent
	}{
		{l1, 0, "INT32"}, {l2, 0, "INT64"}, {l1, 2, "INT64 TIMESTAMP(MILLIS,true)"}, {l1, 3, "INT64 TIMESTAMP(MICROS,true)"},
		{l1, 4, "INT32 DATE"}, {l1, 5, "BYTE_ARRAY DECIMAL(9,2)"}, {l1, 6, "FIXED_LEN_BYTE_ARRAY DECIMAL(10,2)"},
		{l1, 10, "BYTE_ARRAY STRING"}, {l1, 1, "BYTE_ARRAY STRING"}, {l2, 1, ""}, {l1, 11, ""}, {l1, 12, ""},
	} {
		n := c.l.Leaf(c.path)
		got := ""
		if n != nil {
			got = strings.TrimSpace(n.Physical.String() + " " + n.Logical.String())
		}
		if got != c.want {
			t.Errorf("%s: column %q, want %q", strings.Join(lookupPaths[c.path], "."), got, c.want)
		}
	}
}

// TestLookupMatchesDecoder: on the reference records, the values a Lookup
// reads are those the Decoder writes to the same columns.
func TestLookupMatchesDecoder(t *testing.T) {
	s := avro.MustParse(avroevents.Schema)
	paths := [][]string{{"id"}, {"ts"}, {"country"}, {"amount"}, {"payload", "session"}, {"payload", "nested", "level"}, {"payload", "nested", "flag"}}
	l, err := NewLookup(s, paths)
	if err != nil {
		t.Fatal(err)
	}
	_, recs := eventRecords(t, 300)
	g, _, b := newDecoder(t, s)
	for _, r := range recs {
		g.Reset()
		if err := b.Append(r, nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Read(r); err != nil {
			t.Fatal(err)
		}
		for i, p := range paths {
			c := g.Column(g.Schema().Lookup(p...).Column)
			var want []byte
			if c.NumValues() > 0 {
				switch c.Leaf.Physical {
				case meta.TypeInt32:
					want = le32(c.Int32[0])
				case meta.TypeInt64:
					want = le64(c.Int64[0])
				case meta.TypeDouble:
					want = binary.LittleEndian.AppendUint64(nil, math.Float64bits(c.Double[0]))
				case meta.TypeBoolean:
					want = []byte{0}
					if c.Bool[0] {
						want[0] = 1
					}
				default:
					want = c.ByteArray(0)
				}
			}
			if got := l.Value(i); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("%s = %x, the decoder wrote %x", strings.Join(p, "."), got, want)
			}
		}
	}
}

// TestNewLookupRefuses: a path to a value that is not a scalar column, or
// through a field that is not a record, is an error; a root that is not
// a record has its one column, value.
func TestNewLookupRefuses(t *testing.T) {
	s := avro.MustParse(lookupV1)
	for _, c := range []struct {
		path []string
		err  string
	}{
		{[]string{"skip"}, "field skip is not a value a column holds"},
		{[]string{"payload"}, "field payload is not a value a column holds"},
		{[]string{"id", "x"}, "field id is an int, not a record"},
		{[]string{"payload", "nested"}, "field payload.nested is not a value"},
	} {
		if _, err := NewLookup(s, [][]string{c.path}); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: error %v, want one with %q", strings.Join(c.path, "."), err, c.err)
		}
	}
	l, err := NewLookup(avro.MustParse(`"string"`), [][]string{{"value"}, {"other"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Read(str(nil, "plain")); err != nil || string(l.Value(0)) != "plain" || l.Value(1) != nil {
		t.Errorf("value %q, other %q (%v), want plain and null", l.Value(0), l.Value(1), err)
	}
}

// BenchmarkLookup measures what the path of a table partitioned by
// payload fields costs per Avro record: reading country and
// payload.nested.level of the reference record (the last field but two),
// beside BenchmarkDecoder's full decode of it.
//
//	go test ./rowgroup/avrorow -run '^$' -bench Lookup -benchmem
func BenchmarkLookup(b *testing.B) {
	s := avro.MustParse(avroevents.Schema)
	_, recs := eventRecords(b, 4096)
	l, err := NewLookup(s, [][]string{{"country"}, {"payload", "nested", "level"}})
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n / len(recs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := l.Read(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// FuzzLookup feeds arbitrary bytes to lookups of the reference record and
// of lookupV1: a value is read or rejected with a *rowgroup.RecordError,
// never a panic, and a value read is what a Decoder of the whole record
// reads when that accepts it.
func FuzzLookup(f *testing.F) {
	events := avro.MustParse(avroevents.Schema)
	v1 := avro.MustParse(lookupV1)
	_, recs := eventRecords(f, 4)
	for _, r := range recs {
		f.Add(r)
	}
	f.Add(v1Record(1, "de", 1, 2, 3, []byte{1}, [5]byte{}, 1, true, "x"))
	f.Add([]byte{})
	le, err := NewLookup(events, [][]string{{"country"}, {"payload", "nested", "level"}})
	if err != nil {
		f.Fatal(err)
	}
	lv, err := NewLookup(v1, lookupPaths)
	if err != nil {
		f.Fatal(err)
	}
	g, _, b := newDecoder(f, events)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, l := range []*Lookup{le, lv} {
			if err := l.Read(data); err != nil {
				var re *rowgroup.RecordError
				if !errors.As(err, &re) {
					t.Fatalf("error %v is a %T, want *rowgroup.RecordError", err, err)
				}
			}
		}
		if le.Read(data) != nil {
			return
		}
		g.Reset()
		if b.Append(data, nil) != nil {
			return
		}
		country := g.Column(g.Schema().Lookup("country").Column)
		if !bytes.Equal(country.ByteArray(0), le.Value(0)) {
			t.Fatalf("country %q, the decoder wrote %q", le.Value(0), country.ByteArray(0))
		}
	})
}
