package rowgroup

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/schema"
)

// fastSchema has every shape the fast path reads, and around them shapes
// it does not, so that records mix both.
const fastSchema = `message fast {
  required int64 id;
  optional int32 small (INTEGER(8,true));
  optional int64 big (INTEGER(64,false));
  required int64 ts (TIMESTAMP(MICROS,true));
  optional int64 local (TIMESTAMP(NANOS,false));
  optional int64 ms (TIMESTAMP(MILLIS,true));
  optional binary name (STRING);
  optional double x;
  optional boolean ok;
  optional group tags (LIST) { repeated group list { required binary element (STRING); } }
  optional group nums (LIST) { repeated group list { optional double element; } }
  optional group times (LIST) { repeated group list { required int64 element (TIMESTAMP(MILLIS,true)); } }
  optional group g {
    required binary s (STRING);
    optional group h { required int32 level; required boolean flag; optional double score; }
  }
  required group r { optional int64 a; }
  optional group a_member_name_of_more_than_sixteen_bytes { optional int64 v; }
}`

// fastGood are records of fastSchema that the fast path must take, and
// fastOther ones it may leave to the walk, valid or not; both seed
// FuzzJSONFastPath.
var (
	fastGood = []string{
		`{"id":1,"small":-128,"big":18446744073709551615,"ts":"2026-11-23T10:00:00.123456Z","local":"2026-11-23T10:00:00.123456789","ms":"2026-11-23T10:00:00+02:00","name":"ä€😀","x":0.1,"ok":true,"tags":["a","b"],"nums":[1,2.5,-0],"times":["1970-01-01T00:00:00Z"],"g":{"s":"","h":{"level":3,"flag":false,"score":0.6046602879796196}},"r":{"a":7},"a_member_name_of_more_than_sixteen_bytes":{"v":1}}`,
		`{"id":-9223372036854775808,"small":null,"big":null,"ts":"2026-11-23t10:00:00z","local":null,"ms":null,"name":null,"x":null,"ok":null,"tags":[],"nums":null,"times":[],"g":null,"r":{"a":null},"a_member_name_of_more_than_sixteen_bytes":null}` + " \n",
		`{"id":0,"small":1,"big":0,"ts":"2026-11-23 10:00:00.5-01:30","local":"2026-11-23T10:00:00Z","ms":"2026-11-23T10:00:00.999Z","name":"x","x":1.7976931348623157e308,"ok":false,"tags":["c"],"nums":[5e-324],"times":["2026-11-23T10:00:00.1Z","2026-11-23T10:00:00.2Z"],"g":{"s":"s","h":null},"r":{"a":1},"a_member_name_of_more_than_sixteen_bytes":{"v":null}}`,
		`{"id":12345678901234567890e-1,"small":1.0,"big":1e2,"ts":"2026-11-23T10:00:00.123456000Z","local":"2026-11-23T10:00:00+00:00","ms":"2026-11-23T10:00:00.000000000Z","name":"","x":-0.0,"ok":true,"tags":null,"nums":[],"times":null,"g":{"s":"q","h":{"level":-1,"flag":true,"score":12345678901234567890}},"r":{"a":-0},"a_member_name_of_more_than_sixteen_bytes":{"v":0}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","r":{}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","ok":true,"g":{"s":"x","h":{"level":1,"flag":true}},"r":{"a":1}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","tags":["a"],"r":{"a":null}}`,
	}
	fastOther = []string{
		``, ` `, `[]`, `{}`, `{"id":1}`, `{"id":1,"id":2}`,
		`{"id":01,"ts":"2026-11-23T10:00:00Z","r":{}}`,
		`{"ts":"2026-11-23T10:00:00Z","r":{}}`, `{"id":1,"ts":"2026-11-23T10:00:00Z"}`, `{"id":1,"ts":"2026-11-23T10:00:00Z","r":{},"id":2}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","ok":true,"name":"x","r":{}}`, `{"id":1,"ts":"2026-11-23T10:00:00Z","g":{"h":{"level":1,"flag":true}},"r":{}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","g":{"s":"x","h":{"level":1}},"r":{}}`, `{"id":1,"ts":"2026-11-23T10:00:00Z","r":{},"r":{}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","x":"1","r":{}}`, `{"id":1,"ts":"2026-11-23T10:00:00Z","r":{"a":1,"a":2}}`,
		`{"id":1,"ts":"2026-11-23T10:00:00Z","r":{}}x`,
		`{"id":1 ,"ts":"2026-11-23T10:00:00Z","r":{}}`,
		`{"id":1,"small":128,"big":null,"ts":"2026-11-23T10:00:00.123456Z","local":null,"ms":null,"name":null,"x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":{"a":null},"a_member_name_of_more_than_sixteen_bytes":null}`,
		`{"id":1,"small":1,"big":-1,"ts":"2026-11-23T10:00:00.1234567Z","local":"2026-11-23T10:00:00+01:00","ms":"2026-11-23T10:00:00.0001Z","name":"a\"b","x":1e999,"ok":nul,"tags":["a",null],"nums":[null],"times":["2026-02-30T00:00:00Z"],"g":{"s":"\u00e4","h":{"level":2147483648,"flag":1,"score":"NaN"}},"r":{"a":1.5},"a_member_name_of_more_than_sixteen_bytes":{"v":-}}`,
		`{"id":1,"small":null,"big":null,"ts":"2026-11-23T10:00:00Z","local":null,"ms":null,"name":"` + "\xff" + `","x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":{"a":null},"a_member_name_of_more_than_sixteen_bytes":null}`,
		`{"id":1,"small":null,"big":null,"ts":"2026-11-23T10:00:00Z","local":null,"ms":null,"name":"a` + "\n" + `","x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":null,"a_member_name_of_more_than_sixteen_bytes":null}`,
		`{"id":1,"small":null,"big":null,"ts":"2026-11-23T10:00:00Z","local":null,"ms":null,"name":null,"x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":{"a":1},"a_member_name_of_more_than_sixteen_bytes":null,"extra":1}`,
		`{"id":1,"small":null,"big":null,"ts":"2026-11-23T10:00:00Z","local":null,"ms":null,"name":null,"x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":{"a":1},"a_member_name_of_more_than_sixteen_bytes":null`,
		`{"id":1,"small":null,"big":null,"ts":"2026-11-23T10:00:00Z","local":null,"ms":null,"name":null,"x":null,"ok":null,"tags":null,"nums":null,"times":null,"g":null,"r":{"a":1},"a_member_name_of_more_than_sixteen_bytes":null}}`,
	}
)

// shredBoth shreds line with the fast path tried first (a) and with the
// walk alone (b), and fails unless both give the same error and the same
// columns.
func shredBoth(t *testing.T, ga *RowGroup, a *JSONShredder, gb *RowGroup, b *JSONShredder, line []byte) error {
	t.Helper()
	a.fastSkip = 0 // try every record
	b.fast = false
	errA, errB := a.Shred(line), b.Shred(line)
	if fmt.Sprint(errA) != fmt.Sprint(errB) {
		t.Fatalf("Shred(%q): fast path %v, walk %v", line, errA, errB)
	}
	if ca, cb := columnContents(ga), columnContents(gb); ca != cb {
		t.Fatalf("Shred(%q): fast path columns\n%s\nwalk columns\n%s", line, ca, cb)
	}
	if err := ga.Check(); err != nil {
		t.Fatalf("Check after Shred(%q): %v", line, err)
	}
	return errA
}

// columnContents renders every buffer of every column.
func columnContents(g *RowGroup) string {
	var b strings.Builder
	for _, c := range g.Columns() {
		doubles := make([]uint64, len(c.Double))
		for i, v := range c.Double {
			doubles[i] = math.Float64bits(v)
		}
		fmt.Fprintf(&b, "%s: %d %d rep%v def%v %v %v %v %v %v %x %q %v\n", c.Leaf.Name, c.NumLevels(), c.NumValues(),
			c.Rep, c.Def, c.Bool, c.Int32, c.Int64, c.Int96, c.Float, doubles, c.Bytes, c.Offsets)
	}
	return b.String()
}

func TestJSONFastPathMatchesWalk(t *testing.T) {
	ga, a := newShredder(t, fastSchema)
	gb, b := newShredder(t, fastSchema)
	if !a.fast {
		t.Fatal("fastSchema does not take the fast path")
	}
	for _, line := range fastGood {
		if !a.fastRecord([]byte(line)) {
			t.Errorf("fast path does not take %s", line)
		}
		ga.Reset()
		a.fastBackoff, a.fastSkip = 0, 0
	}
	for _, line := range append(append([]string(nil), fastGood...), fastOther...) {
		shredBoth(t, ga, a, gb, b, []byte(line))
	}
	if ga.NumRows() < len(fastGood) {
		t.Errorf("NumRows = %d, want at least %d", ga.NumRows(), len(fastGood))
	}
}

// TestJSONFastPathEvents checks the fast path on the sink's reference
// records, which it must take, whatever their values.
func TestJSONFastPathEvents(t *testing.T) {
	ga, a := newShredder(t, events.Schema)
	gb, b := newShredder(t, events.Schema)
	gen := events.New(3, time.Date(2026, 11, 23, 23, 59, 0, 0, time.UTC))
	for i := range 5000 {
		if i%50 == 0 { // shredBoth compares whole columns
			ga.Reset()
			gb.Reset()
		}
		line := gen.Append(nil)
		shredBoth(t, ga, a, gb, b, line)
		if a.fastBackoff != 0 {
			t.Fatalf("record %d missed the fast path: %s", i, line)
		}
	}
}

// TestJSONFastPathBackoff checks that a stream the fast path never takes
// soon stops trying it, and that a record it takes resets the backoff.
func TestJSONFastPathBackoff(t *testing.T) {
	_, a := newShredder(t, events.Schema)
	miss := []byte(`{"id":1, "ts":"2026-11-23T10:00:00Z","user":"u","country":"DE","amount":1,"tags":[],"payload":null}`)
	tries := 0
	for range 1000 {
		if a.fastSkip == 0 {
			tries++
		}
		if err := a.Shred(miss); err != nil {
			t.Fatal(err)
		}
	}
	if tries > 1000/maxFastBackoff+10 {
		t.Errorf("%d fast path attempts in 1000 records that miss it", tries)
	}
	for a.fastSkip > 0 {
		if err := a.Shred(miss); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Shred(events.New(1, time.Unix(0, 0)).Append(nil)); err != nil {
		t.Fatal(err)
	}
	if a.fastBackoff != 0 || a.fastSkip != 0 {
		t.Errorf("after a hit: backoff %d, skip %d, want 0, 0", a.fastBackoff, a.fastSkip)
	}
}

func FuzzJSONFastPath(f *testing.F) {
	for _, s := range append(append([]string(nil), fastGood...), fastOther...) {
		f.Add([]byte(s))
	}
	ga, a := newShredder(f, fastSchema)
	gb, b := newShredder(f, fastSchema)
	f.Fuzz(func(t *testing.T, line []byte) {
		if ga.NumRows() > 20 { // shredBoth compares whole columns
			ga.Reset()
			gb.Reset()
		}
		shredBoth(t, ga, a, gb, b, line)
	})
}

var timestampTexts = []string{
	"2026-11-23T10:00:00.123456Z", "2026-11-23T10:00:00Z", "1970-01-01T00:00:00.000000001Z",
	"2026-11-23T10:00:00.1234567891Z", "2026-11-23T10:00:00.Z", "2026-11-23T24:00:00Z", "2026-02-29T10:00:00Z",
	"2024-02-29T23:59:59.999999999Z", "2026-11-23t10:00:00Z", "2026-11-23T10:00:00z", "2026-11-23T10:00:00+00:00",
	"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "1677-09-21T00:12:43.145224191Z", "2262-04-11T23:47:16.854775808Z",
	"2026-11-23T10:00:60Z", "2026-13-23T10:00:00Z", "2026-11-23T10:0a:00Z", "2026-11-23T10:00:00.123456",
}

// checkTimestampText checks parseTimestampText against parseTimestamp on
// text followed by a closing quote and more record.
func checkTimestampText(t *testing.T, text string) {
	for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
		var dc dateCache
		b := []byte(text + `","x":1}`)
		v, n, ok := parseTimestampText(b, u, &dc)
		if v2, n2, ok2 := parseTimestampText([]byte(text), u, &dc); ok2 != ok || ok && (v2 != v || n2 != n) {
			t.Errorf("parseTimestampText(%q, %v) alone = %d, %d, %v; followed by more = %d, %d, %v", text, u, v2, n2, ok2, v, n, ok)
		}
		if !ok || n != len(text) {
			continue
		}
		for _, utc := range []bool{true, false} {
			want, err := parseTimestamp([]byte(text), u, utc, nil)
			if err != nil || v != want || n != len(text) {
				t.Errorf("parseTimestampText(%q, %v) = %d, %d; parseTimestamp (utc %v) = %d, %v", text, u, v, n, utc, want, err)
			}
		}
	}
}

func TestParseTimestampText(t *testing.T) {
	for _, text := range timestampTexts {
		checkTimestampText(t, text)
	}
	var dc dateCache
	if _, n, ok := parseTimestampText([]byte(`2026-11-23T10:00:00.123456Z"`), schema.Micros, &dc); !ok || n != 27 {
		t.Error("the common spelling is not taken")
	}
}

func FuzzParseTimestampText(f *testing.F) {
	for _, text := range timestampTexts {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, `"`) {
			return
		}
		checkTimestampText(t, text)
	})
}

// BenchmarkJSONShredEventsWalk is BenchmarkJSONShredEvents without the
// fast path: what records of other shapes cost.
func BenchmarkJSONShredEventsWalk(b *testing.B) {
	g, sh := newShredder(b, events.Schema)
	sh.fast = false
	gen := events.New(1, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	data := make([][]byte, 4096)
	for i := range data {
		data[i] = gen.Append(nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%10000 == 0 {
			g.Reset()
		}
		if err := sh.Shred(data[i%len(data)]); err != nil {
			b.Fatal(err)
		}
	}
}
