package rowgroup

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// dumpColumn renders a column's levels and values for comparison:
// "R[..] " when it has repetition levels, "D[..] " when it has definition
// levels, then "V[..]" with byte arrays quoted and fixed values in hex.
func dumpColumn(c *Column) string {
	var b strings.Builder
	if c.MaxRep() > 0 {
		fmt.Fprintf(&b, "R%v ", c.Rep)
	}
	if c.MaxDef() > 0 {
		fmt.Fprintf(&b, "D%v ", c.Def)
	}
	var vals []string
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		for _, v := range c.Bool {
			vals = append(vals, fmt.Sprint(v))
		}
	case meta.TypeInt32:
		for _, v := range c.Int32 {
			vals = append(vals, fmt.Sprint(v))
		}
	case meta.TypeInt64:
		for _, v := range c.Int64 {
			vals = append(vals, fmt.Sprint(v))
		}
	case meta.TypeInt96:
		for _, v := range c.Int96 {
			vals = append(vals, hex.EncodeToString(v[:]))
		}
	case meta.TypeFloat:
		for _, v := range c.Float {
			vals = append(vals, fmt.Sprint(v))
		}
	case meta.TypeDouble:
		for _, v := range c.Double {
			vals = append(vals, fmt.Sprint(v))
		}
	case meta.TypeByteArray:
		if c.Leaf.Logical.Kind == schema.Decimal {
			for i := range c.NumValues() {
				vals = append(vals, hex.EncodeToString(c.ByteArray(i)))
			}
			break
		}
		for i := range c.NumValues() {
			vals = append(vals, fmt.Sprintf("%q", c.ByteArray(i)))
		}
	case meta.TypeFixedLenByteArray:
		n := int(c.Leaf.Length)
		for i := 0; i+n <= len(c.Bytes); i += n {
			vals = append(vals, hex.EncodeToString(c.Bytes[i:i+n]))
		}
	}
	fmt.Fprintf(&b, "V[%s]", strings.Join(vals, " "))
	return b.String()
}

// dumpGroup renders every column, keyed by path.
func dumpGroup(g *RowGroup) map[string]string {
	m := make(map[string]string)
	for _, c := range g.Columns() {
		m[c.Leaf.PathString()] = dumpColumn(c)
	}
	return m
}

func newShredder(t testing.TB, text string, opts ...JSONOption) (*RowGroup, *JSONShredder) {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	g := New(s)
	sh, err := NewJSONShredder(g, opts...)
	if err != nil {
		t.Fatalf("NewJSONShredder: %v", err)
	}
	return g, sh
}

const dremelSchema = `message Document {
  required int64 DocId;
  optional group Links {
    repeated int64 Backward;
    repeated int64 Forward;
  }
  repeated group Name {
    repeated group Language {
      required binary Code (STRING);
      optional binary Country (STRING);
    }
    optional binary Url (STRING);
  }
}`

func TestJSONShredStriping(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		lines  []string
		want   map[string]string
	}{
		{
			// The example of the Dremel paper (Melnik et al., 2010, figure 2).
			name:   "dremel paper",
			schema: dremelSchema,
			lines: []string{
				`{"DocId":10,"Links":{"Forward":[20,40,60]},"Name":[{"Language":[{"Code":"en-us","Country":"us"},{"Code":"en"}],"Url":"http://A"},{"Url":"http://B"},{"Language":[{"Code":"en-gb","Country":"gb"}]}]}`,
				`{"DocId":20,"Links":{"Backward":[10,30],"Forward":[80]},"Name":[{"Url":"http://C"}]}`,
			},
			want: map[string]string{
				"DocId":                 `V[10 20]`,
				"Links.Backward":        `R[0 0 1] D[1 2 2] V[10 30]`,
				"Links.Forward":         `R[0 1 1 0] D[2 2 2 2] V[20 40 60 80]`,
				"Name.Language.Code":    `R[0 2 1 1 0] D[2 2 1 2 1] V["en-us" "en" "en-gb"]`,
				"Name.Language.Country": `R[0 2 1 1 0] D[3 2 1 3 1] V["us" "gb"]`,
				"Name.Url":              `R[0 1 1 0] D[2 2 1 2] V["http://A" "http://B" "http://C"]`,
			},
		},
		{
			name: "list of lists",
			schema: `message m {
			  optional group m (LIST) { repeated group list { optional group element (LIST) {
			    repeated group list { optional int32 element; } } } }
			}`,
			lines: []string{`{"m":[[1,2],[],null,[null,3]]}`, `{"m":[]}`, `{"m":null}`, `{}`},
			want: map[string]string{
				"m.list.element.list.element": `R[0 2 1 1 1 2 0 0 0] D[5 5 3 2 4 5 1 0 0] V[1 2 3]`,
			},
		},
		{
			name: "map of list of groups",
			schema: `message m {
			  optional group attrs (MAP) { repeated group key_value {
			    required binary key (STRING);
			    optional group value (LIST) { repeated group list { optional group element {
			      required int32 x; optional binary y (STRING); } } } } }
			}`,
			lines: []string{
				`{"attrs":{"a":[{"x":1,"y":"p"},{"x":2}],"b":[],"c":null,"d":[null]}}`,
				`{"attrs":{}}`,
				`{}`,
			},
			want: map[string]string{
				"attrs.key_value.key":                  `R[0 1 1 1 0 0] D[2 2 2 2 1 0] V["a" "b" "c" "d"]`,
				"attrs.key_value.value.list.element.x": `R[0 2 1 1 1 0 0] D[5 5 3 2 4 1 0] V[1 2]`,
				"attrs.key_value.value.list.element.y": `R[0 2 1 1 1 0 0] D[6 5 3 2 4 1 0] V["p"]`,
			},
		},
		{
			name: "optional groups in required groups",
			schema: `message m {
			  required group a { optional group b { optional int32 c; required int32 d; } required int32 e; }
			}`,
			lines: []string{`{"a":{"b":{"c":1,"d":2},"e":3}}`, `{"a":{"b":null,"e":4}}`, `{"a":{"e":6,"b":{"d":5}}}`},
			want: map[string]string{
				"a.b.c": `D[2 0 1] V[1]`,
				"a.b.d": `D[1 0 1] V[2 5]`,
				"a.e":   `V[3 4 6]`,
			},
		},
		{
			name:   "empty list versus null list",
			schema: `message m { optional group tags (LIST) { repeated group list { optional binary element (STRING); } } }`,
			lines:  []string{`{"tags":null}`, `{"tags":[]}`, `{"tags":[null]}`, `{"tags":["a","b"]}`, `{}`},
			want: map[string]string{
				"tags.list.element": `R[0 0 0 0 1 0] D[0 1 2 3 3 0] V["a" "b"]`,
			},
		},
		{
			name:   "required list of required elements",
			schema: `message m { required group tags (LIST) { repeated group list { required int64 element; } } }`,
			lines:  []string{`{"tags":[]}`, `{"tags":[7,8]}`},
			want: map[string]string{
				"tags.list.element": `R[0 0 1] D[0 1 1] V[7 8]`,
			},
		},
		{
			name: "unannotated repeated fields",
			schema: `message m {
			  repeated int32 x;
			  repeated group g { required int32 a; repeated binary b (STRING); }
			}`,
			lines: []string{`{"x":[1,2],"g":[{"a":1,"b":["p","q"]},{"a":2}]}`, `{"x":[]}`, `{"x":null,"g":[]}`},
			want: map[string]string{
				"x":   `R[0 1 0 0] D[1 1 0 0] V[1 2]`,
				"g.a": `R[0 1 0 0] D[1 1 0 0] V[1 2]`,
				"g.b": `R[0 2 1 0 0] D[2 2 1 0 0] V["p" "q"]`,
			},
		},
		{
			name:   "legacy two-level list of primitives (rule 1)",
			schema: `message m { optional group my_list (LIST) { repeated int32 element; } }`,
			lines:  []string{`{"my_list":[1,2]}`, `{"my_list":[]}`, `{"my_list":null}`},
			want: map[string]string{
				"my_list.element": `R[0 1 0 0] D[2 2 1 0] V[1 2]`,
			},
		},
		{
			name:   "legacy list of one-field groups named array (rule 4)",
			schema: `message m { optional group my_list (LIST) { repeated group array { required binary str (STRING); } } }`,
			lines:  []string{`{"my_list":[{"str":"a"},{"str":"b"}]}`},
			want: map[string]string{
				"my_list.array.str": `R[0 1] D[2 2] V["a" "b"]`,
			},
		},
		{
			name:   "legacy list of lists (rule 3)",
			schema: `message m { optional group my_list (LIST) { repeated group array (LIST) { repeated int32 array; } } }`,
			lines:  []string{`{"my_list":[[1,2],[3],[]]}`},
			want: map[string]string{
				"my_list.array.array": `R[0 2 1 1] D[3 3 3 2] V[1 2 3]`,
			},
		},
		{
			name:   "legacy three-level list with misnamed levels (rule 5)",
			schema: `message m { optional group my_list (LIST) { repeated group element { optional binary str (STRING); } } }`,
			lines:  []string{`{"my_list":["a",null]}`},
			want: map[string]string{
				"my_list.element.str": `R[0 1] D[3 2] V["a"]`,
			},
		},
		{
			name: "map with integer keys and optional values",
			schema: `message m {
			  optional group m (MAP) { repeated group key_value { required int32 key; optional double value; } }
			}`,
			lines: []string{`{"m":{"1":1.5,"-2":null,"3e1":2}}`},
			want: map[string]string{
				"m.key_value.key":   `R[0 1 1] D[2 2 2] V[1 -2 30]`,
				"m.key_value.value": `R[0 1 1] D[3 2 3] V[1.5 2]`,
			},
		},
		{
			name: "map keys of other types",
			schema: `message m {
			  required group d (MAP) { repeated group key_value { required int32 key (DATE); required boolean value; } }
			  required group u (MAP) { repeated group key_value { required fixed_len_byte_array(16) key (UUID); } }
			}`,
			lines: []string{`{"d":{"1970-01-02":true},"u":{"00112233-4455-6677-8899-aabbccddeeff":null}}`},
			want: map[string]string{
				"d.key_value.key":   `R[0] D[1] V[1]`,
				"d.key_value.value": `R[0] D[1] V[true]`,
				"u.key_value.key":   `R[0] D[1] V[00112233445566778899aabbccddeeff]`,
			},
		},
		{
			name: "legacy MAP_KEY_VALUE map",
			schema: `message m {
			  optional group my_map (MAP_KEY_VALUE) { repeated group map { required binary key (STRING); optional int32 value; } }
			}`,
			lines: []string{`{"my_map":{"a":1}}`},
			want: map[string]string{
				"my_map.map.key":   `R[0] D[2] V["a"]`,
				"my_map.map.value": `R[0] D[3] V[1]`,
			},
		},
		{
			name:   "whitespace and member order do not matter",
			schema: `message m { required int32 a; optional binary b (STRING); }`,
			lines:  []string{" { \"b\" : \"x\" ,\t\"a\" : 1 } \n", `{"a":2}`},
			want: map[string]string{
				"a": `V[1 2]`,
				"b": `D[1 0] V["x"]`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, sh := newShredder(t, tt.schema)
			for _, line := range tt.lines {
				if err := sh.Shred([]byte(line)); err != nil {
					t.Fatalf("Shred(%s): %v", line, err)
				}
			}
			if err := g.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if g.NumRows() != len(tt.lines) {
				t.Errorf("NumRows = %d, want %d", g.NumRows(), len(tt.lines))
			}
			got := dumpGroup(g)
			for path, want := range tt.want {
				if got[path] != want {
					t.Errorf("column %s:\n got %s\nwant %s", path, got[path], want)
				}
			}
			for path := range got {
				if _, ok := tt.want[path]; !ok {
					t.Errorf("column %s not checked by the test: %s", path, got[path])
				}
			}
		})
	}
}

func TestJSONShredErrors(t *testing.T) {
	const rich = `message m {
	  required int64 id;
	  optional int32 small (INTEGER(8,true));
	  optional group tags (LIST) { repeated group list { optional group element { required int32 score; } } }
	  optional group strict (LIST) { repeated group list { required binary element (STRING); } }
	  optional group attrs (MAP) { repeated group key_value { required int32 key; optional binary value (STRING); } }
	  optional group inner { required binary name (STRING); }
	  repeated int32 nums;
	}`
	tests := []struct {
		name       string
		line       string
		path       string
		wantSubstr []string
	}{
		{"out of range", `{"id":1,"small":300}`, "small", []string{"value 300 out of range for INTEGER(8,true)"}},
		{"missing required", `{"small":1}`, "id", []string{"missing required field"}},
		{"null required", `{"id":null}`, "id", []string{"null for a required field"}},
		{"list kind", `{"id":1,"tags":"x"}`, "tags", []string{"expected array for LIST field tags, got string"}},
		{"nested path", `{"id":1,"tags":[{"score":1},null,{"score":1.5}]}`, "tags[2].score", []string{"1.5", "not an integer"}},
		{"missing in list element", `{"id":1,"tags":[{}]}`, "tags[0].score", []string{"missing required field"}},
		{"null required element", `{"id":1,"strict":["a",null]}`, "strict[1]", []string{"null for a required field"}},
		{"unknown field", `{"id":1,"nope":2}`, "nope", []string{"unknown field"}},
		{"unknown nested field", `{"id":1,"inner":{"name":"a","x":1}}`, "inner.x", []string{"unknown field"}},
		{"duplicate field", `{"id":1,"id":2}`, "id", []string{"twice"}},
		{"duplicate after order", `{"id":1,"small":2,"tags":null,"small":3}`, "small", []string{"twice"}},
		{"duplicate out of order", `{"small":2,"id":1,"small":3}`, "small", []string{"twice"}},
		{"duplicate of skipped", `{"id":1,"tags":null,"small":2,"tags":[]}`, "tags", []string{"twice"}},
		{"missing required out of order", `{"inner":{},"small":1}`, "inner.name", []string{"missing required field"}},
		{"missing after order", `{"small":1,"tags":null}`, "id", []string{"missing required field"}},
		{"map key", `{"id":1,"attrs":{"1":"a","x":"b"}}`, `attrs["x"]`, []string{"map key", "INT32"}},
		{"map value", `{"id":1,"attrs":{"1":2}}`, `attrs["1"]`, []string{"expected string for STRING, got number"}},
		{"escaped map key", `{"id":1,"attrs":{"1":"a","\u0078\"y":"b"}}`, `attrs["x\"y"]`, []string{"map key", "INT32"}},
		{"value after escaped map key", `{"id":1,"attrs":{"\u0032":["\u0041"]}}`, `attrs["2"]`, []string{"expected string for STRING, got array"}},
		{"map kind", `{"id":1,"attrs":[]}`, "attrs", []string{"expected object for MAP field attrs, got array"}},
		{"group kind", `{"id":1,"inner":[1]}`, "inner", []string{"expected object for group inner, got array"}},
		{"repeated kind", `{"id":1,"nums":1}`, "nums", []string{"expected array for repeated field nums, got number"}},
		{"repeated null element", `{"id":1,"nums":[1,null]}`, "nums[1]", []string{"null element"}},
		{"not an object", `[1]`, "", []string{"expected a JSON object"}},
		{"syntax error", `{"id":1,"small":}`, "small", []string{"unexpected"}},
		{"trailing garbage", `{"id":1} x`, "", []string{"after top-level value"}},
		{"truncated", `{"id":1,"tags":[{"score":1}`, "tags", []string{"end of input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, sh := newShredder(t, rich)
			good := `{"id":7,"small":-1,"tags":[{"score":3}],"strict":["z"],"attrs":{"5":"v"},"inner":{"name":"n"},"nums":[1,2]}`
			if err := sh.Shred([]byte(good)); err != nil {
				t.Fatalf("good record: %v", err)
			}
			before := dumpGroup(g)
			err := sh.Shred([]byte(tt.line))
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("Shred(%s) = %v, want a *RecordError", tt.line, err)
			}
			if re.Path != tt.path {
				t.Errorf("Path = %q, want %q (error %v)", re.Path, tt.path, err)
			}
			for _, sub := range tt.wantSubstr {
				if !strings.Contains(err.Error(), sub) {
					t.Errorf("error %q does not contain %q", err, sub)
				}
			}
			if tt.path != "" && !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name the path %q", err, tt.path)
			}
			if re.Offset < 0 || re.Offset > len(tt.line) {
				t.Errorf("Offset = %d outside the line", re.Offset)
			}
			// Atomic: the failed record left nothing behind.
			if g.NumRows() != 1 {
				t.Errorf("NumRows = %d after a failed record, want 1", g.NumRows())
			}
			if err := g.Check(); err != nil {
				t.Errorf("Check after rollback: %v", err)
			}
			after := dumpGroup(g)
			for path, want := range before {
				if after[path] != want {
					t.Errorf("column %s changed by a failed record:\n got %s\nwant %s", path, after[path], want)
				}
			}
			// And the shredder is usable again.
			if err := sh.Shred([]byte(good)); err != nil {
				t.Fatalf("good record after a failure: %v", err)
			}
			if err := g.Check(); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func TestJSONShredErrorOffset(t *testing.T) {
	_, sh := newShredder(t, `message m { optional int32 a (INTEGER(8,false)); }`)
	line := `{"a": 256}`
	err := sh.Shred([]byte(line))
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("got %v", err)
	}
	if re.Offset != strings.Index(line, "256") {
		t.Errorf("Offset = %d, want %d", re.Offset, strings.Index(line, "256"))
	}
	var se *jsonscan.SyntaxError
	err = sh.Shred([]byte(`{"a": 1,}`))
	if !errors.As(err, &se) {
		t.Errorf("syntax error %v does not unwrap to *jsonscan.SyntaxError", err)
	}
}

func TestJSONShredIgnoreUnknownFields(t *testing.T) {
	g, sh := newShredder(t, `message m { required int32 a; optional group b { optional int32 c; } }`, IgnoreUnknownFields())
	line := `{"x":{"deep":[1,{"y":2}]},"a":1,"b":{"z":[],"c":2,"w":"s"},"v":null}`
	if err := sh.Shred([]byte(line)); err != nil {
		t.Fatal(err)
	}
	got := dumpGroup(g)
	if got["a"] != "V[1]" || got["b.c"] != "D[2] V[2]" {
		t.Errorf("got %v", got)
	}
}

func TestNewJSONShredderRejects(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"shredded variant", `message m { optional group v (VARIANT) { required binary metadata; optional binary value; optional int64 typed_value; } }`,
			"shredded variant columns not supported yet by the JSON shredder"},
		{"group map key", `message m { optional group m (MAP) { repeated group key_value { required group key { required int32 a; } optional int32 value; } } }`,
			"MAP key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schema.Parse(tt.schema)
			if err != nil {
				t.Fatalf("schema: %v", err)
			}
			_, err = NewJSONShredder(New(s))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewJSONShredder error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestJSONShredLeafConversions(t *testing.T) {
	tests := []struct {
		decl string // the type and annotation of an optional leaf "v"
		json string // the value of "v"
		want string // the V[...] of the dump, or "error: substring"
	}{
		// Integers against the physical and the logical range.
		{"int32 v (INTEGER(8,true))", `-128`, `V[-128]`},
		{"int32 v (INTEGER(8,true))", `127`, `V[127]`},
		{"int32 v (INTEGER(8,true))", `128`, `error: value 128 out of range for INTEGER(8,true)`},
		{"int32 v (INTEGER(8,true))", `-129`, `error: value -129 out of range for INTEGER(8,true)`},
		{"int32 v (INTEGER(8,false))", `255`, `V[255]`},
		{"int32 v (INTEGER(8,false))", `-1`, `error: out of range for INTEGER(8,false)`},
		{"int32 v (INTEGER(16,true))", `-32768`, `V[-32768]`},
		{"int32 v (INTEGER(16,false))", `65536`, `error: out of range`},
		{"int32 v (INTEGER(32,false))", `4294967295`, `V[-1]`},
		{"int32 v (INTEGER(32,false))", `4294967296`, `error: out of range for INTEGER(32,false)`},
		{"int64 v (INTEGER(64,false))", `18446744073709551615`, `V[-1]`},
		{"int64 v (INTEGER(64,false))", `18446744073709551616`, `error: out of range`},
		{"int64 v (UINT_64)", `9223372036854775808`, `V[-9223372036854775808]`},
		{"int32 v (UINT_8)", `255`, `V[255]`},
		{"int32 v (INT_8)", `-129`, `error: out of range for INTEGER(8,true)`},
		{"int64 v", `-9223372036854775808`, `V[-9223372036854775808]`},
		{"int64 v", `9223372036854775808`, `error: out of range for INT64`},
		{"int64 v", `-0`, `V[0]`},
		{"int32 v", `2147483647`, `V[2147483647]`},
		{"int32 v", `-2147483649`, `error: out of range for INT32`},
		{"int32 v", `1.0`, `V[1]`},
		{"int32 v", `1e2`, `V[100]`},
		{"int32 v", `1.5e1`, `V[15]`},
		{"int32 v", `12300e-2`, `V[123]`},
		{"int32 v", `1.5`, `error: not an integer`},
		{"int32 v", `1e-1`, `error: not an integer`},
		{"int32 v", `1e999999999999`, `error: out of range`},
		{"int32 v", `0e999999999999`, `V[0]`},
		{"int32 v", `"1"`, `error: expected number for INT32, got string`},
		{"int32 v", `true`, `error: got boolean`},
		// Booleans and floating point.
		{"boolean v", `true`, `V[true]`},
		{"boolean v", `false`, `V[false]`},
		{"boolean v", `"true"`, `error: expected true or false for BOOLEAN, got string`},
		{"float v", `1.5`, `V[1.5]`},
		{"float v", `1e39`, `error: out of range for FLOAT`},
		{"float v", `"NaN"`, `V[NaN]`},
		{"float v", `"-Infinity"`, `V[-Inf]`},
		{"float v", `"nan"`, `error: expected number`},
		{"double v", `1e308`, `V[1e+308]`},
		{"double v", `-1e309`, `error: out of range for DOUBLE`},
		{"double v", `1e-400`, `error: value 1e-400 is too small for DOUBLE`},
		{"double v", `-0.0000e-400`, `V[-0]`},
		{"double v", `5e-324`, `V[5e-324]`},
		{"double v", `4.9e-324`, `error: is too small for DOUBLE`},
		{"float v", `1e-50`, `error: is too small for FLOAT`},
		{"float v", `1e-45`, `V[1e-45]`},
		{"double v", `"Infinity"`, `V[+Inf]`},
		{"double v", `123456789012345678`, `V[1.2345678901234568e+17]`},
		// FLOAT16, little-endian binary16.
		{"fixed_len_byte_array(2) v (FLOAT16)", `1`, `V[003c]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `65504`, `V[ff7b]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `65519.99`, `V[ff7b]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `65520`, `error: out of range for FLOAT16`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `-1e10`, `error: out of range for FLOAT16`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `5.960464477539063e-8`, `V[0100]`},    // smallest subnormal
		{"fixed_len_byte_array(2) v (FLOAT16)", `3.0517578125e-05`, `V[0002]`},        // subnormal 2^-15
		{"fixed_len_byte_array(2) v (FLOAT16)", `6.103515625e-05`, `V[0004]`},         // smallest normal
		{"fixed_len_byte_array(2) v (FLOAT16)", `2.98023223876953125e-8`, `V[0000]`},  // 2^-25: tie, to even
		{"fixed_len_byte_array(2) v (FLOAT16)", `2.980232238769531251e-8`, `V[0100]`}, // just above the tie
		{"fixed_len_byte_array(2) v (FLOAT16)", `1e-8`, `V[0000]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `-0`, `V[0080]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `0.1`, `V[662e]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `0.333333`, `V[5535]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `1.00048828125`, `V[003c]`},      // tie, to even
		{"fixed_len_byte_array(2) v (FLOAT16)", `1.0004882812500001`, `V[013c]`}, // float64 lands on the tie, the decimal is above
		{"fixed_len_byte_array(2) v (FLOAT16)", `1.0014648437499999`, `V[013c]`}, // float64 lands on the tie 1+3·2^-11, the decimal is below
		{"fixed_len_byte_array(2) v (FLOAT16)", `"NaN"`, `V[007e]`},
		{"fixed_len_byte_array(2) v (FLOAT16)", `"-Infinity"`, `V[00fc]`},
		// Strings and binary.
		{"binary v (STRING)", `"h\u00e9llo \"q\""`, `V["héllo \"q\""]`},
		{"binary v (STRING)", `5`, `error: expected string for STRING, got number`},
		{"binary v (ENUM)", `"RED"`, `V["RED"]`},
		{"binary v (JSON)", `{ "a" : [1, 2, "x y"] }`, `V["{\"a\":[1,2,\"x y\"]}"]`},
		{"binary v (JSON)", `"{\"x\": 1}"`, `V["{\"x\": 1}"]`},
		{"binary v (JSON)", `"not json"`, `error: not JSON text`},
		{"binary v (JSON)", `12.5`, `V["12.5"]`},
		{"binary v (JSON)", `false`, `V["false"]`},
		{"binary v (JSON)", `"\"s\""`, `V["\"s\""]`},
		{"binary v", `"aGVsbG8="`, `V["hello"]`},
		{"binary v", `""`, `V[""]`},
		{"binary v", `"aGVsbG8"`, `error: invalid BYTE_ARRAY value "aGVsbG8"`},
		{"binary v", `"aGVsbG9="`, `error: base64`},
		{"binary v", `"aGVs\nbG8="`, `error: base64`},
		{"binary v", `"aGV-bG8="`, `error: base64`},
		{"binary v (BSON)", `"BQAAAAA="`, `V["\x05\x00\x00\x00\x00"]`},
		{"fixed_len_byte_array(3) v", `"AQID"`, `V[010203]`},
		{"fixed_len_byte_array(3) v", `"AQI="`, `error: 2 bytes for FIXED_LEN_BYTE_ARRAY(3)`},
		{"fixed_len_byte_array(16) v (UUID)", `"123e4567-E89B-12d3-a456-426614174000"`, `V[123e4567e89b12d3a456426614174000]`},
		{"fixed_len_byte_array(16) v (UUID)", `"123e4567e89b12d3a456426614174000"`, `error: invalid UUID`},
		{"fixed_len_byte_array(16) v (UUID)", `"123e4567-e89b-12d3-a456-42661417400g"`, `error: invalid UUID`},
		// Dates and times.
		{"int32 v (DATE)", `"1970-01-01"`, `V[0]`},
		{"int32 v (DATE)", `"1969-12-31"`, `V[-1]`},
		{"int32 v (DATE)", `"1900-03-01"`, `V[-25508]`},
		{"int32 v (DATE)", `"0001-01-01"`, `V[-719162]`},
		{"int32 v (DATE)", `"2024-02-29"`, `V[19782]`},
		{"int32 v (DATE)", `"2023-02-29"`, `error: invalid DATE value "2023-02-29"`},
		{"int32 v (DATE)", `"2023-1-05"`, `error: invalid DATE`},
		{"int32 v (DATE)", `"2023-01-05T00:00:00Z"`, `error: invalid DATE`},
		{"int32 v (DATE)", `-7`, `V[-7]`},
		{"int32 v (DATE)", `1.5`, `error: not an integer`},
		{"int32 v (TIME(MILLIS,true))", `"12:34:56.789"`, `V[45296789]`},
		{"int32 v (TIME(MILLIS,true))", `"12:34:56.7890"`, `V[45296789]`},
		{"int32 v (TIME(MILLIS,true))", `"12:34:56.7891"`, `error: more precision than TIME(MILLIS,true)`},
		{"int32 v (TIME(MILLIS,true))", `"24:00:00"`, `error: invalid TIME`},
		{"int32 v (TIME(MILLIS,true))", `"12:34"`, `error: invalid TIME`},
		{"int32 v (TIME(MILLIS,true))", `86399999`, `V[86399999]`},
		{"int32 v (TIME(MILLIS,true))", `86400000`, `error: out of range`},
		{"int32 v (TIME(MILLIS,true))", `-1`, `error: out of range`},
		{"int64 v (TIME(MICROS,false))", `"00:00:01.000001"`, `V[1000001]`},
		{"int64 v (TIME(MICROS,true))", `"12:00:00Z"`, `V[43200000000]`},
		{"int64 v (TIME(MICROS,true))", `"12:00:00.5+02:00"`, `V[36000500000]`},
		{"int64 v (TIME(MICROS,true))", `"01:00:00+02:00"`, `V[82800000000]`},
		{"int64 v (TIME(MICROS,true))", `"23:00:00-02:00"`, `V[3600000000]`},
		{"int64 v (TIME(MICROS,true))", `"12:00:00+24:00"`, `error: invalid TIME`},
		{"int64 v (TIME(MICROS,false))", `"12:00:00Z"`, `error: invalid TIME`},
		{"int64 v (TIME(NANOS,false))", `"23:59:59.999999999"`, `V[86399999999999]`},
		{"int64 v (TIME(NANOS,false))", `"23:59:59.9999999991"`, `error: more precision`},
		{"int64 v (TIME_MICROS)", `"00:00:00.5"`, `V[500000]`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02T03:04:05.678Z"`, `V[1704164645678]`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02T05:34:05.678+02:30"`, `V[1704164645678]`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-01T22:04:05.678-05:00"`, `V[1704164645678]`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02 03:04:05.678z"`, `V[1704164645678]`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02T03:04:05.6789Z"`, `error: more precision than TIMESTAMP(MILLIS,true)`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02T03:04:05"`, `error: time zone offset`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `"2024-01-02T03:04:05+2:00"`, `error: invalid TIMESTAMP`},
		{"int64 v (TIMESTAMP(MILLIS,true))", `1704164645678`, `V[1704164645678]`},
		{"int64 v (TIMESTAMP_MILLIS)", `"1969-12-31T23:59:59.999Z"`, `V[-1]`},
		{"int64 v (TIMESTAMP(MICROS,false))", `"2024-01-02T03:04:05.123456"`, `V[1704164645123456]`},
		{"int64 v (TIMESTAMP(MICROS,false))", `"2024-01-02T03:04:05.123456Z"`, `V[1704164645123456]`},
		{"int64 v (TIMESTAMP(MICROS,false))", `"2024-01-02T03:04:05.123456+02:00"`, `error: non-UTC offset`},
		{"int64 v (TIMESTAMP(NANOS,true))", `"1969-12-31T23:59:59.999999999Z"`, `V[-1]`},
		{"int64 v (TIMESTAMP(NANOS,true))", `"2262-04-11T23:47:16.854775807Z"`, `V[9223372036854775807]`},
		{"int64 v (TIMESTAMP(NANOS,true))", `"2262-04-11T23:47:16.854775808Z"`, `error: out of range`},
		{"int64 v (TIMESTAMP(NANOS,true))", `"1677-09-21T00:12:43.145224192Z"`, `V[-9223372036854775808]`},
		{"int64 v (TIMESTAMP(NANOS,true))", `"1677-09-21T00:12:43.145224191Z"`, `error: out of range`},
		{"int96 v", `"1970-01-01T00:00:00Z"`, `V[00000000000000008c3d2500]`},
		{"int96 v", `"2000-01-01T12:00:00.5+01:00"`, `V[0045bc350424000059682500]`},
		{"int96 v", `0`, `error: expected RFC 3339 string`},
		// Decimals, exactly.
		{"int32 v (DECIMAL(6,4))", `"12.3400"`, `V[123400]`},
		{"int32 v (DECIMAL(6,4))", `12.34`, `V[123400]`},
		{"int32 v (DECIMAL(6,4))", `-99.9999`, `V[-999999]`},
		{"int32 v (DECIMAL(6,4))", `"1.00001"`, `error: more than 4 fractional digits for DECIMAL(6,4)`},
		{"int32 v (DECIMAL(6,4))", `100`, `error: value 100 out of range for DECIMAL(6,4)`},
		{"int32 v (DECIMAL(6,4))", `"0.00000000"`, `V[0]`},
		{"int32 v (DECIMAL(6,4))", `"1,5"`, `error: invalid DECIMAL(6,4) value "1,5"`},
		{"int32 v (DECIMAL(6,4))", `true`, `error: expected number or numeric string`},
		{"int64 v (DECIMAL(18,2))", `1e3`, `V[100000]`},
		{"int64 v (DECIMAL(18,2))", `"1.5e-1"`, `V[15]`},
		{"int64 v (DECIMAL(18,2))", `"-9999999999999999.99"`, `V[-999999999999999999]`},
		{"int64 v (DECIMAL(18,2))", `1e16`, `error: out of range`},
		{"fixed_len_byte_array(5) v (DECIMAL(10,2))", `-1`, `V[ffffffff9c]`},
		{"fixed_len_byte_array(5) v (DECIMAL(10,2))", `"0.5"`, `V[0000000032]`},
		{"fixed_len_byte_array(16) v (DECIMAL(38,0))", `-1e37`, `V[f87a11ef2a25b926ff0bc96000000000]`},
		{"fixed_len_byte_array(16) v (DECIMAL(38,0))", `"99999999999999999999999999999999999999"`, `V[4b3b4ca85a86c47a098a223fffffffff]`},
		{"fixed_len_byte_array(16) v (DECIMAL(38,0))", `1e38`, `error: out of range`},
		{"fixed_len_byte_array(16) v (DECIMAL(38,0))", `-3`, `V[fffffffffffffffffffffffffffffffd]`},
		{"binary v (DECIMAL(30,5))", `"123456789012345678901.2345"`, `V[0a364c98227eaa6adcbaba]`},
		{"binary v (DECIMAL(30,5))", `-123456789012345678901.23450`, `V[f5c9b367dd815595234546]`},
		{"binary v (DECIMAL(30,5))", `0`, `V[00]`},
		{"binary v (DECIMAL(5,0))", `127`, `V[7f]`},
		{"binary v (DECIMAL(5,0))", `128`, `V[0080]`},
		{"binary v (DECIMAL(5,0))", `-128`, `V[80]`},
		{"binary v (DECIMAL(5,0))", `-129`, `V[ff7f]`},
		{"binary v (DECIMAL(5,0))", `0.0`, `V[00]`},
		// INTERVAL and UNKNOWN.
		{"fixed_len_byte_array(12) v (INTERVAL)", `{"months":1,"days":2,"millis":3}`, `V[010000000200000003000000]`},
		{"fixed_len_byte_array(12) v (INTERVAL)", `{"millis":4294967295}`, `V[0000000000000000ffffffff]`},
		{"fixed_len_byte_array(12) v (INTERVAL)", `{"months":-1}`, `error: out of range`},
		{"fixed_len_byte_array(12) v (INTERVAL)", `{"weeks":1}`, `error: unknown INTERVAL member`},
		{"fixed_len_byte_array(12) v (INTERVAL)", `{"days":1,"days":2}`, `error: twice`},
		{"fixed_len_byte_array(12) v (INTERVAL)", `"P1M"`, `error: expected {"months"`},
		{"int32 v (UNKNOWN)", `null`, `V[]`},
		{"int32 v (UNKNOWN)", `1`, `error: UNKNOWN field accepts only null, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.decl+" "+tt.json, func(t *testing.T) {
			g, sh := newShredder(t, "message m { optional "+tt.decl+"; }")
			line := `{"v":` + tt.json + `}`
			err := sh.Shred([]byte(line))
			if want, ok := strings.CutPrefix(tt.want, "error: "); ok {
				if err == nil {
					t.Fatalf("Shred(%s) succeeded with %s, want error %q", line, dumpColumn(g.Column(0)), want)
				}
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "v") {
					t.Errorf("error %q does not contain %q", err, want)
				}
				if g.NumRows() != 0 || g.Column(0).NumLevels() != 0 {
					t.Errorf("failed record left %d rows, %d levels", g.NumRows(), g.Column(0).NumLevels())
				}
				return
			}
			if err != nil {
				t.Fatalf("Shred(%s): %v", line, err)
			}
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
			got := dumpColumn(g.Column(0))
			got = got[strings.Index(got, "V["):]
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJSONShredVariant(t *testing.T) {
	g, sh := newShredder(t, `message m {
	  optional group payload (VARIANT(1)) { required binary metadata; required binary value; }
	  required group always (VARIANT) { required binary metadata; required binary value; }
	  optional group list (LIST) { repeated group list { optional group element (VARIANT) { required binary metadata; required binary value; } } }
	}`)
	lines := []string{
		`{"payload":{"b":[1,2.5,"x"],"a":{"c":null}},"always":1,"list":[true,null,{"k":"v"}]}`,
		`{"payload":null,"always":null}`,
		`{"always":"s","list":[]}`,
	}
	for _, line := range lines {
		if err := sh.Shred([]byte(line)); err != nil {
			t.Fatalf("Shred(%s): %v", line, err)
		}
	}
	if err := g.Check(); err != nil {
		t.Fatal(err)
	}
	decode := func(prefix string) []string {
		var meta, val *Column
		for _, c := range g.Columns() {
			switch c.Leaf.PathString() {
			case prefix + ".metadata":
				meta = c
			case prefix + ".value":
				val = c
			}
		}
		var out []string
		for i := range val.NumValues() {
			j, err := variant.AppendJSON(nil, meta.ByteArray(i), val.ByteArray(i))
			if err != nil {
				t.Fatalf("%s value %d: %v", prefix, i, err)
			}
			out = append(out, string(j))
		}
		return append(out, dumpLevels(val))
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"payload", []string{`{"a":{"c":null},"b":[1,2.5,"x"]}`, `D[1 0 0]`}},
		{"always", []string{`1`, `null`, `"s"`, ``}},
		{"list.list.element", []string{`true`, `{"k":"v"}`, `R[0 1 1 0 0] D[3 2 3 0 1]`}},
	}
	for _, tt := range tests {
		if got := decode(tt.prefix); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %q, want %q", tt.prefix, got, tt.want)
		}
	}

	// A bad value inside the variant fails the record and leaves nothing.
	before := dumpGroup(g)
	err := sh.Shred([]byte(`{"always":{"a":1,"a":2}}`))
	var re *RecordError
	if !errors.As(err, &re) || re.Path != "always" {
		t.Fatalf("duplicate key in variant: %v", err)
	}
	if after := dumpGroup(g); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("failed record changed the row group")
	}
}

// dumpLevels renders only the levels of a column.
func dumpLevels(c *Column) string {
	s := dumpColumn(c)
	return strings.TrimSpace(s[:strings.Index(s, "V[")])
}

// TestJSONLossyNumbers: with LossyNumbers, a number that underflows its
// float column is stored as IEEE 754 rounds it.
func TestJSONLossyNumbers(t *testing.T) {
	g, sh := newShredder(t, "message m { required double d; required float f; }", LossyNumbers())
	if err := sh.Append([]byte(`{"d":1e-400,"f":-1e-50}`)); err != nil {
		t.Fatal(err)
	}
	if d, f := g.Column(0).Double, g.Column(1).Float; len(d) != 1 || d[0] != 0 || len(f) != 1 || f[0] != 0 || !math.Signbit(float64(f[0])) {
		t.Errorf("stored %v and %v, want 0 and -0", d, f)
	}
}
