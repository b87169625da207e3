package variant

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil"
)

// loadVector reads testdata/<name>.metadata and .value.
func loadVector(t testing.TB, name string) (metadata, value []byte) {
	t.Helper()
	m, err := os.ReadFile(filepath.Join("testdata", name+".metadata"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join("testdata", name+".value"))
	if err != nil {
		t.Fatal(err)
	}
	return m, v
}

// loadDictionary parses upstream's data_dictionary.json, which ends its
// object with a trailing comma.
func loadDictionary(t *testing.T) map[string]json.RawMessage {
	b, err := os.ReadFile(filepath.Join("testdata", "data_dictionary.json"))
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`,\s*}\s*$`).ReplaceAll(b, []byte("\n}"))
	var dict map[string]json.RawMessage
	if err := json.Unmarshal(b, &dict); err != nil {
		t.Fatal(err)
	}
	return dict
}

// sameJSON compares JSON texts by meaning; numbers must be equal exactly
// as decimals.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	ok, err := testutil.JSONEqual(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func parseTime(t *testing.T, s string, layouts ...string) time.Time {
	t.Helper()
	for _, l := range layouts {
		if tm, err := time.Parse(l, s); err == nil {
			return tm
		}
	}
	t.Fatalf("cannot parse time %q", s)
	return time.Time{}
}

// TestConformanceDecode decodes every upstream vector and compares it with
// data_dictionary.json by meaning.
func TestConformanceDecode(t *testing.T) {
	dict := loadDictionary(t)
	if len(dict) != 28 {
		t.Fatalf("dictionary has %d entries", len(dict))
	}
	for name, want := range dict {
		t.Run(name, func(t *testing.T) {
			m, v := loadVector(t, name)
			if err := Validate(m, v); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := AppendJSON(nil, m, v)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			var gotS, wantS string
			json.Unmarshal(got, &gotS)
			json.Unmarshal(want, &wantS)
			switch name {
			case "primitive_time":
				// Upstream writes the fraction after a ':'.
				if fixed := wantS[:8] + "." + wantS[9:]; gotS != fixed {
					t.Fatalf("got %s, want %s", gotS, fixed)
				}
			case "primitive_timestamp", "primitive_timestamp_nanos":
				g := parseTime(t, gotS, time.RFC3339Nano)
				w := parseTime(t, wantS, "2006-01-02 15:04:05.999999999Z07:00", time.RFC3339Nano)
				if !g.Equal(w) || !strings.HasSuffix(gotS, "Z") {
					t.Fatalf("got %s, want the instant %s", gotS, wantS)
				}
			case "primitive_timestampntz", "primitive_timestampntz_nanos":
				const ntz = "2006-01-02T15:04:05.999999999"
				g := parseTime(t, gotS, ntz)
				w := parseTime(t, wantS, "2006-01-02 15:04:05.999999999", ntz)
				if !g.Equal(w) {
					t.Fatalf("got %s, want %s", gotS, wantS)
				}
			case "primitive_decimal16":
				// Upstream lists the decimal as a float64, which cannot hold
				// its 19 digits: compare after the same rounding.
				g, _ := strconv.ParseFloat(string(got), 64)
				w, _ := strconv.ParseFloat(string(want), 64)
				if g != w || string(got) != "12345678912345678.90" {
					t.Fatalf("got %s, want %s (as float64)", got, want)
				}
			case "primitive_float":
				// A float32 printed by upstream as a float64: compare as float32.
				g, _ := strconv.ParseFloat(string(got), 32)
				w, _ := strconv.ParseFloat(string(want), 32)
				if float32(g) != float32(w) {
					t.Fatalf("got %s, want %s", got, want)
				}
			default:
				if !sameJSON(t, got, want) {
					t.Fatalf("got %s, want %s", got, want)
				}
			}
		})
	}
}

// TestConformanceEncodeJSON re-encodes the decoded JSON of every vector.
// The result must decode to the same JSON, and where upstream's bytes are
// what this package would write, be byte-identical.
func TestConformanceEncodeJSON(t *testing.T) {
	// Vectors our JSON encoding does not reproduce byte for byte, and why.
	exceptions := map[string]string{
		"primitive_decimal8":           "12345678.90 has 9 digits, so we choose decimal4",
		"primitive_double":             "JSON 1234567890.1234 is an exact decimal, so we choose decimal8",
		"primitive_float":              "JSON has no float32; the number becomes an int64",
		"object_primitive":             "upstream's dictionary is unsorted and values are in document order",
		"object_nested":                "upstream's dictionary is unsorted and values are in document order",
		"array_nested":                 "upstream's dictionary is unsorted",
		"primitive_binary":             "binary renders as a base64 string",
		"primitive_date":               "dates render as strings",
		"primitive_time":               "times render as strings",
		"primitive_uuid":               "uuids render as strings",
		"primitive_timestamp":          "timestamps render as strings",
		"primitive_timestamp_nanos":    "timestamps render as strings",
		"primitive_timestampntz":       "timestamps render as strings",
		"primitive_timestampntz_nanos": "timestamps render as strings",
	}
	ents, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	identical := 0
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".value")
		if !ok {
			continue
		}
		m, v := loadVector(t, name)
		js, err := AppendJSON(nil, m, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m2, v2, err := FromJSON(js)
		if err != nil {
			t.Fatalf("%s: FromJSON(%s): %v", name, js, err)
		}
		js2, err := AppendJSON(nil, m2, v2)
		if err != nil {
			t.Fatalf("%s: decoding our encoding: %v", name, err)
		}
		if !sameJSON(t, js, js2) {
			t.Errorf("%s: round trip changed %s into %s", name, js, js2)
		}
		if _, ok := exceptions[name]; ok {
			continue
		}
		if !bytes.Equal(m2, m) || !bytes.Equal(v2, v) {
			t.Errorf("%s: not byte-identical\n got %x %x\nwant %x %x", name, m2, v2, m, v)
		}
		identical++
	}
	if identical < 15 {
		t.Fatalf("only %d byte-identical vectors", identical)
	}
}

// rebuild encodes v again with the Builder method of its type.
func rebuild(t *testing.T, b *Builder, v Value) {
	switch v.Type() {
	case Null:
		b.Null()
	case Boolean:
		x, _ := v.Bool()
		b.Bool(x)
	case Int8:
		x, _ := v.Int()
		b.Int8(int8(x))
	case Int16:
		x, _ := v.Int()
		b.Int16(int16(x))
	case Int32:
		x, _ := v.Int()
		b.Int32(int32(x))
	case Int64:
		x, _ := v.Int()
		b.Int64(x)
	case Double:
		x, _ := v.Double()
		b.Double(x)
	case Float:
		x, _ := v.Float()
		b.Float(x)
	case Decimal4:
		d, _ := v.Decimal()
		b.Decimal4(int32(d.Lo), d.Scale)
	case Decimal8:
		d, _ := v.Decimal()
		b.Decimal8(int64(d.Lo), d.Scale)
	case Decimal16:
		d, _ := v.Decimal()
		var be [16]byte
		d.Big().FillBytes(be[:]) // positive in the vectors
		b.Decimal16(be[:], d.Scale)
	case Date:
		x, _ := v.Date()
		b.Date(x)
	case Timestamp, TimestampNTZ, TimestampNanos, TimestampNTZNanos:
		x, _ := v.Timestamp()
		map[Type]func(int64){
			Timestamp: b.Timestamp, TimestampNTZ: b.TimestampNTZ,
			TimestampNanos: b.TimestampNanos, TimestampNTZNanos: b.TimestampNTZNanos,
		}[v.Type()](x)
	case TimeNTZ:
		x, _ := v.TimeNTZ()
		b.TimeNTZ(x)
	case UUID:
		x, _ := v.UUID()
		b.UUID(x)
	case Binary:
		x, _ := v.Bytes()
		b.Binary(x)
	case String:
		x, _ := v.Bytes()
		b.String(string(x))
	case Object:
		b.BeginObject()
		for i := range v.Len() {
			name, f, err := v.Field(i)
			if err != nil {
				t.Fatal(err)
			}
			b.Key(string(name))
			rebuild(t, b, f)
		}
		b.EndObject()
	case Array:
		b.BeginArray()
		for i := range v.Len() {
			e, err := v.Index(i)
			if err != nil {
				t.Fatal(err)
			}
			rebuild(t, b, e)
		}
		b.EndArray()
	default:
		t.Fatalf("unexpected type %v", v.Type())
	}
}

// TestConformanceBuilder rebuilds every vector with the typed Builder
// methods. Every primitive vector is reproduced byte for byte (the
// Builder writes the type it is asked for); containers decode equal, and
// Builder.Value copies decode equal too.
func TestConformanceBuilder(t *testing.T) {
	ents, _ := os.ReadDir("testdata")
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".value")
		if !ok {
			continue
		}
		m, v := loadVector(t, name)
		val, err := New(m, v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b Builder
		rebuild(t, &b, val)
		m2, v2, err := b.Finish(nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := AppendJSON(nil, m, v)
		got, err := AppendJSON(nil, m2, v2)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: builder gave %s (%v), want %s", name, got, err, want)
		}
		if vt := val.Type(); vt != Object && vt != Array && (!bytes.Equal(v2, v) || !bytes.Equal(m2, m)) {
			t.Errorf("%s: builder bytes %x, want %x", name, v2, v)
		}
		b.Value(val)
		m3, v3, err := b.Finish(nil, nil)
		if err != nil {
			t.Fatalf("%s: Builder.Value: %v", name, err)
		}
		if got, _ := AppendJSON(nil, m3, v3); !bytes.Equal(got, want) {
			t.Errorf("%s: Builder.Value gave %s, want %s", name, got, want)
		}
	}
}

func TestDecimalText(t *testing.T) {
	tests := []struct {
		d    Decimal
		want string
	}{
		{DecimalFromInt64(0, 0), "0"},
		{DecimalFromInt64(0, 2), "0.00"},
		{DecimalFromInt64(1234, 2), "12.34"},
		{DecimalFromInt64(-1234, 2), "-12.34"},
		{DecimalFromInt64(1, 3), "0.001"},
		{DecimalFromInt64(-5, 1), "-0.5"},
		{DecimalFromInt64(math.MinInt64, 0), "-9223372036854775808"},
		{Decimal{Hi: 0x4b3b4ca85a86c47a, Lo: 0x098a223fffffffff, Scale: 38}, "0.99999999999999999999999999999999999999"},
		{Decimal{Hi: 1, Lo: 0, Scale: 0}, "18446744073709551616"},
		{DecimalFromInt64(10000000000000000000/10, 0), "1000000000000000000"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%+v: got %s, want %s", tt.d, got, tt.want)
		}
		if got := tt.d.Big().String(); !testutil.ExactNumbers(json.Number(got+"e-"+strconv.Itoa(int(tt.d.Scale))), json.Number(tt.want)) {
			t.Errorf("%+v: Big %s disagrees with %s", tt.d, got, tt.want)
		}
	}
}
