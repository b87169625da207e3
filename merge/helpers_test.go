package merge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// shape is a kind of file the tests merge: its schema and how a row is
// built. Shapes with the envelope are archive files, as the sink writes
// them (the row builder, the writer, the Kafka range in the footer).
type shape struct {
	name   string
	schema func(t testing.TB) *schema.Schema
	// rows returns a function that appends row i of the shape to g.
	rows func(t testing.TB, g *rowgroup.RowGroup) func(i int64, env *rowgroup.Envelope) error
}

// withEnvelope is the schema of text with the envelope group beside its
// fields, as the sink's files of format json have it.
func withEnvelope(t testing.TB, text string) *schema.Schema {
	t.Helper()
	p := schema.MustParse(text)
	fields := append(append([]*schema.Node(nil), p.Fields()...), rowgroup.EnvelopeNode())
	s, err := schema.New(p.Name(), fields...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// jsonRows builds rows with the JSON shredder from the records of rec.
func jsonRows(rec func(i int64) []byte) func(t testing.TB, g *rowgroup.RowGroup) func(int64, *rowgroup.Envelope) error {
	return func(t testing.TB, g *rowgroup.RowGroup) func(int64, *rowgroup.Envelope) error {
		sh, err := rowgroup.NewJSONShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rowgroup.NewBuilder(g, sh)
		if err != nil {
			t.Fatal(err)
		}
		return func(i int64, env *rowgroup.Envelope) error { return b.Append(rec(i), env) }
	}
}

// eventRecord is record i of the reference events, the same for every i
// whoever asks.
func eventRecord(i int64) []byte {
	g := events.New(uint64(i), time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	return g.Append(nil)
}

var eventsShape = shape{
	name:   "events",
	schema: func(t testing.TB) *schema.Schema { return withEnvelope(t, events.Schema) },
	rows:   jsonRows(eventRecord),
}

var nestedShape = shape{
	name: "nested",
	schema: func(t testing.TB) *schema.Schema {
		return withEnvelope(t, `message nested {
  required int32 i32;
  optional int64 i64;
  optional float f;
  required double d;
  optional boolean b;
  optional binary s (STRING);
  optional int32 day (DATE);
  optional int64 dec (DECIMAL(18,3));
  optional fixed_len_byte_array(16) id (UUID);
  optional group m (MAP) {
    repeated group key_value {
      required binary key (STRING);
      optional group value (LIST) { repeated group list { optional int64 element; } }
    }
  }
  optional group ll (LIST) {
    repeated group list {
      optional group element (LIST) { repeated group list { required binary element (STRING); } }
    }
  }
  optional group g {
    repeated group r { optional int32 x; optional binary y (STRING); }
  }
}`)
	},
	rows: jsonRows(func(i int64) []byte {
		switch i % 4 {
		case 0:
			return fmt.Appendf(nil, `{"i32":%d,"i64":%d,"f":%d.5,"d":%d.25,"b":true,"s":"s%d","day":"2026-01-%02d","dec":%d.125,
				"id":"0f8fad5b-d9cb-469f-a165-70867728%04d","m":{"a":[1,null,%d],"b":null,"c":[]},"ll":[["x","y%d"],null,[]],"g":{"r":[{"x":%d},{"y":"z"},{}]}}`,
				i, i*1e9, i, i, i%7, i%28+1, i, i%10000, i, i%3, i)
		case 1:
			return fmt.Appendf(nil, `{"i32":%d,"d":-0.0,"s":"","m":{},"ll":[],"g":{"r":[]}}`, -i)
		case 2:
			return fmt.Appendf(nil, `{"i32":%d,"d":1e300,"b":false,"s":"ü%d","ll":[[]],"g":null}`, i, i)
		}
		return fmt.Appendf(nil, `{"i32":%d,"d":%d}`, i, i)
	}),
}

var variantShape = shape{
	name: "variant",
	schema: func(t testing.TB) *schema.Schema {
		sh, err := variant.ParseShapePaths("$.user string\n$.n int64\n$.tags[*] string\n$.o.x double\n")
		if err != nil {
			t.Fatal(err)
		}
		node, err := rowgroup.VariantNode("payload", schema.Required, sh)
		if err != nil {
			t.Fatal(err)
		}
		s, err := schema.New("v", node, rowgroup.EnvelopeNode())
		if err != nil {
			t.Fatal(err)
		}
		return s
	},
	rows: func(t testing.TB, g *rowgroup.RowGroup) func(int64, *rowgroup.Envelope) error {
		sh, err := rowgroup.NewVariantShredder(g)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rowgroup.NewBuilder(g, sh)
		if err != nil {
			t.Fatal(err)
		}
		return func(i int64, env *rowgroup.Envelope) error {
			var rec []byte
			switch i % 3 {
			case 0:
				rec = fmt.Appendf(nil, `{"user":"u%d","n":%d,"tags":["a","b%d"],"o":{"x":%d.5,"y":[1,{"z":null}]},"extra":true}`, i%5, i, i, i)
			case 1:
				rec = fmt.Appendf(nil, `{"user":%d,"n":"not a number","tags":[1,"c",null]}`, i)
			default:
				rec = fmt.Appendf(nil, `[%d,"top-level array"]`, i)
			}
			return b.Append(rec, env)
		}
	},
}

// physicalShape has a column of every physical type, filled directly, and
// no envelope: its files are not archive files.
var physicalShape = shape{
	name: "physical",
	schema: func(t testing.TB) *schema.Schema {
		return schema.MustParse(`message p {
  required boolean b;
  optional int32 i32;
  required int64 i64;
  optional int96 i96;
  required float f;
  optional double d;
  optional binary bin;
  required fixed_len_byte_array(3) fx;
  repeated int32 rep;
}`)
	},
	rows: func(t testing.TB, g *rowgroup.RowGroup) func(int64, *rowgroup.Envelope) error {
		return func(i int64, _ *rowgroup.Envelope) error {
			c := g.Columns()
			c[0].AppendBool(0, i%3 == 0)
			if i%5 == 0 {
				c[1].Null(0, 0)
			} else {
				c[1].AppendInt32(0, int32(i%100))
			}
			c[2].AppendInt64(0, i*i)
			if i%2 == 0 {
				c[3].AppendInt96(0, [12]byte{byte(i), byte(i >> 8), 11: 1})
			} else {
				c[3].Null(0, 0)
			}
			c[4].AppendFloat(0, float32(i)/3)
			if i%7 == 0 {
				c[5].Null(0, 0)
			} else {
				c[5].AppendDouble(0, float64(i%13)*0.5)
			}
			if i%4 == 1 {
				c[6].Null(0, 0)
			} else {
				c[6].AppendBytes(0, []byte(strconv.FormatInt(i%17, 16)+"\x00\xff"))
			}
			c[7].AppendBytes(0, []byte{byte(i), byte(i % 3), 0xee})
			if i%3 == 0 {
				c[8].Null(0, 0)
			}
			for k := range i % 3 {
				c[8].AppendInt32(uint8(min(k, 1)), int32(k))
			}
			g.EndRow()
			return nil
		}
	},
}

// spec is one input file of a test: rows first..first+n-1 of the shape,
// from partition p (offsets are the row numbers), written with opts.
type spec struct {
	p        int32
	first, n int64
	perGroup int  // rows per row group
	noRange  bool // no Kafka range in the footer, though the file has the envelope
	// stride, when more than 1, makes row i's offset i*stride: the
	// range has gaps (as a transactional topic's files have).
	stride int64
	opts   []writer.Option
}

// writeInput writes one input file into dir and returns its path.
func writeInput(t testing.TB, dir string, sh shape, sp spec) string {
	t.Helper()
	s := sh.schema(t)
	g := rowgroup.New(s)
	add := sh.rows(t, g)
	var buf bytes.Buffer
	w, err := writer.New(&buf, s, sp.opts...)
	if err != nil {
		t.Fatal(err)
	}
	hasEnv := s.Leaf("_kafka.offset") != nil
	for i := sp.first; i < sp.first+sp.n; i++ {
		var env *rowgroup.Envelope
		if hasEnv {
			env = &rowgroup.Envelope{Topic: "clicks", Partition: sp.p, Offset: i * max(sp.stride, 1), Timestamp: time.UnixMilli(1_790_000_000_000 + i),
				Key: []byte(strconv.FormatInt(i%10, 10)), Headers: []rowgroup.Header{{Key: "h", Value: []byte{byte(i)}}}}
			if i%4 == 0 {
				env.Key, env.Headers = nil, nil
			}
		}
		if err := add(i, env); err != nil {
			t.Fatalf("%s row %d: %v", sh.name, i, err)
		}
		if sp.perGroup > 0 && g.NumRows() == sp.perGroup {
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatal(err)
			}
			g.Reset()
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if hasEnv && !sp.noRange {
		st := max(sp.stride, 1)
		archive.Range{Topic: "clicks", Partition: sp.p, First: sp.first * st, Last: (sp.first + sp.n - 1) * st, Records: sp.n}.Footer(w.SetKeyValue)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d-%d.parquet", sh.name, sp.p, sp.first))
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("two inputs at %s", path)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// inputsOf opens the files at paths as merge inputs, closed at the test's
// end.
func inputsOf(t testing.TB, paths []string) []Input {
	t.Helper()
	var in []Input
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, Input{Name: filepath.Base(p), R: bytes.NewReader(data), Size: int64(len(data))})
	}
	return in
}

// mergeFiles merges the files at paths into files in dir and returns their
// paths with Merge's result.
func mergeFiles(t testing.TB, dir string, paths []string, opts ...Option) ([]string, []Output, error) {
	t.Helper()
	var bufs []*bytes.Buffer
	outs, err := Merge(context.Background(), inputsOf(t, paths), func(n int) (io.Writer, error) {
		if n != len(bufs) {
			return nil, fmt.Errorf("create(%d) after %d files", n, len(bufs))
		}
		bufs = append(bufs, new(bytes.Buffer))
		return bufs[n], nil
	}, opts...)
	if err != nil {
		return nil, nil, err
	}
	if len(outs) != len(bufs) {
		t.Fatalf("%d outputs for %d files created", len(outs), len(bufs))
	}
	var out []string
	for i, b := range bufs {
		if int64(b.Len()) != outs[i].Bytes {
			t.Errorf("output %d: %d bytes written, Output says %d", i, b.Len(), outs[i].Bytes)
		}
		p := filepath.Join(dir, fmt.Sprintf("merged-%d.parquet", i))
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out, outs, nil
}

// columnsOf reads the files with a crossread reader and concatenates each
// column over their row groups: the files' rows, one after the other.
func columnsOf(t testing.TB, read func(string) ([][]crossread.Chunk, error), paths []string) []crossread.Chunk {
	t.Helper()
	var cols []crossread.Chunk
	for _, p := range paths {
		rgs, err := read(p)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		for _, rg := range rgs {
			if cols == nil {
				cols = make([]crossread.Chunk, len(rg))
			}
			for c, ch := range rg {
				cols[c].Rep = append(cols[c].Rep, ch.Rep...)
				cols[c].Def = append(cols[c].Def, ch.Def...)
				cols[c].Values = append(cols[c].Values, ch.Values...)
			}
		}
	}
	return cols
}

// sameColumns fails the test where got and want differ.
func sameColumns(t testing.TB, reader string, s *schema.Schema, want, got []crossread.Chunk) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d columns, want %d", reader, len(got), len(want))
	}
	for c := range want {
		name := s.Leaves()[c].PathString()
		if !reflect.DeepEqual(want[c].Rep, got[c].Rep) || !reflect.DeepEqual(want[c].Def, got[c].Def) {
			t.Errorf("%s: column %s: levels differ (%d and %d slots, want %d and %d)", reader, name, len(got[c].Rep), len(got[c].Def), len(want[c].Rep), len(want[c].Def))
		}
		if !reflect.DeepEqual(want[c].Values, got[c].Values) {
			t.Errorf("%s: column %s: %d values differ from the %d of the inputs", reader, name, len(got[c].Values), len(want[c].Values))
		}
	}
}

// keyValue returns the value of a footer entry, or "" and false.
func keyValue(md *meta.FileMetaData, key string) (string, bool) {
	for _, kv := range md.KeyValueMetadata {
		if kv.Key == key && kv.Value != nil {
			return *kv.Value, true
		}
	}
	return "", false
}

// newEventsGroup returns a row group of the events shape with n rows, of
// partition 0 from offset 0.
func newEventsGroup(t testing.TB, n int64) *rowgroup.RowGroup {
	t.Helper()
	g := rowgroup.New(eventsShape.schema(t))
	add := eventsShape.rows(t, g)
	for i := range n {
		if err := add(i, &rowgroup.Envelope{Topic: "clicks", Offset: i, Timestamp: time.UnixMilli(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return g
}
