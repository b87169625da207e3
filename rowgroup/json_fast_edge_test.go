package rowgroup

import (
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// fastMoreSchema has the leaves the fast path reads besides fastSchema's:
// UUIDs and DECIMALs on integers, as fields and list elements, beside the
// strings, integers and doubles whose readers they share code with.
const fastMoreSchema = `message more {
  required fixed_len_byte_array(16) u (UUID);
  optional fixed_len_byte_array(16) ou (UUID);
  optional int64 d (DECIMAL(18,4));
  optional int32 d32 (DECIMAL(9,2));
  optional group ds (LIST) { repeated group list { optional int64 element (DECIMAL(10,2)); } }
  optional group us (LIST) { repeated group list { required fixed_len_byte_array(16) element (UUID); } }
  optional binary s (STRING);
  optional int64 i;
  optional int32 i32;
  optional double x;
  optional boolean b;
  optional group ss (LIST) { repeated group list { required binary element (STRING); } }
}`

// fastMoreGood are records of fastMoreSchema the fast path must take;
// fastMoreOther ones it may leave to the walk, valid or not.
var (
	fastMoreGood = []string{
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ou":"ABCDEF01-2345-6789-abcd-ef0123456789","d":"19.9900","d32":-1.5,"ds":[1,"2.25",-0.01],"us":["00000000-0000-0000-0000-000000000000"],"s":"a","i":1234567,"i32":-2147483648,"x":0.1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ou":null,"d":null,"d32":null,"ds":null,"us":null,"s":null,"i":null,"i32":null,"x":null}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":99999999999999.9999,"d32":"9999999.99","ds":[],"us":[],"s":"12345678","i":12345678,"i32":1234567,"x":1234567.1234567}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":-99999999999999.9999,"d32":1.2E1,"s":"1234567890123456789","i":-9223372036854775808,"x":12345678.12345678}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":"1.50000","d32":"0.10","i":0,"i32":0,"x":0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":1,"d32":1,"i":9223372036854775807,"x":-0.0000001}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":123456789012345678,"i32":2147483647}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1234567890123456789,"i32":0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":999999999999999999,"i32":-0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","us":[],"i":0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"1234567","i":5}` + " ",
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":123456789012345}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1234567890123456}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":12345678901234567890}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":0.1234567890123456789}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1.1234567890123456789}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":9007199254740993.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":0.30000000000000004}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1.5E+2}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":-1.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":0.0}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":true}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":false}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1,"b":true}` + "  ",
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"","b":null}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcde"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdef"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdefg"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdef","i":1,"b":false}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdefghijklmnopqrstuvwxyz0123456789","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"ä0123456789abcdef","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdeä","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["","a","0123456789abcde","0123456789abcdef","0123456789abcdefg","ä€😀","0123456789abcdefghijklmnopqrstuvwxyz"]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["0123456789abcdef"]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["x"]}`,
	}
	fastMoreOther = []string{
		`{"u":"123e4567-e89b-12d3-a456-42661417400"}`,
		`{"u":"123e4567-e89b-12d3-a456-4266141740000"}`,
		`{"u":"123e4567-e89b-12d3-a456_426614174000"}`,
		`{"u":"123e4567-e89b-12d3-a456-42661417400g"}`,
		`{"u":"123e4567-e89b-12d3-a456-42661417400\u0030"}`,
		`{"u":null}`, `{"u":1}`, `{}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","u":"123e4567-e89b-12d3-a456-426614174000"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":"19.99001"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":922337203685477.5808}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":-922337203685477.5808,"d32":1e2}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ds":[1,"2.25",null,-0.01]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":"1\u002e5"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":"1.5` + "\xff" + `"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":" 1.5"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":"","d32":"-"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":1.5e,"d32":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":01.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":true}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d32":10000000}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d32":"NaN"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":1,"ds":[1.001]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","us":[null]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","us":["123e4567-e89b-12d3-a456-426614174000",1]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":12345678901234567890}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":-12345678,"i32":2147483648}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1234567.0,"i32":1e3}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":-,"i32":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":00}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":12345678901234567890.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","d":1,"x":1}` + "\n",
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"ä","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"12345678\\","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"1234567` + "\x01" + `","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"1234567`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":7`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":12345678`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":12345678 }`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":9223372036854775808}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1,"i32":2147483648}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1]`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1x}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1E5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":1.}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","i":+1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":00.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1.}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":.5}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1.5x}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1.5`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":15`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":1e400}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","x":"1.5"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":tru}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":truex}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":fals}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":true`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":"true"}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","b":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdef\"","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcd` + "\x00" + `","i":1}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","s":"0123456789abcdef`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["0123456789abcdef\"",""]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["a\u0062",null]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["` + "\xff" + `"]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["0123456789abcdef"`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["a",]}`,
		`{"u":"123e4567-e89b-12d3-a456-426614174000","ss":["a" ,"b"]}`,
	}
)

func TestJSONFastPathMore(t *testing.T) {
	ga, a := newShredder(t, fastMoreSchema)
	gb, b := newShredder(t, fastMoreSchema)
	if !a.fast {
		t.Fatal("fastMoreSchema does not take the fast path")
	}
	for _, line := range fastMoreGood {
		if !a.fastRecord([]byte(line)) {
			t.Errorf("fast path does not take %s", line)
		}
		ga.Reset()
	}
	for _, line := range append(append([]string(nil), fastMoreGood...), fastMoreOther...) {
		shredBoth(t, ga, a, gb, b, []byte(line))
	}
}

// TestJSONFastPathClickstream checks that the clickstream record, with
// its UUID and DECIMAL, takes the fast path.
func TestJSONFastPathClickstream(t *testing.T) {
	ga, a := newShredder(t, clickSchema)
	gb, b := newShredder(t, clickSchema)
	if !a.fast {
		t.Fatal("clickSchema does not take the fast path")
	}
	if !a.fastRecord([]byte(clickLine)) {
		t.Fatalf("fast path does not take %s", clickLine)
	}
	ga.Reset()
	shredBoth(t, ga, a, gb, b, []byte(clickLine))
}

func FuzzJSONFastPathMore(f *testing.F) {
	for _, s := range append(append([]string(nil), fastMoreGood...), fastMoreOther...) {
		f.Add([]byte(s))
	}
	ga, a := newShredder(f, fastMoreSchema)
	gb, b := newShredder(f, fastMoreSchema)
	f.Fuzz(func(t *testing.T, line []byte) {
		if ga.NumRows() > 20 { // shredBoth compares whole columns
			ga.Reset()
			gb.Reset()
		}
		shredBoth(t, ga, a, gb, b, line)
	})
}

// checkTimestampCached parses texts in order through one dateCache, as a
// column does, and fails unless each gives what it gives with a cache of
// its own: whatever the timestamp before left in the cache.
func checkTimestampCached(t *testing.T, texts ...string) {
	t.Helper()
	for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
		var shared dateCache
		for _, text := range texts {
			b := []byte(text + `"}`)
			v, n, ok := parseTimestampText(b, u, &shared)
			var fresh dateCache
			want, wantN, wantOK := parseTimestampText(b, u, &fresh)
			if ok != wantOK || ok && (v != want || n != wantN) {
				t.Errorf("%q (%v) after %q: %d, %d, %v; with a fresh cache %d, %d, %v", text, u, texts, v, n, ok, want, wantN, wantOK)
			}
			// And the walk's parser, with the shared cache too.
			got, err := parseTimestamp([]byte(text), u, true, &shared)
			if want, werr := parseTimestamp([]byte(text), u, true, nil); got != want || (err == nil) != (werr == nil) {
				t.Errorf("parseTimestamp(%q, %v) after %q: %d, %v; without a cache %d, %v", text, u, texts, got, err, want, werr)
			}
		}
	}
}

func TestParseTimestampTextMinuteCache(t *testing.T) {
	for _, tt := range []struct {
		name  string
		texts []string
	}{
		{"same minute", []string{"2026-11-23T10:00:00.123456Z", "2026-11-23T10:00:59.999999999Z", "2026-11-23T10:00:07Z"}},
		{"next minute, hour, day", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:01:00Z", "2026-11-23T11:01:00Z", "2026-11-24T11:01:00Z"}},
		{"same minute, bad seconds", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:00:60Z", "2026-11-23T10:00:5aZ", "2026-11-23T10:00-00Z"}},
		{"same minute, other endings", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:00:00+01:00", "2026-11-23T10:00:00.Z", "2026-11-23T10:00:00.1234567891Z", "2026-11-23T10:00:00"}},
		{"every fraction length", []string{"2026-11-23T10:00:00.1Z", "2026-11-23T10:00:00.12Z", "2026-11-23T10:00:00.123Z", "2026-11-23T10:00:00.1234Z",
			"2026-11-23T10:00:00.12345Z", "2026-11-23T10:00:00.123456Z", "2026-11-23T10:00:00.1234567Z", "2026-11-23T10:00:00.12345678Z", "2026-11-23T10:00:00.123456789Z"}},
		{"lower-case separator after a cached minute", []string{"2026-11-23T10:00:00Z", "2026-11-23t10:00:00Z", "2026-11-23 10:00:00Z"}},
		{"invalid minute never cached", []string{"2026-02-30T10:00:00Z", "2026-02-30T10:00:00Z", "2026-11-23T10:60:00Z", "2026-11-23T10:60:00Z", "2026-11-23T24:00:00Z"}},
		{"same date, other minute", []string{"2026-11-23T10:00:00Z", "2026-11-23T10:0a:00Z", "2026-11-23T10:00:01Z"}},
		{"out of range after a cached minute", []string{"2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775808Z", "2262-04-11T23:47:17Z"}},
		{"same second", []string{"2023-11-14T22:13:20.001538Z", "2023-11-14T22:13:20.003419Z", "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.5Z", "2023-11-14T22:13:20.0000001Z", "2023-11-14T22:13:21.001Z"}},
		{"same second, other minute", []string{"2023-11-14T22:13:20.1Z", "2023-11-14T22:14:20.1Z", "2023-11-14T22:13:20.1Z"}},
		{"same second, bad endings", []string{"2023-11-14T22:13:20.1Z", "2023-11-14T22:13:20.Z", "2023-11-14T22:13:20.1234567890Z", "2023-11-14T22:13:20.1+01:00", "2023-11-14T22:13:20.1"}},
		{"same second at the ends of the range", []string{"1677-09-21T00:12:43.145224192Z", "1677-09-21T00:12:43.145224191Z", "1677-09-21T00:12:43.9Z",
			"2262-04-11T23:47:15.854775807Z", "2262-04-11T23:47:15.999999999Z", "2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775808Z", "2262-04-11T23:47:16.9Z"}},
		{"before the epoch", []string{"1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:00Z", "0001-01-01T00:00:00Z", "0001-01-01T00:00:01.5Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) { checkTimestampCached(t, tt.texts...) })
	}
}

// TestParseTimestampTextUnits parses one text in every unit through one
// cache: what it remembers for one unit is not the value in another.
func TestParseTimestampTextUnits(t *testing.T) {
	var shared dateCache
	for _, text := range []string{"2026-11-23T10:00:00.123Z", "2026-11-23T10:00:00.124Z", "1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59.25Z"} {
		for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos, schema.Millis} {
			b := []byte(text + `"`)
			v, n, ok := parseTimestampText(b, u, &shared)
			var fresh dateCache
			want, wantN, wantOK := parseTimestampText(b, u, &fresh)
			if v != want || n != wantN || ok != wantOK {
				t.Errorf("%q in %v through a shared cache: %d, %d, %v; with a fresh one %d, %d, %v", text, u, v, n, ok, want, wantN, wantOK)
			}
		}
	}
}

func FuzzParseTimestampTextCached(f *testing.F) {
	f.Add("2026-11-23T10:00:00Z", "2026-11-23T10:00:01.5Z")
	f.Add("2026-11-23T10:00:00Z", "2026-11-23T10:00:60Z")
	f.Add("2026-11-23T10:00:00Z", "2026-11-23t10:00:00Z")
	f.Add("2262-04-11T23:47:16Z", "2262-04-11T23:47:16.854775808Z")
	f.Add("2023-11-14T22:13:20.001538Z", "2023-11-14T22:13:20.003419Z")
	f.Add("1677-09-21T00:12:43.145224192Z", "1677-09-21T00:12:43.145224191Z")
	f.Fuzz(func(t *testing.T, a, b string) {
		checkTimestampCached(t, a, b, a)
	})
}

// digitsByByte is what parseDigits must return: the digits from i on, a
// byte at a time, wrapping.
func digitsByByte(d []byte, i int, m uint64) (uint64, int) {
	for ; i < len(d) && d[i] >= '0' && d[i] <= '9'; i++ {
		m = m*10 + uint64(d[i]-'0')
	}
	return m, i
}

func TestParseDigits(t *testing.T) {
	var texts []string
	for n := 0; n <= 25; n++ {
		digits := "9876543210987654321098765"[:n]
		for _, after := range []string{"", ",", "}", ".5", "e3", "/", ":", "\x00", "\xff", "\x80", " ", "0000000000", "\xba"} {
			texts = append(texts, digits+after, "0"+digits+after, "-"+digits+after)
		}
	}
	texts = append(texts, "18446744073709551615", "18446744073709551616", "99999999999999999999", "00000000", "0000000", "9999999,")
	for _, text := range texts {
		d := []byte(text)
		for i := 0; i <= len(d); i++ {
			for _, m := range []uint64{0, 7, 1 << 60} {
				gm, gi := parseDigits(d, i, m)
				if wm, wi := digitsByByte(d, i, m); gm != wm || gi != wi {
					t.Errorf("parseDigits(%q, %d, %d) = %d, %d, want %d, %d", text, i, m, gm, gi, wm, wi)
				}
			}
		}
	}
}

func FuzzParseDigits(f *testing.F) {
	f.Add([]byte("12345,"), uint64(0))
	f.Add([]byte("1234567"), uint64(3))
	f.Add([]byte("123456789012345678901234"), uint64(1<<63))
	f.Fuzz(func(t *testing.T, d []byte, m uint64) {
		for i := 0; i <= len(d) && i < 32; i++ {
			gm, gi := parseDigits(d, i, m)
			if wm, wi := digitsByByte(d, i, m); gm != wm || gi != wi {
				t.Fatalf("parseDigits(%q, %d, %d) = %d, %d, want %d, %d", d, i, m, gm, gi, wm, wi)
			}
		}
	})
}
