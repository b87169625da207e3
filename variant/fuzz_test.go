package variant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

// corpus is a small set of realistic event records.
var corpus = [][]byte{
	[]byte(`{"event":"page_view","ts":"2025-04-16T12:34:56.789Z","user_id":918273645,"session":"a1b2c3d4-e5f6","url":"https://example.com/products/42?ref=home","referrer":null,"duration_ms":1532,"scroll":0.73}`),
	[]byte(`{"id":123456,"ts":"2025-04-16T12:34:56.789Z","user":{"name":"Zoë \"Z\" Doe","email":"zoe@example.com","tags":["a","b","c"],"verified":true},"amount":-12.50,"ok":true,"ref":null,"geo":{"lat":52.52,"lon":13.405},"items":[{"sku":"X-1","qty":2,"price":9.99},{"sku":"Y-2","qty":1,"price":1e3}],"note":"caf\u00e9 \ud83d\udc22"}`),
	[]byte(`{"order":{"id":"ORD-2025-000123","lines":[{"sku":"A","qty":1,"unit_price":19.99,"discounts":[]},{"sku":"B","qty":3,"unit_price":5.00,"discounts":[{"code":"SPRING","pct":10}]}],"shipping":{"method":"express","address":{"street":"1 Main St","city":"Springfield","zip":"12345","country":"US"}},"total":34.99},"customer":{"id":42,"segment":"gold","since":"2019-03-01"}}`),
	[]byte(`{"sensor":"t-17","readings":[21.5,21.7,21.6,21.9,22.0,22.4],"unit":"C","battery":0.82,"status":{"ok":true,"errors":[]},"seq":9007199254740993}`),
}

func corpusBytes() int {
	n := 0
	for _, c := range corpus {
		n += len(c)
	}
	return n
}

// compareValue checks that the JSON tree x (numbers as json.Number) means
// the same as v. Numbers stored as integers or decimals must be equal
// exactly; numbers stored as doubles must be the double nearest to x.
func compareValue(x any, v Value) error {
	switch x := x.(type) {
	case nil:
		if v.Type() != Null {
			return fmt.Errorf("null vs %v", v.Type())
		}
	case bool:
		if b, ok := v.Bool(); !ok || b != x {
			return fmt.Errorf("%v vs %v", x, v)
		}
	case string:
		if b, ok := v.Bytes(); !ok || v.Type() != String || string(b) != x {
			return fmt.Errorf("%q vs %v", x, v)
		}
	case json.Number:
		switch v.Type() {
		case Int8, Int16, Int32, Int64:
			i, _ := v.Int()
			if !testutil.ExactNumbers(x, json.Number(strconv.FormatInt(i, 10))) {
				return fmt.Errorf("%s vs int %d", x, i)
			}
		case Decimal4, Decimal8, Decimal16:
			d, _ := v.Decimal()
			r := new(big.Rat).SetFrac(d.Big(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
			want, ok := ratOf(string(x))
			if !ok || r.Cmp(want) != 0 {
				return fmt.Errorf("%s vs decimal %s", x, d)
			}
		case Double:
			f, _ := v.Double()
			want, err := strconv.ParseFloat(string(x), 64)
			if err != nil && want != 0 || f != want {
				return fmt.Errorf("%s vs double %v", x, f)
			}
		default:
			return fmt.Errorf("number %s vs %v", x, v.Type())
		}
	case []any:
		if v.Type() != Array || v.Len() != len(x) {
			return fmt.Errorf("array of %d vs %v of %d", len(x), v.Type(), v.Len())
		}
		for i := range x {
			e, err := v.Index(i)
			if err != nil {
				return err
			}
			if err := compareValue(x[i], e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case map[string]any:
		if v.Type() != Object || v.Len() != len(x) {
			return fmt.Errorf("object of %d vs %v of %d", len(x), v.Type(), v.Len())
		}
		for k, xv := range x {
			e, found, err := v.Lookup(k)
			if err != nil || !found {
				return fmt.Errorf("field %q: found=%v err=%v", k, found, err)
			}
			if err := compareValue(xv, e); err != nil {
				return fmt.Errorf(".%s: %w", k, err)
			}
		}
	}
	return nil
}

// ratOf parses a JSON number exactly. A zero mantissa is zero whatever
// its exponent, which big.Rat cannot parse when the exponent is huge.
func ratOf(lit string) (*big.Rat, bool) {
	mantissa, _, _ := strings.Cut(strings.ToLower(lit), "e")
	if strings.Trim(mantissa, "-0.") == "" {
		return new(big.Rat), true
	}
	return new(big.Rat).SetString(lit)
}

func decodeTree(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	err := d.Decode(&x)
	return x, err
}

func FuzzEncodeDecode(f *testing.F) {
	for _, c := range corpus {
		f.Add(c)
	}
	for _, s := range []string{`1.50`, `-0.0e-3`, `1e38`, `12345678901234567890`, `{"b":1,"a":{"b":[]},"b":2}`, `"\u0000"`, `[[],{}]`} {
		f.Add([]byte(s))
	}
	dict, _ := os.ReadDir("testdata")
	for _, e := range dict {
		if name, ok := strings.CutSuffix(e.Name(), ".value"); ok {
			m, _ := os.ReadFile(filepath.Join("testdata", name+".metadata"))
			v, _ := os.ReadFile(filepath.Join("testdata", e.Name()))
			if js, err := AppendJSON(nil, m, v); err == nil {
				f.Add(js)
			}
		}
	}
	enc := NewEncoder(LastKeyWins())
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !json.Valid(doc) {
			if _, _, err := enc.AppendJSON(nil, nil, doc); err == nil {
				t.Fatalf("%q: encoded invalid JSON", doc)
			}
			return
		}
		m, v, err := enc.AppendJSON(nil, nil, doc)
		if err != nil {
			msg := err.Error()
			if strings.Contains(msg, "UTF-8") || strings.Contains(msg, "surrogate") ||
				strings.Contains(msg, "nesting") || strings.Contains(msg, "range of a double") {
				return
			}
			t.Fatalf("%q: %v", doc, err)
		}
		if err := Validate(m, v); err != nil {
			t.Fatalf("%q: our encoding does not validate: %v", doc, err)
		}
		val, err := New(m, v)
		if err != nil {
			t.Fatal(err)
		}
		in, err := decodeTree(doc)
		if err != nil {
			t.Fatal(err)
		}
		if err := compareValue(in, val); err != nil {
			t.Fatalf("%q: encoded value differs: %v", doc, err)
		}
		out, err := val.AppendJSON(nil)
		if err != nil {
			t.Fatalf("%q: decode: %v", doc, err)
		}
		back, err := decodeTree(out)
		if err != nil {
			t.Fatalf("%q: decoded JSON %q is invalid: %v", doc, out, err)
		}
		if err := compareValue(back, val); err != nil {
			t.Fatalf("%q: decoded JSON %s differs: %v", doc, out, err)
		}
		// Our own output encodes again to the same meaning. (Not always to
		// the same bytes: 1e3 is a decimal, its rendering 1000 an int16.)
		m2, v2, err := enc.AppendJSON(nil, nil, out)
		if err != nil {
			t.Fatalf("%q: re-encoding %s: %v", doc, out, err)
		}
		val2, err := New(m2, v2)
		if err != nil {
			t.Fatal(err)
		}
		if err := compareValue(back, val2); err != nil {
			t.Fatalf("%q: re-encoding %s differs: %v", doc, out, err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	ents, _ := os.ReadDir("testdata")
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".value"); ok {
			m, _ := os.ReadFile(filepath.Join("testdata", name+".metadata"))
			v, _ := os.ReadFile(filepath.Join("testdata", e.Name()))
			f.Add(m, v)
		}
	}
	for _, c := range corpus {
		m, v, _ := FromJSON(c)
		f.Add(m, v)
	}
	f.Fuzz(func(t *testing.T, m, v []byte) {
		verr := Validate(m, v)
		js, jerr := AppendJSON(nil, m, v)
		if (verr == nil) != (jerr == nil) {
			t.Fatalf("Validate: %v, AppendJSON: %v", verr, jerr)
		}
		if verr != nil {
			return
		}
		if !json.Valid(js) {
			t.Fatalf("invalid JSON output %q", js)
		}
		// Every path the view offers works on a valid Variant.
		val, err := New(m, v)
		if err != nil {
			t.Fatal(err)
		}
		var b Builder
		b.Value(val)
		m2, v2, err := b.Finish(nil, nil)
		if err != nil {
			t.Fatalf("copy of a valid value: %v", err)
		}
		js2, err := AppendJSON(nil, m2, v2)
		if err != nil || !bytes.Equal(js, js2) {
			t.Fatalf("copy renders %s (%v), want %s", js2, err, js)
		}
	})
}

func TestValidateRejects(t *testing.T) {
	empty := []byte{0x01, 0x00, 0x00}
	meta1 := []byte{0x11, 0x01, 0x00, 0x01, 'a'}
	tests := []struct {
		name   string
		m, v   []byte
		substr string
	}{
		{"empty metadata", nil, []byte{0}, "empty"},
		{"version", []byte{0x02, 0, 0}, []byte{0}, "version"},
		{"dict size", []byte{0x01, 0xff, 0}, []byte{0}, "dictionary size"},
		{"offsets decrease", []byte{0x01, 0x02, 0x00, 0x02, 0x01, 'a', 'b'}, []byte{0}, "out of order"},
		{"unsorted", []byte{0x11, 0x02, 0x00, 0x01, 0x02, 'b', 'a'}, []byte{0}, "sorted"},
		{"key utf8", []byte{0x01, 0x01, 0x00, 0x01, 0xff}, []byte{0}, "UTF-8"},
		{"empty value", empty, nil, "empty"},
		{"trailing", empty, []byte{0, 0}, "follow"},
		{"unknown type", empty, []byte{21 << 2}, "unknown primitive"},
		{"short int", empty, []byte{primitiveHeader(primInt32), 1}, "need 5"},
		{"string length", empty, []byte{primitiveHeader(primString), 0xff, 0xff, 0xff, 0xff}, "bytes left"},
		{"short string bounds", empty, []byte{3<<2 | 1, 'a'}, "need 4"},
		{"string utf8", empty, []byte{1<<2 | 1, 0xff}, "UTF-8"},
		{"decimal scale", empty, []byte{primitiveHeader(primDecimal4), 39, 1, 0, 0, 0}, "scale"},
		{"decimal4 digits", empty, []byte{primitiveHeader(primDecimal4), 0, 0x00, 0xca, 0x9a, 0x3b}, "digits"},
		{"time range", empty, []byte{primitiveHeader(primTimeNTZ), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "time of day"},
		{"field id", empty, []byte{0x02, 1, 0, 0, 1, 0}, "id 0"},
		{"field order", []byte{0x01, 0x02, 0x00, 0x01, 0x02, 'a', 'b'}, []byte{0x02, 2, 1, 0, 0, 1, 2, 0, 0}, "not after"},
		{"duplicate field", meta1, []byte{0x02, 2, 0, 0, 0, 1, 2, 0, 0}, "not after"},
		{"offset beyond", empty, []byte{0x03, 1, 5, 1, 0}, "beyond"},
		{"overlap", empty, []byte{0x03, 3, 0, 0, 0, 1, 0}, "overlap"},
		{"array count", empty, []byte{0x03, 200, 0}, "elements"},
		{"large count", empty, []byte{0x03 | 1<<4, 0xff, 0xff, 0xff, 0xff, 0}, "elements"},
		{"last offset", empty, []byte{0x03, 1, 0, 9, 0}, "values end"},
		{"depth", empty, deepArray(MaxDepth + 1), "nesting"},
	}
	for _, tt := range tests {
		err := Validate(tt.m, tt.v)
		if err == nil || !strings.Contains(err.Error(), tt.substr) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.substr)
		}
		if _, jerr := AppendJSON(nil, tt.m, tt.v); jerr == nil {
			t.Errorf("%s: AppendJSON accepted", tt.name)
		}
	}
	if err := Validate(empty, deepArray(MaxDepth)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
}

// deepArray nests n single-element arrays around a null.
func deepArray(n int) []byte {
	v := []byte{0}
	for range n {
		v = append([]byte{0x03, 1, 0, byte(len(v))}, v...)
		if len(v) > 255 {
			// Switch to 4-byte offsets once the inner value is large.
			inner := v[4:]
			v = append([]byte{0x03 | 3<<2, 1, 0, 0, 0, 0}, byte(len(inner)), byte(len(inner)>>8), byte(len(inner)>>16), byte(len(inner)>>24))
			v = append(v, inner...)
		}
	}
	return v
}

func BenchmarkEncode(b *testing.B) {
	e := NewEncoder()
	var m, v []byte
	b.SetBytes(int64(corpusBytes()))
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range corpus {
			var err error
			m, v, err = e.AppendJSON(m[:0], v[:0], c)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	type pair struct{ m, v []byte }
	var pairs []pair
	n := 0
	for _, c := range corpus {
		m, v, err := FromJSON(c)
		if err != nil {
			b.Fatal(err)
		}
		pairs = append(pairs, pair{m, v})
		n += len(c)
	}
	var out []byte
	b.SetBytes(int64(n)) // MB/s of JSON produced, comparable with BenchmarkEncode
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pairs {
			var err error
			out, err = AppendJSON(out[:0], p.m, p.v)
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkLookupPath(b *testing.B) {
	m, v, _ := FromJSON(corpus[2])
	p, _ := ParsePath("$.order.shipping.address.city")
	b.ReportAllocs()
	for b.Loop() {
		val, err := New(m, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, found, err := val.At(p); !found || err != nil {
			b.Fatal("not found")
		}
	}
}
