package variant

import (
	"bytes"
	"math/big"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

func mustJSON(t testing.TB, s string) Value {
	t.Helper()
	m, v, err := FromJSON([]byte(s))
	if err != nil {
		t.Fatalf("FromJSON(%s): %v", s, err)
	}
	val, err := New(m, v)
	if err != nil {
		t.Fatal(err)
	}
	return val
}

func mustShape(t testing.TB, paths string) Shape {
	t.Helper()
	s, err := ParseShapePaths(paths)
	if err != nil {
		t.Fatalf("ParseShapePaths(%q): %v", paths, err)
	}
	return s
}

func TestShapeMatch(t *testing.T) {
	tests := []struct {
		shape Shape
		json  string
		want  bool
	}{
		{Shape{Type: Int8}, "127", true},
		{Shape{Type: Int8}, "128", false},
		{Shape{Type: Int16}, "-32768", true},
		{Shape{Type: Int32}, "2147483648", false},
		{Shape{Type: Int64}, "-9223372036854775808", true},
		{Shape{Type: Int64}, "1.0", false}, // a decimal, even if integral
		{Shape{Type: Int64}, `"1"`, false},
		{Shape{Type: Decimal4, Precision: 9, Scale: 2}, "1.50", true},
		{Shape{Type: Decimal4, Precision: 9, Scale: 2}, "1.5", false},    // would read back as 1.50
		{Shape{Type: Decimal4, Precision: 9, Scale: 2}, "1.505", false},  // scale too big
		{Shape{Type: Decimal4, Precision: 9, Scale: 2}, "12", false},     // would read back as 12.00
		{Shape{Type: Decimal8, Precision: 18, Scale: 0}, "12", true},     // integers are exact numerics of scale 0
		{Shape{Type: Decimal4, Precision: 9, Scale: 0}, "12.0", false},   // would read back as 12
		{Shape{Type: Decimal4, Precision: 4, Scale: 2}, "100.00", false}, // 5 digits
		{Shape{Type: Decimal4, Precision: 4, Scale: 2}, "-99.99", true},
		{Shape{Type: Decimal8, Precision: 18, Scale: 17}, "0.2894365736814082", false},
		{Shape{Type: Decimal8, Precision: 18, Scale: 16}, "0.2894365736814082", true},
		{Shape{Type: Decimal16, Precision: 38, Scale: 0}, "123456789012345678901234567890", true},
		{Shape{Type: Decimal8, Precision: 18, Scale: 1}, "1e300", false}, // a double
		{Shape{Type: Double}, "1e300", true},
		{Shape{Type: Double}, "1.5", false}, // a decimal: another equivalence class
		{Shape{Type: String}, `"x"`, true},
		{Shape{Type: String}, `"` + strings.Repeat("x", 100) + `"`, true}, // long string
		{Shape{Type: String}, "null", false},
		{Shape{Type: Boolean}, "false", true},
		{Shape{Type: Boolean}, "0", false},
		{Shape{Type: Object, Fields: []ShapeField{{"a", Shape{Type: Int64}}}}, `{}`, true},
		{Shape{Type: Object, Fields: []ShapeField{{"a", Shape{Type: Int64}}}}, `[]`, false},
		{Shape{Type: Array, Element: &Shape{Type: String}}, `[1]`, true}, // elements decide for themselves
		{Shape{Type: Array, Element: &Shape{Type: String}}, `"[]"`, false},
		{Shape{}, `1`, false},
	}
	for _, tt := range tests {
		if got := tt.shape.Match(mustJSON(t, tt.json)); got != tt.want {
			t.Errorf("%v.Match(%s) = %v, want %v", tt.shape.String(), tt.json, got, tt.want)
		}
	}
}

func TestDecimalRescale(t *testing.T) {
	tests := []struct {
		d         Decimal
		scale     uint8
		precision int
		want      string
		ok        bool
	}{
		{DecimalFromInt64(15, 1), 3, 9, "1.500", true},
		{DecimalFromInt64(-15, 1), 3, 9, "-1.500", true},
		{DecimalFromInt64(15, 1), 0, 9, "", false}, // would lose a digit
		{DecimalFromInt64(999999999, 0), 0, 9, "999999999", true},
		{DecimalFromInt64(999999999, 0), 1, 9, "", false},
		{DecimalFromInt64(1, 0), 38, 38, "", false}, // 10^38 has 39 digits
		{DecimalFromInt64(1, 0), 37, 38, "1.0000000000000000000000000000000000000", true},
		{DecimalFromInt64(-1, 0), 37, 38, "-1.0000000000000000000000000000000000000", true},
		{DecimalFromInt64(1, 0), 0, 39, "", false},
	}
	for _, tt := range tests {
		got, ok := tt.d.Rescale(tt.scale, tt.precision)
		if ok != tt.ok || ok && string(got.AppendText(nil)) != tt.want {
			t.Errorf("%v.Rescale(%d, %d) = %s, %v; want %s, %v", tt.d, tt.scale, tt.precision, got.AppendText(nil), ok, tt.want, tt.ok)
		}
	}
}

func TestSplitObject(t *testing.T) {
	shape := mustShape(t, "$.b int64\n$.d string\n$.zz boolean")
	tests := []struct {
		json     string
		found    []string // JSON of each shape field, "" when missing
		residual string   // "" when there is none
	}{
		{`{"a":1,"b":2,"c":[3],"d":"x"}`, []string{"2", `"x"`, ""}, `{"a":1,"c":[3]}`},
		{`{"b":2,"d":null,"zz":true}`, []string{"2", "null", "true"}, ""},
		{`{}`, []string{"", "", ""}, ""},
		{`{"a":{"b":1},"e":"f"}`, []string{"", "", ""}, `{"a":{"b":1},"e":"f"}`},
		{`{"b":"not an int","y":1}`, []string{`"not an int"`, "", ""}, `{"y":1}`},
	}
	found := make([]Value, len(shape.Fields))
	for _, tt := range tests {
		v := mustJSON(t, tt.json)
		res, rest, err := shape.SplitObject([]byte("prefix"), v, found)
		if err != nil {
			t.Fatalf("%s: %v", tt.json, err)
		}
		for i, want := range tt.found {
			got := ""
			if found[i].Raw() != nil {
				got = found[i].String()
			}
			if got != want {
				t.Errorf("%s: field %s = %s, want %s", tt.json, shape.Fields[i].Name, got, want)
			}
		}
		if !bytes.HasPrefix(res, []byte("prefix")) {
			t.Fatalf("%s: SplitObject did not append", tt.json)
		}
		if rest != (tt.residual != "") {
			t.Errorf("%s: residual reported %v, want %q", tt.json, rest, tt.residual)
		}
		if !rest {
			continue
		}
		// The residual refers to the record's metadata, field ids intact.
		if err := Validate(metadataOf(v), res[len("prefix"):]); err != nil {
			t.Errorf("%s: residual invalid: %v", tt.json, err)
			continue
		}
		got, _ := AppendJSON(nil, metadataOf(v), res[len("prefix"):])
		if string(got) != tt.residual {
			t.Errorf("%s: residual %s, want %s", tt.json, got, tt.residual)
		}
	}
	if _, _, err := shape.SplitObject(nil, mustJSON(t, "[1]"), found); err == nil {
		t.Error("SplitObject of an array: no error")
	}
}

// metadataOf re-encodes the metadata of v's Variant for tests.
func metadataOf(v Value) []byte {
	m := v.Metadata()
	var b Builder
	b.BeginObject()
	for i := range m.Len() {
		b.Key(string(m.Key(i)))
		b.Null()
	}
	b.EndObject()
	md, _, _ := b.Finish(nil, nil)
	return md
}

// shredTree splits v by s the way the row group shredder does, for
// round-trip tests of Unshred without Parquet in between.
func shredTree(t testing.TB, s *Shape, v Value) Shredded {
	if !s.Match(v) {
		return Shredded{Value: v.Raw()}
	}
	switch s.Type {
	case Object:
		found := make([]Value, len(s.Fields))
		res, rest, err := s.SplitObject(nil, v, found)
		if err != nil {
			t.Fatal(err)
		}
		out := Shredded{Typed: Object}
		if rest {
			out.Value = res
		}
		for i, f := range s.Fields {
			sf := ShreddedField{Name: f.Name}
			if found[i].Raw() != nil {
				sf.Shredded = shredTree(t, &s.Fields[i].Shape, found[i])
			}
			out.Fields = append(out.Fields, sf)
		}
		return out
	case Array:
		out := Shredded{Typed: Array}
		for i := range v.Len() {
			e, err := v.Index(i)
			if err != nil {
				t.Fatal(err)
			}
			out.Elements = append(out.Elements, shredTree(t, s.Element, e))
		}
		return out
	}
	sc, ok := s.ScalarOf(v)
	if !ok {
		t.Fatalf("%v matches %v but ScalarOf fails", v, s)
	}
	return Shredded{Typed: s.Type, Scalar: sc}
}

// equalJSON compares JSON texts as values, numbers by exact value.
func equalJSON(a, b []byte) bool {
	ok, err := testutil.JSONEqual(a, b)
	return err == nil && ok
}

func TestShredUnshredRoundTrip(t *testing.T) {
	shape := mustShape(t, `
$.id int64
$.price decimal(9,2)
$.tags[*] string
$.user.name string
$.user.age int8
$.m[*][*].k boolean
$["odd \"key\""] string
`)
	docs := []string{
		`{"id":1,"price":1.5,"tags":["a","b"],"user":{"name":"x","age":3},"extra":[1,{}]}`,
		`{"id":"one","price":"free","tags":["a",1,null,[]],"user":"anon"}`,
		`{"id":null,"tags":[],"user":{},"m":[[{"k":true,"j":1}],[],[null,{"k":2}]]}`,
		`{"user":{"age":1000,"name":null,"more":{"deep":[{}]}},"odd \"key\"":"v"}`,
		`{}`, `[]`, `null`, `"s"`, `1.25`, `[{"id":1}]`,
	}
	var b Builder
	for _, doc := range docs {
		v := mustJSON(t, doc)
		tree := shredTree(t, &shape, v)
		md, val, err := b.Unshred(nil, nil, v.Metadata(), &tree)
		if err != nil {
			t.Fatalf("%s: Unshred: %v", doc, err)
		}
		got, err := AppendJSON(nil, md, val)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if !equalJSON([]byte(doc), got) {
			t.Errorf("round trip of %s gave %s", doc, got)
		}
	}
}

// TestUnshredSpecTable rebuilds the rows of the Objects table of
// VariantShredding.md from their columns.
func TestUnshredSpecTable(t *testing.T) {
	v := mustJSON(t, `{"email":"user@example.com","error_msg":"m","click":"_button","event_type":"x","event_ts":1}`)
	m := v.Metadata()
	str := func(s string) Scalar { return Scalar{Type: String, Bytes: []byte(s)} }
	ts := func(x int64) Scalar { return Scalar{Type: Timestamp, Int: x} }
	residual := func(name, val string) []byte {
		id, ok := m.Find(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return []byte{2, 1, byte(id), 0, byte(1 + len(val)), byte(len(val))<<2 | 1}
	}
	withStr := func(b []byte, val string) []byte { return append(b, val...) }
	fields := func(typ Scalar, tsv Scalar, typeValue, tsValue []byte) []ShreddedField {
		f := []ShreddedField{{Name: "event_type"}, {Name: "event_ts"}}
		if typ.Type != Invalid {
			f[0].Typed, f[0].Scalar = String, typ
		}
		f[0].Value = typeValue
		if tsv.Type != Invalid {
			f[1].Typed, f[1].Scalar = Timestamp, tsv
		}
		f[1].Value = tsValue
		return f
	}
	tests := []struct {
		s    Shredded
		want string
	}{
		{Shredded{Typed: Object, Fields: fields(str("noop"), ts(1729794114937000), nil, nil)},
			`{"event_ts":"2024-10-24T18:21:54.937000Z","event_type":"noop"}`},
		{Shredded{Typed: Object, Value: withStr(residual("email", "user@example.com"), "user@example.com"), Fields: fields(str("login"), ts(1729794146402000), nil, nil)},
			`{"email":"user@example.com","event_ts":"2024-10-24T18:22:26.402000Z","event_type":"login"}`},
		{Shredded{Typed: Object, Value: withStr(residual("error_msg", "malformed"), "malformed"), Fields: fields(Scalar{}, Scalar{}, nil, nil)},
			`{"error_msg":"malformed"}`},
		{Shredded{Value: []byte{0x31, 'm', 'a', 'l', 'f', 'o', 'r', 'm', 'e', 'd', ':', ' ', 'n'}}, `"malformed: n"`},
		{Shredded{Typed: Object, Fields: fields(Scalar{}, Scalar{}, []byte{0}, nil)}, `{"event_type":null}`},
		{Shredded{Typed: Object, Fields: fields(str("noop"), Scalar{}, nil, []byte{0x29, '2', '0', '2', '4', '-', '1', '0', '-', '2', '4'})},
			`{"event_ts":"2024-10-24","event_type":"noop"}`},
		{Shredded{Typed: Object, Fields: fields(Scalar{}, Scalar{}, nil, nil)}, `{}`},
		{Shredded{Value: []byte{0}}, `null`},
		{Shredded{}, `null`}, // missing at the top: the Variant null
		// A residual field repeating a shredded one: the typed column wins.
		{Shredded{Typed: Object, Value: withStr(residual("event_type", "login"), "login"), Fields: fields(str("typed"), Scalar{}, nil, nil)},
			`{"event_type":"typed"}`},
		{Shredded{Typed: Array, Elements: []Shredded{{Typed: String, Scalar: str("comedy")}, {Value: []byte{0}}, {}}},
			`["comedy",null,null]`},
	}
	var b Builder
	for i, tt := range tests {
		md, val, err := b.Unshred(nil, nil, m, &tt.s)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			continue
		}
		got, err := AppendJSON(nil, md, val)
		if err != nil || string(got) != tt.want {
			t.Errorf("case %d: got %s (%v), want %s", i, got, err, tt.want)
		}
	}

	bad := []Shredded{
		{Typed: String, Scalar: str("a"), Value: []byte{0}},                           // primitive with a value
		{Typed: Array, Value: []byte{0}},                                              // array with a value
		{Typed: Object, Value: []byte{0x0d, 'a', 'b', 'c'}},                           // residual not an object
		{Typed: Int64, Scalar: str("a")},                                              // scalar of the wrong type
		{Value: []byte{0x02, 0x05}},                                                   // truncated residual
		{Typed: Object, Value: []byte{2, 1, 200, 0, 1, 0}, Fields: []ShreddedField{}}, // field id beyond the dictionary
		{Typed: Int8, Scalar: Scalar{Type: Int8, Int: 300}},                           // out of range
		{Typed: String, Scalar: Scalar{Type: String, Bytes: []byte{0xff}}},            // not UTF-8
	}
	for i, s := range bad {
		if _, _, err := b.Unshred(nil, nil, m, &s); err == nil {
			t.Errorf("bad case %d: no error", i)
		}
	}
}

func TestInferrer(t *testing.T) {
	gen := func(n int, f func(i int) string) []string {
		var out []string
		for i := range n {
			out = append(out, f(i))
		}
		return out
	}
	tests := []struct {
		name    string
		samples []string
		opts    InferOptions
		want    string
	}{
		{"stable object", gen(100, func(i int) string {
			return `{"a":` + itoa(i) + `,"b":"s","c":[1.25,2.75],"d":{"e":true}}`
		}), InferOptions{}, `{"a": int32, "b": string, "c": [decimal4(9,2)], "d": {"e": boolean}}`},
		// Numbers of the scales 2, 1 and 0 (amounts printed in their
		// shortest form): the commonest scale, the others in value.
		{"mixed scales", gen(100, func(i int) string {
			return `{"a":` + itoa(i) + `,"c":[1.5,2.25,3.75,4]}`
		}), InferOptions{}, `{"a": int32, "c": [decimal4(9,2)]}`},
		{"int64 and rare types", gen(100, func(i int) string {
			if i%20 == 0 {
				return `{"a":"x","b":null}`
			}
			return `{"a":12345678901,"b":1}`
		}), InferOptions{}, `{"a": int64, "b": int32}`},
		{"unstable type", gen(100, func(i int) string {
			if i%5 == 0 {
				return `{"a":"x"}`
			}
			return `{"a":1}`
		}), InferOptions{}, `variant`},
		{"rare field", gen(100, func(i int) string {
			if i%3 == 0 {
				return `{"a":1,"rare":1}`
			}
			return `{"a":1}`
		}), InferOptions{}, `{"a": int32}`},
		{"scale by share", gen(100, func(i int) string {
			if i == 0 {
				return `{"p":0.000000000001}`
			}
			return `{"p":` + itoa(i) + `.5}`
		}), InferOptions{}, `{"p": decimal4(9,1)}`},
		{"column cap", gen(10, func(i int) string { return `{"a":1,"b":2,"c":{"d":3,"e":4}}` }),
			InferOptions{MaxColumns: 3}, `{"a": int32, "b": int32, "c": {"d": int32}}`},
		{"depth cap", gen(10, func(i int) string { return `{"a":{"b":{"c":1}}}` }),
			InferOptions{MaxDepth: 2}, `variant`},
		{"not objects", gen(10, func(i int) string { return `"s` + itoa(i) + `"` }), InferOptions{}, `string`},
		{"array of objects", gen(10, func(i int) string { return `[{"k":"v"},{"k":"w"},{"k":"u","x":1}]` }), InferOptions{}, `[{"k": string}]`},
		{"nulls only", gen(10, func(i int) string { return `{"a":null}` }), InferOptions{}, `variant`},
		{"map-like keys capped", gen(50, func(i int) string { return `{"k` + itoa(i) + `":1,"fixed":2}` }),
			InferOptions{MaxFieldNames: 5}, `{"fixed": int32}`},
	}
	for _, tt := range tests {
		in := NewInferrer(tt.opts)
		for _, s := range tt.samples {
			if err := in.Add(mustJSON(t, s)); err != nil {
				t.Fatal(err)
			}
		}
		got := in.Shape()
		if got.String() != tt.want {
			t.Errorf("%s: shape %s, want %s", tt.name, got.String(), tt.want)
		}
		if err := got.Check(); err != nil {
			t.Errorf("%s: inferred shape fails Check: %v", tt.name, err)
		}
		if tt.opts.MaxColumns > 0 && got.Leaves() > tt.opts.MaxColumns {
			t.Errorf("%s: %d leaves above the cap %d", tt.name, got.Leaves(), tt.opts.MaxColumns)
		}
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

func TestParseShapePaths(t *testing.T) {
	good := []struct{ text, want string }{
		{"$ int64", "int64"},
		{"$.a string\n# comment\n\n$.b.c decimal(12,2)", `{"a": string, "b": {"c": decimal8(12,2)}}`},
		{"$[*] boolean", "[boolean]"},
		{"$.x[*][*].y uuid\n$.x[*][*].z timestamp_ntz", `{"x": [[{"y": uuid, "z": timestamp_ntz}]]}`},
		{`$["a b"] date` + "\n$.z time_ntz\n$.m decimal(38,10)", `{"a b": date, "m": decimal16(38,10), "z": time_ntz}`},
	}
	for _, tt := range good {
		s, err := ParseShapePaths(tt.text)
		if err != nil || s.String() != tt.want {
			t.Errorf("ParseShapePaths(%q) = %s, %v; want %s", tt.text, s.String(), err, tt.want)
		}
	}
	bad := []string{
		"a string",             // no $
		"$.a",                  // no type
		"$.a strin",            // unknown type
		"$.a null",             // null is not shredded
		"$.a int8\n$.a int8",   // twice
		"$.a int8\n$.a.b int8", // both leaf and object
		"$.a[*] int8\n$.a.b int8",
		"$.a decimal(40,2)",
		"$.a decimal(5,6)",
		"$. int8",
		"$.a[0] int8",
		"$.a object",
	}
	for _, text := range bad {
		if s, err := ParseShapePaths(text); err == nil {
			t.Errorf("ParseShapePaths(%q) = %s, want an error", text, s.String())
		}
	}
}

func TestShapeCheck(t *testing.T) {
	bad := []Shape{
		{Type: Null},
		{Type: Decimal4, Precision: 10},
		{Type: Decimal8, Precision: 5, Scale: 6},
		{Type: Object, Fields: []ShapeField{{"b", Shape{Type: Int8}}, {"a", Shape{Type: Int8}}}},
		{Type: Object, Fields: []ShapeField{{"a", Shape{Type: Int8}}, {"a", Shape{Type: Int8}}}},
		{Type: Array},
		{Type: Int8, Element: &Shape{Type: Int8}},
		{Fields: []ShapeField{{"a", Shape{Type: Int8}}}},
		{Type: Array + 1},
	}
	for _, s := range bad {
		if err := s.Check(); err == nil {
			t.Errorf("Check(%+v) = nil, want an error", s)
		}
	}
}
