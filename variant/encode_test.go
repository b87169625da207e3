package variant

import (
	"bytes"
	"errors"

	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestEncodeNumbers(t *testing.T) {
	tests := []struct {
		json string
		typ  Type
		out  string // decoded JSON
	}{
		{`0`, Int8, `0`},
		{`-0`, Int8, `0`},
		{`127`, Int8, `127`},
		{`-128`, Int8, `-128`},
		{`128`, Int16, `128`},
		{`-32769`, Int32, `-32769`},
		{`2147483648`, Int64, `2147483648`},
		{`9223372036854775807`, Int64, `9223372036854775807`},
		{`-9223372036854775808`, Int64, `-9223372036854775808`},
		{`9223372036854775808`, Decimal16, `9223372036854775808`},
		{`-99999999999999999999999999999999999999`, Decimal16, `-99999999999999999999999999999999999999`},
		{`100000000000000000000000000000000000000`, Invalid, ``}, // 39 digits: LossyNumbers
		{`-0.0`, Double, `-0.0`},
		{`-0e3`, Double, `-0.0`},
		{`4.0000000001e-320`, Invalid, ``}, // subnormal, digits lost
		{`5e-324`, Double, `5e-324`},       // the shortest form of a subnormal
		{`1.5`, Decimal4, `1.5`},
		{`1.50`, Decimal4, `1.50`},
		{`-0.001`, Decimal4, `-0.001`},
		{`0.0`, Decimal4, `0.0`},
		{`999999999.0`, Decimal8, `999999999.0`},
		{`12345678.9`, Decimal4, `12345678.9`},
		{`1234567890.1234`, Decimal8, `1234567890.1234`},
		{`123456789012345678.9`, Decimal16, `123456789012345678.9`},
		{`1e3`, Decimal4, `1000`},
		{`1.5E+2`, Decimal4, `150`},
		{`25e-1`, Decimal4, `2.5`},
		{`0e10`, Decimal4, `0`},
		{`1e37`, Decimal16, `10000000000000000000000000000000000000`},
		{`1e38`, Double, `1e+38`},
		// The width holds the scale too: DECIMAL(9,38) is no decimal type.
		{`1e-38`, Decimal16, `0.00000000000000000000000000000000000001`},
		{`0.0000000001`, Decimal8, `0.0000000001`},
		{`0.1234567890123456789`, Decimal16, `0.1234567890123456789`},
		{`0.123456789`, Decimal4, `0.123456789`},
		{`1e-39`, Double, `1e-39`},
		{`0.1234567890123456789012345678901234567`, Decimal16, `0.1234567890123456789012345678901234567`},
		{`3.141592653589793238462643383279502884197`, Invalid, ``},
		{`1e308`, Double, `1e+308`},
		{`1e-400`, Invalid, ``},
		{`2.2250738585072014e-308`, Double, `2.2250738585072014e-308`},
		{`1e999999999999999999`, Invalid, ``},
		{`-1e400`, Invalid, ``},
	}
	for _, tt := range tests {
		m, v, err := FromJSON([]byte(tt.json))
		if tt.typ == Invalid && !errors.Is(err, ErrInexactNumber) && strings.Count(tt.json, "e") == 0 {
			t.Errorf("%s: got %v, want ErrInexactNumber", tt.json, err)
		}
		if tt.typ == Invalid {
			if err == nil || !strings.Contains(err.Error(), "at byte 0") {
				t.Errorf("%s: got %v, want an error at byte 0", tt.json, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.json, err)
			continue
		}
		val, err := New(m, v)
		if err != nil {
			t.Fatal(err)
		}
		out, err := val.AppendJSON(nil)
		if val.Type() != tt.typ || string(out) != tt.out || err != nil {
			t.Errorf("%s: got %v %s (%v), want %v %s", tt.json, val.Type(), out, err, tt.typ, tt.out)
		}
	}
}

func TestEncodeCanonical(t *testing.T) {
	tests := []struct {
		json           string
		metadata, vals string // hex
	}{
		{`null`, "010000", "00"},
		{`"ab"`, "010000", "096162"},
		{`[]`, "010000", "030000"},
		// Keys sorted, values written in key order, 1-byte widths.
		{`{"b":1,"a":true}`, "11020001026162", "02020001 000103 04 0c01"},
		// Shared dictionary entries across nested objects.
		{`{"a":{"a":null}}`, "1101000161", "020100 0006 02 01 00 0001 00"},
		{`[{"x":1},{"x":2}]`, "1101000178", "0302 00070e 020100 0002 0c01 020100 0002 0c02"},
	}
	for _, tt := range tests {
		m, v, err := FromJSON([]byte(tt.json))
		if err != nil {
			t.Fatalf("%s: %v", tt.json, err)
		}
		wantM := strings.ReplaceAll(tt.metadata, " ", "")
		wantV := strings.ReplaceAll(tt.vals, " ", "")
		if fmt.Sprintf("%x", m) != wantM || fmt.Sprintf("%x", v) != wantV {
			t.Errorf("%s: got %x %x, want %s %s", tt.json, m, v, wantM, wantV)
		}
	}
}

// TestEncodeWidths checks that widths grow exactly when needed.
func TestEncodeWidths(t *testing.T) {
	object := func(n int) string {
		var sb strings.Builder
		sb.WriteByte('{')
		for i := range n {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%04d":%d`, i, i%100)
		}
		sb.WriteByte('}')
		return sb.String()
	}
	array := func(n int, elem string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + "]"
	}
	tests := []struct {
		name      string
		json      string
		header    byte // value header byte
		metaOff   int  // metadata offset size
		numFields int
	}{
		// 255 fields of 2-byte ints: 1-byte ids, 2-byte offsets, not large.
		{"255 fields", object(255), 0x01<<2 | 0x02, 2, 255},
		// 256 fields: large, but ids up to 255 still fit one byte.
		{"256 fields", object(256), (0x10|0x01)<<2 | 0x02, 2, 256},
		// 257 fields: id 256 needs two bytes.
		{"257 fields", object(257), (0x10|0x04|0x01)<<2 | 0x02, 2, 257},
		{"255 elements", array(255, "null"), 0x03, 1, 255}, // last offset 255 fits a byte
		{"256 elements", array(256, "null"), (0x04|0x01)<<2 | 0x03, 1, 256},
		{"long values", array(2, `"`+strings.Repeat("x", 70000)+`"`), 0x03 | 0x02<<2, 1, 2},
	}
	for _, tt := range tests {
		m, v, err := FromJSON([]byte(tt.json))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if v[0] != tt.header {
			t.Errorf("%s: header %#02x, want %#02x", tt.name, v[0], tt.header)
		}
		if got := int(m[0]>>6) + 1; got != tt.metaOff {
			t.Errorf("%s: metadata offset size %d, want %d", tt.name, got, tt.metaOff)
		}
		val, err := New(m, v)
		if err != nil {
			t.Fatal(err)
		}
		if val.Len() != tt.numFields {
			t.Errorf("%s: %d elements, want %d", tt.name, val.Len(), tt.numFields)
		}
		js, err := val.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !sameJSON(t, js, []byte(tt.json)) {
			t.Errorf("%s: round trip differs", tt.name)
		}
	}
}

func TestEncodeDuplicates(t *testing.T) {
	doc := []byte(`{"a":1,"b":{"x":1,"y":2,"x":3}}`)
	_, _, err := FromJSON(doc)
	if err == nil || !strings.Contains(err.Error(), `duplicate key "x" at byte 24`) {
		t.Fatalf("got %v, want duplicate key at byte 24", err)
	}
	m, v, err := NewEncoder(LastKeyWins()).AppendJSON(nil, nil, doc)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := AppendJSON(nil, m, v)
	if string(js) != `{"a":1,"b":{"x":3,"y":2}}` {
		t.Fatalf("last wins: got %s", js)
	}
}

func TestEncodeErrors(t *testing.T) {
	for _, doc := range []string{``, `{`, `[1,]`, `{"a":1}x`, "\"\xff\"", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)} {
		_, _, err := FromJSON([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), "at byte") {
			t.Errorf("%.20q: got %v, want an error naming the byte", doc, err)
		}
	}
	// The encoder is usable again after an error.
	e := NewEncoder()
	if _, _, err := e.AppendJSON(nil, nil, []byte(`{"a":[1,`)); err == nil {
		t.Fatal("no error")
	}
	m, v, err := e.AppendJSON(nil, nil, []byte(`{"b":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if js, _ := AppendJSON(nil, m, v); string(js) != `{"b":2}` {
		t.Fatalf("after error: %s", js)
	}
}

func TestEncoderAppends(t *testing.T) {
	e := NewEncoder()
	m, v, err := e.AppendJSON([]byte("M"), []byte("V"), []byte(`{"k":"v"}`))
	if err != nil {
		t.Fatal(err)
	}
	m2, v2, _ := FromJSON([]byte(`{"k":"v"}`))
	if !bytes.Equal(m, append([]byte("M"), m2...)) || !bytes.Equal(v, append([]byte("V"), v2...)) {
		t.Fatalf("AppendJSON did not append")
	}
}

func TestEncoderZeroAllocs(t *testing.T) {
	e := NewEncoder()
	var m, v []byte
	line := corpus[1]
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		m, v, err = e.AppendJSON(m[:0], v[:0], line)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per record, want 0", allocs)
	}
}

func TestBuilder(t *testing.T) {
	var b Builder
	b.BeginObject()
	b.Key("z")
	b.Int(300)
	b.Key("a")
	b.BeginArray()
	b.Decimal8(-12345, 3)
	b.Float(1.5)
	b.Date(-1)
	b.Timestamp(1)
	b.TimestampNTZNanos(-1)
	b.TimeNTZ(86399999999)
	b.Binary([]byte{0xff})
	b.UUID([16]byte{15: 1})
	b.BigDecimal(mustBig("-123456789012345678901234567890"), 5)
	b.Decimal16([]byte{0xff}, 0)
	b.Double(0)
	b.EndArray()
	b.Key("m")
	b.String(strings.Repeat("é", 40))
	b.EndObject()
	m, v, err := b.Finish(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := AppendJSON(nil, m, v)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":[-12.345,1.5,"1969-12-31","1970-01-01T00:00:00.000001Z","1969-12-31T23:59:59.999999999","23:59:59.999999","/w==","00000000-0000-0000-0000-000000000001",-1234567890123456789012345.67890,-1,0],"m":"` + strings.Repeat("é", 40) + `","z":300}`
	if string(js) != want {
		t.Fatalf("got  %s\nwant %s", js, want)
	}
	val, _ := New(m, v)
	arr, _, _ := val.Lookup("a")
	d, _ := arr.Index(8)
	if d.Type() != Decimal16 {
		t.Fatalf("BigDecimal chose %v", d.Type())
	}
	if s, _, _ := val.Lookup("m"); s.Raw()[0] != primitiveHeader(primString) {
		t.Fatal("80-byte string not long")
	}

	misuse := []struct {
		name  string
		build func(*Builder)
	}{
		{"two roots", func(b *Builder) { b.Null(); b.Null() }},
		{"field without key", func(b *Builder) { b.BeginObject(); b.Null() }},
		{"key outside object", func(b *Builder) { b.BeginArray(); b.Key("a") }},
		{"two keys", func(b *Builder) { b.BeginObject(); b.Key("a"); b.Key("b") }},
		{"unbalanced", func(b *Builder) { b.BeginObject(); b.EndArray() }},
		{"not ended", func(b *Builder) { b.BeginArray() }},
		{"empty", func(b *Builder) {}},
		{"duplicate", func(b *Builder) {
			b.BeginObject()
			b.Key("a")
			b.Null()
			b.Key("a")
			b.Null()
			b.EndObject()
		}},
		{"bad utf8", func(b *Builder) { b.String("\xff") }},
		{"decimal4 digits", func(b *Builder) { b.Decimal4(1_000_000_000, 0) }},
		{"scale", func(b *Builder) { b.Decimal8(1, 39) }},
		{"time", func(b *Builder) { b.TimeNTZ(-1) }},
		{"big decimal", func(b *Builder) { b.BigDecimal(mustBig("1"+strings.Repeat("0", 38)), 0) }},
	}
	for _, tt := range misuse {
		var b Builder
		tt.build(&b)
		if _, _, err := b.Finish(nil, nil); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestPath(t *testing.T) {
	m, v, err := FromJSON([]byte(`{"a":{"b":[10,{"c d":"x"},[true]]},"e":1}`))
	if err != nil {
		t.Fatal(err)
	}
	val, _ := New(m, v)
	tests := []struct {
		path string
		want string // JSON, or "" when not found
	}{
		{`$`, `{"a":{"b":[10,{"c d":"x"},[true]]},"e":1}`},
		{`$.e`, `1`},
		{`$.a.b[0]`, `10`},
		{`$.a.b[1]["c d"]`, `"x"`},
		{`$['a']["b"][2][0]`, `true`},
		{`$.a.b[3]`, ``},
		{`$.a.x`, ``},
		{`$.e.f`, ``},
		{`$.a[0]`, ``},
	}
	for _, tt := range tests {
		p, err := ParsePath(tt.path)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		got, found, err := val.At(p)
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if found != (tt.want != "") || found && got.String() != tt.want {
			t.Errorf("%s: got %v %s, want %s", tt.path, found, got, tt.want)
		}
	}
	for _, bad := range []string{``, `a`, `$.`, `$[`, `$[x]`, `$[-1]`, `$["a"`, `$..a`, `$a`} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestLookupUnsortedMetadata uses upstream's unsorted dictionary, where
// lookup must compare names rather than ids.
func TestLookupUnsortedMetadata(t *testing.T) {
	m, v := loadVector(t, "object_nested")
	val, err := New(m, v)
	if err != nil {
		t.Fatal(err)
	}
	if val.Metadata().Sorted() {
		t.Fatal("vector metadata is sorted; test needs unsorted")
	}
	p, _ := ParsePath("$.observation.value.temperature")
	got, found, err := val.At(p)
	if err != nil || !found || got.String() != "123" {
		t.Fatalf("got %v %v %v", got, found, err)
	}
	for _, name := range []string{"species", "id", "observation"} {
		if _, found, _ := val.Lookup(name); !found {
			t.Errorf("%s not found", name)
		}
	}
	if _, found, _ := val.Lookup("nope"); found {
		t.Error("found missing field")
	}
}

func mustBig(s string) *big.Int {
	x, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return x
}

// TestLossyNumbers checks that what is refused by default becomes the
// nearest double with LossyNumbers, and that -0.0 keeps its sign.
func TestLossyNumbers(t *testing.T) {
	for lit, want := range map[string]float64{
		`100000000000000000000000000000000000000`:   1e38,
		`3.141592653589793238462643383279502884197`: 3.141592653589793,
		`1e-400`:            0,
		`4.0000000001e-320`: 4e-320,
	} {
		m, v, err := NewEncoder(LossyNumbers()).AppendJSON(nil, nil, []byte(lit))
		if err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		val, _ := New(m, v)
		if f, _ := val.Double(); val.Type() != Double || f != want {
			t.Errorf("%s: %v %v, want double %v", lit, val.Type(), f, want)
		}
	}
	m, v, _ := FromJSON([]byte(`-0.0`))
	val, _ := New(m, v)
	if f, _ := val.Double(); val.Type() != Double || !math.Signbit(f) {
		t.Errorf("-0.0: %v %v", val.Type(), f)
	}
}
