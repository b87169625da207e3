package rowgroup

import (
	"encoding/json"
	"fmt"
	"testing"
)

// fuzzSchema has a leaf of every conversion and every nesting shape.
const fuzzSchema = `message fuzz {
  optional boolean b;
  optional int32 i8 (INTEGER(8,true));
  optional int32 u32 (INTEGER(32,false));
  optional int64 i64;
  optional int64 u64 (INTEGER(64,false));
  optional float f;
  optional double d;
  optional fixed_len_byte_array(2) h (FLOAT16);
  optional binary s (STRING);
  optional binary j (JSON);
  optional binary raw;
  optional fixed_len_byte_array(4) fx;
  optional fixed_len_byte_array(16) id (UUID);
  optional int32 day (DATE);
  optional int32 tm (TIME(MILLIS,true));
  optional int64 tn (TIME(NANOS,false));
  optional int64 ts (TIMESTAMP(MICROS,true));
  optional int64 tl (TIMESTAMP(NANOS,false));
  optional int96 old;
  optional int32 d4 (DECIMAL(9,2));
  optional fixed_len_byte_array(9) d20 (DECIMAL(20,3));
  optional binary dbig (DECIMAL(40,10));
  optional fixed_len_byte_array(12) iv (INTERVAL);
  optional int32 nothing (UNKNOWN);
  optional group tags (LIST) { repeated group list { optional group element {
    required int32 score; optional binary note (STRING);
    optional group deep (LIST) { repeated group list { required int64 element; } } } } }
  optional group m (MAP) { repeated group key_value { required int32 key; optional group value (LIST) { repeated group list { optional double element; } } } }
  optional group sm (MAP) { repeated group key_value { required binary key (STRING); } }
  repeated group r { required binary k (STRING); repeated int32 v; }
  optional group g { required group h { optional int32 x; } }
  optional group var (VARIANT(1)) { required binary metadata; required binary value; }
}`

// fuzzGood are records of fuzzSchema that must be accepted, fuzzBad ones
// that must not; both seed the fuzzer.
var (
	fuzzGood = []string{
		`{}`,
		`{"b":true,"i8":-128,"u32":4294967295,"i64":-1,"u64":18446744073709551615,"f":1.5,"d":"NaN","h":0.1}`,
		`{"s":"x","j":{"a":[1,{"b":null}]},"raw":"aGVsbG8=","fx":"AQIDBA==","id":"123e4567-e89b-12d3-a456-426614174000"}`,
		`{"day":"2024-02-29","tm":"12:34:56.789","tn":"23:59:59.999999999","ts":"2024-01-02T03:04:05.123456+02:00","tl":"1970-01-01T00:00:00"}`,
		`{"old":"2000-01-01T12:00:00.5Z","d4":"-1234567.89","d20":12345678901234567.891,"dbig":"-1.5e20","iv":{"months":1,"days":2,"millis":3}}`,
		`{"nothing":null,"tags":[{"score":1,"deep":[1,2]},null,{"score":2,"note":"n","deep":[]}]}`,
		`{"m":{"1":[1.5,null],"2":[],"3":null},"sm":{"a":null,"b":true},"r":[{"k":"a","v":[1,2]},{"k":"b"}]}`,
		`{"g":{"h":{"x":1}},"var":{"z":[true,false,null,"s",1e300]}}`,
	}
	fuzzBad = []string{
		`{"var":12345678901234567890123456789012345678901}`, // 41 digits: no Variant type holds it exactly
		`{"i8":128}`, `{"tags":"x"}`, `{"m":{"x":[]}}`, `{"r":[null]}`, `{"b":true}x`, `{"s":"\ud800"}`, `{"var":[1e400]}`,
	}
)

func TestJSONShredFuzzSeeds(t *testing.T) {
	g, sh := newShredder(t, fuzzSchema)
	for _, line := range fuzzGood {
		if err := sh.Shred([]byte(line)); err != nil {
			t.Errorf("Shred(%s): %v", line, err)
		}
	}
	for _, line := range fuzzBad {
		if err := sh.Shred([]byte(line)); err == nil {
			t.Errorf("Shred(%s) succeeded, want an error", line)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	if g.NumRows() != len(fuzzGood) {
		t.Errorf("NumRows = %d, want %d", g.NumRows(), len(fuzzGood))
	}
}

func FuzzJSONShredder(f *testing.F) {
	seeds := append(append([]string(nil), fuzzGood...), fuzzBad...)
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	g, sh := newShredder(f, fuzzSchema)
	f.Fuzz(func(t *testing.T, line []byte) {
		if g.NumRows() > 1000 {
			g.Reset()
		}
		rows := g.NumRows()
		before := columnLengths(g)
		err := sh.Shred(line)
		if cerr := g.Check(); cerr != nil {
			t.Fatalf("Check after Shred(%q) = %v: %v", line, err, cerr)
		}
		if err != nil {
			if _, ok := err.(*RecordError); !ok {
				t.Fatalf("error %v is a %T, want *RecordError", err, err)
			}
			if g.NumRows() != rows {
				t.Fatalf("failed record changed NumRows %d → %d", rows, g.NumRows())
			}
			// Columns only grow at the end, so equal lengths mean equal
			// contents.
			if after := columnLengths(g); after != before {
				t.Fatalf("failed record changed the columns:\n got %s\nwant %s", after, before)
			}
			return
		}
		if g.NumRows() != rows+1 {
			t.Fatalf("NumRows %d → %d after a record", rows, g.NumRows())
		}
		if !json.Valid(line) {
			t.Fatalf("accepted invalid JSON %q", line)
		}
	})
}

// columnLengths renders the length of every buffer of every column.
func columnLengths(g *RowGroup) string {
	var b []byte
	for _, c := range g.Columns() {
		b = fmt.Appendf(b, "%s:%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d ", c.Leaf.Name, c.NumLevels(), c.NumValues(),
			len(c.Rep), len(c.Def), len(c.Bool), len(c.Int32), len(c.Int64), len(c.Int96), len(c.Float), len(c.Double), len(c.Bytes), len(c.Offsets))
	}
	return string(b)
}
