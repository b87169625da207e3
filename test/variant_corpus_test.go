package test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/pqsink/pqsink/internal/testutil"
)

// variantCorpus returns JSON lines for the VARIANT conversion tests: a
// majority of records with a stable shape (so that inference shreds
// fields at several depths, inside objects and arrays), records where
// those fields change type, go missing or turn null, and records that
// stress the encoding: deep nesting, unicode and escapes, big and tiny
// numbers, empty objects and arrays, top-level values that are not
// objects.
func variantCorpus() []string {
	var lines []string
	for i := range 400 {
		price := fmt.Sprintf("%d.%d", 10+i%90, i%10) // scale 1
		if i%3 == 0 {
			price = fmt.Sprintf("%d.%02d", i, i%100) // scale 2
		}
		rec := fmt.Sprintf(`{"id":%d,"event":"%s","price":%s,"ok":%t,`+
			`"user":{"id":%d,"name":"user %d","tags":["t%d","t%d"],"geo":{"lat":%d.%04d,"lon":-%d.%04d}},`+
			`"items":[{"sku":"sku-%d","qty":%d},{"sku":"sku-%d","qty":%d}]}`,
			i, []string{"view", "click", "buy"}[i%3], price, i%2 == 0,
			i*7, i, i%5, i%3, 40+i%10, i, 3+i%5, i*3,
			i, 1+i%4, i+1, i*100)
		switch {
		case i%23 == 1: // type changes and nulls
			rec = fmt.Sprintf(`{"id":"%d","event":null,"price":"free","ok":1,"user":"anonymous","items":[{"sku":%d,"qty":1.5},"loose",null,[]]}`, i, i)
		case i%11 == 2: // missing fields, extra fields, empties
			rec = fmt.Sprintf(`{"id":%d,"extra":{"a":[],"b":{}},"user":{"tags":[],"geo":{}},"items":[]}`, i)
		case i%23 == 3: // numbers beyond the typed columns
			rec = fmt.Sprintf(`{"id":%d,"event":"view","price":1e300,"ok":false,"user":{"id":9223372036854775807,"name":"big","tags":[1,true,null,{"x":1}],"geo":{"lat":5e-324,"lon":0.000000000000000000000000000001}},"items":[{"sku":"s","qty":123456789012345678901234567890}]}`, i)
		}
		lines = append(lines, rec)
	}
	deepArr := strings.Repeat("[", 120) + `"bottom"` + strings.Repeat("]", 120)
	deepObj := strings.Repeat(`{"d":`, 120) + `{"leaf":[1,{"x":null}]}` + strings.Repeat("}", 120)
	lines = append(lines,
		`{"id":1000,"deep":`+deepArr+`,"nest":`+deepObj+`}`,
		`{"id":1001,"event":"unicode: é ü 東京 🎉 \u00e9 \ud83d\ude00 \u0000 \t \" \\ \/ \b\f\n\r","user":{"name":"Zoë \u2028 \u2029"},"ключ":"значение","":"empty key","a\"b":1}`,
		`{"id":1002,"price":-0.000001,"tiny":1e-7,"neg":-9223372036854775808,"u64":18446744073709551615,"dec38":12345678901234567890123456789012345678,"exp":1.5e3,"negzero":-0.0,"frac":0.1,"huge":1.7976931348623157e308,"d8scale19":0.0049317432416439155}`,
		`{}`,
		`[]`,
		`[{},[],null,"",0]`,
		`"a plain string"`,
		`12345`,
		`-1.25`,
		`true`,
		`null`,
		`{"id":1003,"user":{"id":null,"name":null,"tags":null,"geo":null},"items":null}`,
		`{"id":1004,"items":[{"sku":"only-sku"},{"qty":2},{}]}`,
		`{"id":1005,"user":{"id":1,"name":"n","tags":["a"],"geo":{"lat":1.5,"lon":2.5,"alt":100}},"items":[{"sku":"x","qty":1,"note":"residual field"}]}`,
	)
	return lines
}

// variantForcedShape shreds paths whose values often do not fit, so that
// fallback to value is exercised everywhere: a decimal scale too small for
// some prices, narrow integers, arrays of arrays, a top-level object shape
// that non-object lines miss.
const variantForcedShape = `# forced shredding for the fallback tests
$.id               int64
$.event            string
$.price            decimal(9,1)
$.ok               boolean
$.user.id          int8
$.user.name        string
$.user.tags[*]     string
$.user.geo.lat     decimal(18,4)
$.user.geo.lon     double
$.items[*].sku     string
$.items[*].qty     int16
$.deep[*][*]       string
$.nest.d.d.d       string
$.missing.field    date
`

// jsonEqual compares two JSON texts as JSON values: objects regardless of
// member order, numbers by exact value (1.5 equals 1.50 and 15e-1), and,
// when the expected literal cannot be stored exactly (more than 38
// significant digits or a scale beyond 38, kept as a double), by the
// nearest double.
func jsonEqual(want, got []byte) (bool, error) {
	return testutil.JSONEqualFunc(want, got, func(w, g json.Number) bool {
		return testutil.ExactNumbers(w, g) || testutil.DoubleNumbers(w, g) && !exactDecimal(string(w))
	})
}

// exactDecimal reports whether the Variant encoder keeps the literal
// exactly (as an integer or a decimal of at most 38 digits and scale).
func exactDecimal(lit string) bool {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return false
	}
	for scale := 0; scale <= 38; scale++ {
		if r.IsInt() {
			return r.Num().BitLen() <= 127 && len(r.Num().String()) <= 39
		}
		r.Mul(r, big.NewRat(10, 1))
	}
	return false
}

// fixDuckJSON turns DuckDB's rendering of decimals below one in JSON text
// (".5", "-.001", which JSON does not allow) into valid JSON numbers.
func fixDuckJSON(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case c == '.' && (i == 0 || strings.IndexByte("-:,[ ", b[i-1]) >= 0):
			out = append(out, '0')
		}
		out = append(out, c)
	}
	return out
}

// sortedKeys is for stable messages.
func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
