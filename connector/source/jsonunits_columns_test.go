package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// retimedSchema has a schema file's columns of every unit a table's
// file holds in microseconds: TIMESTAMP(MILLIS) (UTC and local),
// TIME(MILLIS), TIMESTAMP(NANOS), at the top, in lists, as a map's
// values and in a group, beside a native TIMESTAMP(MICROS).
const retimedSchema = `message m {
  required int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 local (TIMESTAMP(MILLIS,false));
  optional int32 tod (TIME(MILLIS,true));
  optional int64 ns (TIMESTAMP(NANOS,true));
  optional int64 lns (TIMESTAMP(NANOS,false));
  optional int64 us (TIMESTAMP(MICROS,true));
  optional group many (LIST) { repeated group list { optional int64 element (TIMESTAMP(MILLIS,true)); } }
  optional group times (LIST) { repeated group list { optional int32 element (TIME(MILLIS,false)); } }
  optional group nanos (LIST) { repeated group list { optional int64 element (TIMESTAMP(NANOS,true)); } }
  optional group named (MAP) { repeated group key_value { required binary key (STRING); optional int64 value (TIMESTAMP(MILLIS,true)); } }
  optional group g { optional int64 at (TIMESTAMP(MILLIS,true)); optional int32 t (TIME(MILLIS,true)); optional int64 n (TIMESTAMP(NANOS,false)); }
}`

// retimedWhole are records of retimedSchema whose nanoseconds are whole
// microseconds: nulls, absent fields, empty lists, before 1970, the
// ends of the times of day, of RFC 3339's years and of nanoseconds.
var retimedWhole = []string{
	`{"ts":1700000000123,"local":"2026-11-23T10:00:00.5","tod":86399999,"ns":1700000000123456000,"lns":"2026-11-23T10:00:00.000001","us":7,` +
		`"many":[1,null,"1969-12-31T23:59:59.999Z"],"times":["00:00:00.001",0,null],"nanos":[-1000,null,"1969-12-31T23:59:59.999999Z"],` +
		`"named":{"a":-1,"b":null},"g":{"at":0,"t":45296789,"n":-2000}}`,
	`{"ts":"0001-01-01T00:00:00Z","local":"9999-12-31T23:59:59.999","many":[],"times":[],"g":{}}`,
	`{"ts":"9999-12-31T23:59:59.999Z","ns":"1677-09-21T00:12:43.145225Z","lns":"2262-04-11T23:47:16.854775","tod":0}`,
	`{"ts":-1,"tod":"23:59:59.999","ns":-1000,"named":{}}`,
	`{"ts":-62135596800001,"local":300000000000000}`,
}

// retimedCut are records whose nanoseconds have digits below the
// microsecond, which a table's file cuts.
var retimedCut = []string{
	`{"ts":5,"ns":-1,"lns":"2026-11-23T10:00:00.000001999","nanos":[1999,-1001],"g":{"n":999}}`,
}

// retimedFile writes values as the sink writes a table's file of
// retimedSchema: its MILLIS and TIME(MILLIS) columns widened, its NANOS
// narrowed, and the footer naming them; it returns the file's bytes.
func retimedFile(t *testing.T, values []string) []byte {
	t.Helper()
	msg, err := schema.Parse(retimedSchema)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]schema.TimeUnit{}
	names := map[string]string{}
	for _, l := range msg.Leaves() {
		if u := l.Logical.Unit; u != schema.Micros && (l.Logical.Kind == schema.Timestamp || l.Logical.Kind == schema.Time) {
			units[l.PathString()], names[l.PathString()] = u, u.String()
		}
	}
	for _, retime := range []func(*schema.Schema) (*schema.Schema, bool, error){schema.WidenMillis, schema.WidenTimeMillis, schema.NarrowNanos} {
		if msg, _, err = retime(msg); err != nil {
			t.Fatal(err)
		}
	}
	footer, err := json.Marshal(names)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := schema.New(msg.Name(), append(msg.Fields(), rowgroup.EnvelopeNodeIn(schema.Micros))...)
	if err != nil {
		t.Fatal(err)
	}
	g := rowgroup.New(fs)
	sh, err := rowgroup.NewJSONShredder(g, rowgroup.JSONTimestampUnits(units))
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if err := b.Append([]byte(v), &rowgroup.Envelope{Topic: "t", Offset: int64(i), Timestamp: time.UnixMilli(int64(i))}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	var out bytes.Buffer
	w, err := writer.New(&out, fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{archive.FooterTopic: "t", archive.FooterPartition: "0", archive.FooterFirstOffset: "0",
		archive.FooterLastOffset: strconv.Itoa(len(values) - 1), archive.FooterRecords: strconv.Itoa(len(values)), archive.JSONTimestampUnitsKey: string(footer)} {
		w.SetKeyValue(k, v)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRetimedColumnsMatchRows renders the records of a table's file of a
// schema file with columns of every retimed unit through reader.Rows
// (appendCompactJSON) and through the columnar assembler with RenderIn:
// both give the same bytes, record by record, for nulls, lists, maps,
// groups, values before 1970 and beyond RFC 3339's years, and
// nanoseconds cut to the microsecond.
func TestRetimedColumnsMatchRows(t *testing.T) {
	values := append(append([]string(nil), retimedWhole...), retimedCut...)
	file := retimedFile(t, values)
	f, err := reader.Open(bytes.NewReader(file), int64(len(file)))
	if err != nil {
		t.Fatal(err)
	}
	sch := f.Schema()
	units, err := jsonUnits(f.Metadata().KeyValueMetadata, sch)
	if err != nil || len(units) != 12 {
		t.Fatalf("%d columns named by the footer (%v), want 12", len(units), err)
	}
	var payload []*schema.Node
	for _, n := range sch.Fields() {
		if n.Name != "_kafka" {
			payload = append(payload, n)
		}
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var byRows [][]byte
	for range values {
		v, err := rows.Next()
		if err != nil {
			t.Fatal(err)
		}
		out := []byte{'{'}
		comma := false
		for _, n := range payload {
			fv, _ := v.Field(n.Name)
			if fv.IsNull() {
				continue
			}
			if comma {
				out = append(out, ',')
			}
			comma = true
			out = appendCompactJSON(appendKey(out, n.Name), fv, units)
		}
		byRows = append(byRows, append(out, '}'))
	}
	a, err := reader.NewJSONAssembler(f, 0, payload, false)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if err := a.RenderIn(units); err != nil {
		t.Fatal(err)
	}
	for i := range values {
		got, err := a.Append(nil)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(got, byRows[i]) {
			t.Errorf("record %d, columnar:\n%s\nthrough reader.Rows:\n%s", i, got, byRows[i])
		}
	}
	if _, err := a.Append(nil); !errors.Is(err, io.EOF) {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
	for _, want := range []string{`"tod":"23:59:59.999"`, `"times":["00:00:00.001","00:00:00.000",null]`, `"many":["1970-01-01T00:00:00.001Z",null,"1969-12-31T23:59:59.999Z"]`, `"local":"11476-08-15T05:20:00.000"`, `"ns":"1969-12-31T23:59:59.999999000Z"`,
		`"1969-12-31T23:59:59.999Z"`, `"ts":"0000-12-31T23:59:59.999Z"`, `"named":{"a":"1969-12-31T23:59:59.999Z","b":null}`, `"us":"1970-01-01T00:00:00.000007Z"`} {
		if !bytes.Contains(bytes.Join(byRows, nil), []byte(want)) {
			t.Errorf("the records lack %s:\n%s", want, bytes.Join(byRows, []byte("\n")))
		}
	}
}

// TestReplayRetimedColumnar replays a table's file with retimed columns
// whose shapes the columnar path takes: no row group is read through
// reader.Rows, and the records are those of the same values replayed
// from a file without a table, byte for byte.
func TestReplayRetimedColumnar(t *testing.T) {
	file := retimedFile(t, retimedWhole)
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.FromSlash(sinkKey("t", 0, 0)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &collector{}
	r, err := (&archiveDir{dir: dir}).run(t, context.Background(), Options{}, openDir(t, dir), c)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Stats().RowGroupsByRows.Load(); n != 0 {
		t.Errorf("%d row groups read through reader.Rows, want 0", n)
	}
	var got []byte
	for _, m := range c.msgs {
		got = append(append(got, m.Value...), '\n')
	}
	msg, err := schema.Parse(retimedSchema)
	if err != nil {
		t.Fatal(err)
	}
	if plain := replayJSON(t, msg, retimedWhole, ""); !bytes.Equal(got, plain) {
		t.Errorf("replayed from the table's file:\n%s\nwithout a table:\n%s", got, plain)
	}
	if !strings.Contains(string(got), `"ns":"1677-09-21T00:12:43.145225000Z"`) {
		t.Errorf("replayed records lack the least nanosecond timestamp:\n%s", got)
	}
}

// FuzzRetimedMatchesRows renders a record of arbitrary microsecond
// values in columns a table's file holds for a schema file's MILLIS
// timestamps (UTC and local), TIME(MILLIS) and NANOS timestamps, through
// reader.Rows (appendCompactJSON) and through the columnar assembler with
// RenderIn: the bytes are the same, at int64's ends and beyond RFC
// 3339's years too.
func FuzzRetimedMatchesRows(f *testing.F) {
	for _, seed := range [][3]int64{{0, 0, 0}, {-1, -1001, 1}, {math.MaxInt64, math.MinInt64, 86_399_999_999},
		{-62_135_596_800_000_001, 253_402_300_800_000_000, -86_400_000_000}, {1_700_000_000_123_456, 45_296_789_123, -9_223_372_036_854_776}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	s, err := schema.Parse(`message m {
  required int64 ts (TIMESTAMP(MICROS,true));
  required int64 local (TIMESTAMP(MICROS,false));
  required int64 t (TIME(MICROS,true));
  required int64 n (TIMESTAMP(MICROS,true));
  required int64 ln (TIMESTAMP(MICROS,false));
}`)
	if err != nil {
		f.Fatal(err)
	}
	units := map[int]schema.TimeUnit{0: schema.Millis, 1: schema.Millis, 2: schema.Millis, 3: schema.Nanos, 4: schema.Nanos}
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		g := rowgroup.New(s)
		for i, v := range []int64{a, b, c, a, b} {
			g.Column(i).AppendInt64(0, v)
		}
		g.EndRow()
		var out bytes.Buffer
		w, err := writer.New(&out, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRowGroup(g); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		rf, err := reader.Open(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := rf.Rows()
		if err != nil {
			t.Fatal(err)
		}
		v, err := rows.Next()
		if err != nil {
			t.Fatal(err)
		}
		want := []byte{'{'}
		for i, n := range rf.Schema().Fields() {
			fv, _ := v.Field(n.Name)
			if i > 0 {
				want = append(want, ',')
			}
			want = appendCompactJSON(appendKey(want, n.Name), fv, units)
		}
		want = append(want, '}')
		as, err := reader.NewJSONAssembler(rf, 0, rf.Schema().Fields(), false)
		if err != nil {
			t.Fatal(err)
		}
		defer as.Release()
		if err := as.RenderIn(units); err != nil {
			t.Fatal(err)
		}
		got, err := as.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("columnar:\n%s\nthrough reader.Rows:\n%s", got, want)
		}
	})
}
