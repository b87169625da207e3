package rowgroup

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/schema"
)

// millisUnits are the JSONTimestampUnits of the millisecond leaves of s.
func millisUnits(s *schema.Schema) map[string]schema.TimeUnit {
	units := map[string]schema.TimeUnit{}
	for _, l := range s.Leaves() {
		if l.Logical.Kind == schema.Timestamp && l.Logical.Unit == schema.Millis {
			units[l.PathString()] = schema.Millis
		}
	}
	return units
}

// widenedShredder returns a row group of text widened (schema.WidenMillis)
// and its shredder with the units of text's millisecond leaves.
func widenedShredder(t *testing.T, text string) (*RowGroup, *JSONShredder) {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	wide, changed, err := schema.WidenMillis(s)
	if err != nil || !changed {
		t.Fatalf("WidenMillis: changed %v, %v", changed, err)
	}
	g := New(wide)
	sh, err := NewJSONShredder(g, JSONTimestampUnits(millisUnits(s)))
	if err != nil {
		t.Fatal(err)
	}
	return g, sh
}

// TestJSONMillisWidened shreds every record of the fast path's tests into
// fastSchema and into fastSchema widened: each record is taken or refused
// alike, with the same message, and each millisecond column of the one
// holds the values of the other times 1000, the other columns the same;
// the widened shredder's fast path agrees with its walk, and takes the
// records the plain one's takes.
func TestJSONMillisWidened(t *testing.T) {
	gm, m := newShredder(t, fastSchema)
	gw, w := widenedShredder(t, fastSchema)
	gb, b := widenedShredder(t, fastSchema)
	if !w.fast {
		t.Fatal("the widened fastSchema does not take the fast path")
	}
	for _, line := range fastGood {
		if !w.fastRecord([]byte(line)) {
			t.Errorf("fast path does not take %s", line)
		}
		gw.Reset()
		w.fastBackoff, w.fastSkip = 0, 0
	}
	records := append(append([]string{
		`{"id":1,"ts":"2026-11-23T10:00:00Z","ms":1700000000123,"times":[-1,0,"1969-12-31T23:59:59.999Z"],"r":{}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","ms":-9223372036854775,"r":{}}`,
	}, fastGood...), fastOther...)
	for _, line := range records {
		errW := shredBoth(t, gw, w, gb, b, []byte(line))
		errM := m.Shred([]byte(line))
		if fmt.Sprint(errW) != fmt.Sprint(errM) {
			t.Errorf("Shred(%s): widened %v, millis %v", line, errW, errM)
		}
	}
	if gw.NumRows() != gm.NumRows() || gw.NumRows() < len(fastGood)+2 {
		t.Fatalf("rows: widened %d, millis %d", gw.NumRows(), gm.NumRows())
	}
	for i, cw := range gw.Columns() {
		cm := gm.Columns()[i]
		want := cm.Int64
		if l := cm.Leaf.Logical; l.Kind == schema.Timestamp && l.Unit == schema.Millis {
			if cw.Leaf.Logical.Unit != schema.Micros {
				t.Errorf("%s: %s, want MICROS", cw.Leaf.PathString(), cw.Leaf.Logical)
			}
			want = make([]int64, len(cm.Int64))
			for j, v := range cm.Int64 {
				want[j] = v * 1000
			}
		}
		if !slices.Equal(cw.Int64, want) || !slices.Equal(cw.Def, cm.Def) || !slices.Equal(cw.Rep, cm.Rep) {
			t.Errorf("%s: widened %v def %v rep %v, want %v def %v rep %v", cw.Leaf.PathString(), cw.Int64, cw.Def, cw.Rep, want, cm.Def, cm.Rep)
		}
	}
}

// TestJSONMillisWidenedValues pins the values of a widened column, at the
// top, in a list and as a map's key, from numbers and strings, nulls, and
// the refusal of a number of milliseconds that microseconds cannot hold,
// which leaves no row behind.
func TestJSONMillisWidenedValues(t *testing.T) {
	const text = `message m {
  required int64 ts (TIMESTAMP(MILLIS,true));
  optional int64 local (TIMESTAMP(MILLIS,false));
  optional int64 us (TIMESTAMP(MICROS,true));
  optional group many (LIST) { repeated group list { optional int64 element (TIMESTAMP(MILLIS,true)); } }
  optional group byTime (MAP) { repeated group key_value { required int64 key (TIMESTAMP(MILLIS,true)); optional binary value (STRING); } }
}`
	g, s := widenedShredder(t, text)
	for _, line := range []string{
		`{"ts":1700000000123,"local":"2026-11-23T10:00:00.5","us":7,"many":[1,null,"1970-01-01T00:00:00.002Z"],"byTime":{"3":"a","1970-01-01T00:00:00.004Z":"b"}}`,
		`{"ts": -1, "local": null, "us": null, "many": [], "byTime": null}`,
		`{"ts":9223372036854775,"many":null}`,
		`{"ts":-9223372036854775}`,
	} {
		if err := s.Shred([]byte(line)); err != nil {
			t.Fatalf("Shred(%s): %v", line, err)
		}
	}
	for _, c := range []struct{ line, want string }{
		{`{"ts":9223372036854776}`, `json record: ts: value 9223372036854776: 9223372036854776 milliseconds are out of the range of the table's microsecond column`},
		{`{"ts":0,"many":[-9223372036854776]}`, `json record: many[0]: value -9223372036854776: -9223372036854776 milliseconds are out of the range`},
		{`{"ts":0,"byTime":{"9223372036854776":"x"}}`, `json record: byTime["9223372036854776"]: map key: value "9223372036854776": 9223372036854776 milliseconds are out of the range`},
		{`{"ts":"2026-11-23T10:00:00.0001Z"}`, `json record: ts: value "2026-11-23T10:00:00.0001Z" has more precision than TIMESTAMP(MILLIS,true) keeps`},
		{`{"ts":"2026-11-23T10:00:00"}`, `json record: ts: value "2026-11-23T10:00:00" for TIMESTAMP(MILLIS,true) needs a time zone offset`},
		{`{"ts":true}`, `json record: ts: expected RFC 3339 string or number of milliseconds for TIMESTAMP(MILLIS,true), got boolean`},
		{`{"ts":1.5}`, `json record: ts: value 1.5 is not an integer`},
	} {
		err := s.Shred([]byte(c.line))
		var re *RecordError
		if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Shred(%s) = %v, want a RecordError starting %q", c.line, err, c.want)
		}
	}
	if g.NumRows() != 4 {
		t.Fatalf("%d rows, want 4", g.NumRows())
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ts":                   "V[1700000000123000 -1000 9223372036854775000 -9223372036854775000]",
		"local":                "D[1 0 0 0] V[1795428000500000]",
		"us":                   "D[1 0 0 0] V[7]",
		"many.list.element":    "R[0 1 1 0 0 0] D[3 2 3 1 0 0] V[1000 2000]",
		"byTime.key_value.key": "R[0 1 0 0 0] D[2 2 0 0 0] V[3000 4000]",
	}
	got := dumpGroup(g)
	for path, w := range want {
		if got[path] != w {
			t.Errorf("%s = %s, want %s", path, got[path], w)
		}
	}
}

// TestJSONTimestampUnitsRefused: a path that names no INT64
// TIMESTAMP(MICROS) column, or another unit than MILLIS or NANOS, is
// refused.
func TestJSONTimestampUnitsRefused(t *testing.T) {
	s, err := schema.Parse(`message m { required int64 ts (TIMESTAMP(MILLIS,true)); required int64 n; required int64 us (TIMESTAMP(MICROS,true)); }`)
	if err != nil {
		t.Fatal(err)
	}
	for _, units := range []map[string]schema.TimeUnit{
		{"ts": schema.Millis},
		{"n": schema.Millis},
		{"us": schema.Micros},
		{"n": schema.Nanos},
	} {
		if _, err := NewJSONShredder(New(s), JSONTimestampUnits(units)); err == nil {
			t.Errorf("NewJSONShredder with units %v: no error", units)
		}
	}
}

// TestScalarConverterMillisWidened: a ScalarConverter of a widened column
// with the shredder's units gives the value the shredder writes.
func TestScalarConverterMillisWidened(t *testing.T) {
	s, err := schema.Parse(`message m { required group g { optional int64 ts (TIMESTAMP(MILLIS,true)); } }`)
	if err != nil {
		t.Fatal(err)
	}
	wide, _, err := schema.WidenMillis(s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewScalarConverter(wide.Leaf("g.ts"), JSONTimestampUnits(millisUnits(s)))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		k    jsonscan.Kind
		b    string
		want int64
	}{
		{jsonscan.Number, "1700000000123", 1_700_000_000_123_000},
		{jsonscan.String, "1970-01-01T00:00:01.5Z", 1_500_000},
		{jsonscan.Number, "-1", -1000},
	} {
		got, err := c.Plain(v.k, []byte(v.b))
		if err != nil {
			t.Fatalf("Plain(%s): %v", v.b, err)
		}
		if x := int64(uint64(got[0]) | uint64(got[1])<<8 | uint64(got[2])<<16 | uint64(got[3])<<24 |
			uint64(got[4])<<32 | uint64(got[5])<<40 | uint64(got[6])<<48 | uint64(got[7])<<56); x != v.want {
			t.Errorf("Plain(%s) = %d, want %d", v.b, x, v.want)
		}
	}
	if _, err := c.Plain(jsonscan.Number, []byte(fmt.Sprint(math.MaxInt64/1000+1))); err == nil {
		t.Error("Plain of a value out of range: no error")
	}
}

// FuzzJSONMillisWidened shreds any record into fastSchema and into its
// widened copy: the widened fast path agrees with its walk (shredBoth),
// a record either takes both or neither (but for a number of
// milliseconds microseconds cannot hold, which only the widened one
// refuses), and the widened columns hold the millisecond ones times 1000.
func FuzzJSONMillisWidened(f *testing.F) {
	for _, s := range append(append([]string(nil), fastGood...), fastOther...) {
		f.Add(s)
	}
	f.Add(`{"id":1,"ts":"2026-11-23T10:00:00Z","ms":9223372036854776,"r":{}}`)
	f.Add(`{"id":1,"ts":"2026-11-23T10:00:00Z","times":[-9223372036854775,"0001-01-01T00:00:00Z"],"r":{}}`)
	f.Fuzz(func(t *testing.T, line string) {
		gm, m := newShredder(t, fastSchema)
		gw, w := widenedShredder(t, fastSchema)
		gb, b := widenedShredder(t, fastSchema)
		errW := shredBoth(t, gw, w, gb, b, []byte(line))
		errM := m.Shred([]byte(line))
		switch {
		case errM != nil && errW == nil:
			t.Fatalf("Shred(%q): millis %v, widened took it", line, errM)
		case errM == nil && errW != nil:
			if !strings.Contains(errW.Error(), "out of the range of the table's microsecond column") {
				t.Fatalf("Shred(%q): widened %v, millis took it", line, errW)
			}
			return
		case errM != nil:
			return
		}
		for i, cw := range gw.Columns() {
			cm := gm.Columns()[i]
			want := cm.Int64
			if l := cm.Leaf.Logical; l.Kind == schema.Timestamp && l.Unit == schema.Millis {
				want = make([]int64, len(cm.Int64))
				for j, v := range cm.Int64 {
					want[j] = v * 1000
				}
			}
			if !slices.Equal(cw.Int64, want) || !slices.Equal(cw.Def, cm.Def) || !slices.Equal(cw.Rep, cm.Rep) {
				t.Fatalf("Shred(%q): %s widened %v, want %v", line, cw.Leaf.PathString(), cw.Int64, want)
			}
		}
	})
}

// TestJSONNanosNarrowed shreds every record of the fast path's tests into
// fastSchema and into fastSchema with its nanosecond column narrowed
// (schema.NarrowNanos) and JSONTimestampUnits NANOS: each record is taken
// or refused alike, the narrowed column holds the nanoseconds floored to
// the microsecond, the other columns the same, and the values cut are
// counted once per record taken, none for a record refused.
func TestJSONNanosNarrowed(t *testing.T) {
	s, err := schema.Parse(fastSchema)
	if err != nil {
		t.Fatal(err)
	}
	narrow, changed, err := schema.NarrowNanos(s)
	if err != nil || !changed {
		t.Fatalf("NarrowNanos: changed %v, %v", changed, err)
	}
	units := map[string]schema.TimeUnit{"local": schema.Nanos}
	var cut atomic.Int64
	gn := New(narrow)
	n, err := NewJSONShredder(gn, JSONTimestampUnits(units), JSONCountTruncated(&cut))
	if err != nil {
		t.Fatal(err)
	}
	gs, plain := newShredder(t, fastSchema)
	records := append(append([]string{
		`{"id":1,"ts":"2026-11-23T10:00:00Z","local":-1,"r":{}}`,
		`{"id":2,"ts":"2026-11-23T10:00:00Z","local":1999,"r":{}}`,
		`{"id":3,"ts":"2026-11-23T10:00:00Z","local":"1969-12-31T23:59:59.999999999","r":{}}`,
		`{"id":4,"ts":"2026-11-23T10:00:00Z","local":-9223372036854775808,"r":{}}`,
		`{"id":5,"ts":"2026-11-23T10:00:00Z","local":12345,"r":{"a":"not a number"}}`, // cut, then refused
	}, fastGood...), fastOther...)
	var wantCut int64
	for _, line := range records {
		errN, errS := n.Shred([]byte(line)), plain.Shred([]byte(line))
		if (errN == nil) != (errS == nil) {
			t.Errorf("Shred(%s): narrowed %v, nanos %v", line, errN, errS)
		}
		if errS == nil {
			c := gs.Column(s.Leaf("local").Column)
			if c.NumValues() > 0 && len(c.Def) > 0 && c.Def[len(c.Def)-1] == 1 && c.Int64[len(c.Int64)-1]%1000 != 0 {
				wantCut++
			}
		}
	}
	if gn.NumRows() != gs.NumRows() || gn.NumRows() < len(fastGood)+4 {
		t.Fatalf("rows: narrowed %d, nanos %d", gn.NumRows(), gs.NumRows())
	}
	if err := gn.Check(); err != nil {
		t.Fatal(err)
	}
	for i, cn := range gn.Columns() {
		cs := gs.Columns()[i]
		want := cs.Int64
		if cs.Leaf.PathString() == "local" {
			want = make([]int64, len(cs.Int64))
			for j, v := range cs.Int64 {
				want[j] = v / 1000
				if v%1000 < 0 {
					want[j]--
				}
			}
		}
		if !slices.Equal(cn.Int64, want) || !slices.Equal(cn.Def, cs.Def) {
			t.Errorf("%s: narrowed %v def %v, want %v def %v", cn.Leaf.PathString(), cn.Int64, cn.Def, want, cs.Def)
		}
	}
	if got := gn.Column(narrow.Leaf("local").Column).Int64[:4]; !slices.Equal(got, []int64{-1, 1, -1, math.MinInt64/1000 - 1}) {
		t.Errorf("local = %v, want [-1 1 -1 %d]", got, math.MinInt64/1000-1)
	}
	if got := cut.Load(); got != wantCut || wantCut < 4 {
		t.Errorf("%d values counted as cut, want %d (at least 4)", got, wantCut)
	}
}

// TestJSONTimeMillisWidened shreds records into a schema with TIME(MILLIS)
// columns and into its copy widened by schema.WidenTimeMillis, with
// JSONTimestampUnits MILLIS: each record is taken or refused alike (out
// of the day's range, more than three fraction digits, an offset where
// the column is local), and the widened columns hold the values times
// 1000 in INT64.
func TestJSONTimeMillisWidened(t *testing.T) {
	const text = `message m {
  optional int32 at (TIME(MILLIS,true));
  optional group many (LIST) { repeated group list { required int32 element (TIME(MILLIS,false)); } }
  optional int32 n;
}`
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	wide, changed, err := schema.WidenTimeMillis(s)
	if err != nil || !changed {
		t.Fatalf("WidenTimeMillis: changed %v, %v", changed, err)
	}
	gw := New(wide)
	w, err := NewJSONShredder(gw, JSONTimestampUnits(map[string]schema.TimeUnit{"at": schema.Millis, "many.list.element": schema.Millis}))
	if err != nil {
		t.Fatal(err)
	}
	gm, m := newShredder(t, text)
	for _, line := range []string{
		`{"at":0,"many":[86399999,"23:59:59.999"],"n":1}`,
		`{"at":"12:34:56.789+02:00","many":["00:00:00.5"]}`,
		`{"at":"12:34:56Z","many":[]}`,
		`{"at":null,"many":null}`,
		`{"at":86400000}`,
		`{"at":-1}`,
		`{"at":"12:34:56.7891Z"}`,
		`{"many":["12:00:00+01:00"]}`,
		`{"at":true}`,
	} {
		errW, errM := w.Shred([]byte(line)), m.Shred([]byte(line))
		if (errW == nil) != (errM == nil) {
			t.Errorf("Shred(%s): widened %v, millis %v", line, errW, errM)
		}
	}
	if gw.NumRows() != 4 || gm.NumRows() != 4 {
		t.Fatalf("rows: widened %d, millis %d, want 4", gw.NumRows(), gm.NumRows())
	}
	if err := gw.Check(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"at", "many.list.element"} {
		cm, cw := gm.Column(s.Leaf(path).Column), gw.Column(wide.Leaf(path).Column)
		var want []int64
		for _, v := range cm.Int32 {
			want = append(want, int64(v)*1000)
		}
		if !slices.Equal(cw.Int64, want) || !slices.Equal(cw.Def, cm.Def) || !slices.Equal(cw.Rep, cm.Rep) {
			t.Errorf("%s: widened %v def %v, want %v def %v", path, cw.Int64, cw.Def, want, cm.Def)
		}
	}
	if got := gw.Column(wide.Leaf("at").Column).Int64; !slices.Equal(got, []int64{0, 38_096_789_000, 45_296_000_000}) {
		t.Errorf("at = %v", got)
	}
}
