package jsonschema

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// stripIDs removes the " = N" field ids from a message-syntax schema.
func stripIDs(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if i := strings.LastIndex(line, " = "); i >= 0 {
			end := strings.IndexAny(line[i:], ";{")
			rest := line[i+end:]
			if strings.HasPrefix(rest, "{") {
				rest = " " + rest
			}
			line = line[:i] + rest
		}
		b.WriteString(strings.TrimSpace(line) + "\n")
	}
	return b.String()
}

func compileFile(t *testing.T, path string, opts ...Option) *Schema {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Compile(text, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMappingEveryConstruct(t *testing.T) {
	s := compileFile(t, "testdata/event.schema.json")
	ps, err := s.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/event.parquet.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := stripIDs(ps.String()); got != stripIDs(string(want)) {
		os.WriteFile("testdata/event.parquet.txt.got", []byte(ps.String()), 0o644)
		t.Fatalf("mapping differs from testdata/event.parquet.txt (see .got):\n%s", got)
	}
	if s.Wrapped() {
		t.Error("an object root is wrapped")
	}
}

func TestMapping(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"draft-07 without $schema", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"integer"},"b":{"type":"array","items":{"type":"number"}}}}`,
			"message schema {\nrequired int64 a;\noptional group b (LIST) {\nrepeated group list {\nrequired double element;\n}\n}\n}\n"},
		{"draft-07 items tuple", `{"type":"object","additionalProperties":false,"properties":{"t":{"type":"array","items":[{"type":"string"}]}}}`,
			"message schema {\noptional group t (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
		{"2020-12 prefixItems", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"properties":{"t":{"type":"array","prefixItems":[{"type":"string"}]}}}`,
			"message schema {\noptional group t (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
		{"unevaluatedProperties false closes", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","unevaluatedProperties":false,"properties":{"a":{"type":"boolean"}}}`,
			"message schema {\noptional boolean a;\n}\n"},
		{"open object root is one VARIANT", `{"type":"object","properties":{"a":{"type":"boolean"}}}`,
			"message schema {\nrequired group value (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
		{"scalar root", `{"type":"string"}`, "message schema {\nrequired binary value (STRING);\n}\n"},
		{"nullable root", `{"type":["integer","null"]}`, "message schema {\noptional int64 value;\n}\n"},
		{"required but nullable is optional", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":["string","null"]}}}`,
			"message schema {\noptional binary a (STRING);\n}\n"},
		{"integer and number", `{"type":["integer","number"]}`, "message schema {\nrequired double value;\n}\n"},
		{"multipleOf not a power of ten", `{"type":"number","multipleOf":0.5}`, "message schema {\nrequired double value;\n}\n"},
		{"multipleOf 1", `{"type":"number","multipleOf":1}`, "message schema {\nrequired fixed_len_byte_array(16) value (DECIMAL(38,0));\n}\n"},
		{"mixed enum", `{"enum":["a",1]}`, "message schema {\nrequired group value (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
		{"enum with null", `{"enum":["a",null]}`, "message schema {\noptional binary value (ENUM);\n}\n"},
		{"null", `{"type":"null"}`, "message schema {\noptional int32 value (UNKNOWN);\n}\n"},
		{"allOf of one", `{"allOf":[{"type":"boolean"}]}`, "message schema {\nrequired boolean value;\n}\n"},
		{"allOf of two", `{"allOf":[{"type":"boolean"},{"type":"boolean"}]}`, "message schema {\nrequired group value (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
		{"array without items", `{"type":"array"}`, "message schema {\nrequired group value (LIST) {\nrepeated group list {\noptional group element (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n}\n}\n"},
		{"recursive root", `{"type":"object","additionalProperties":false,"properties":{"next":{"$ref":"#"}}}`,
			"message schema {\noptional group next (VARIANT(1)) {\nrequired binary metadata;\nrequired binary value;\n}\n}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile([]byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			ps, err := s.Parquet()
			if err != nil {
				t.Fatal(err)
			}
			if got := stripIDs(ps.String()); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct{ name, schema, want string }{
		{"false property", `{"type":"object","additionalProperties":false,"properties":{"gone":false}}`, "#/properties/gone: the schema false admits no value"},
		{"not JSON", `{"type":`, "json schema"},
		{"unknown reference", `{"$ref":"other.json"}`, "other.json"},
		{"bad type", `{"type":7}`, "json schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile([]byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	root := `{"$id":"https://example.com/schemas/order.json","type":"object","additionalProperties":false,
		"properties":{"ship":{"$ref":"address.json"},"bill":{"$ref":"https://example.com/schemas/address.json#"}}}`
	addr := `{"type":"object","additionalProperties":false,"required":["city"],"properties":{"zip":{"type":"string"},"city":{"type":"string"}}}`
	s, err := Compile([]byte(root), Reference("address.json", []byte(addr)))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.Parquet()
	if err != nil {
		t.Fatal(err)
	}
	want := "message schema {\noptional group ship {\noptional binary zip (STRING);\nrequired binary city (STRING);\n}\noptional group bill {\noptional binary zip (STRING);\nrequired binary city (STRING);\n}\n}\n"
	if got := stripIDs(ps.String()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := s.Validate([]byte(`{"ship":{"city":"Oslo"}}`)); err != nil {
		t.Error(err)
	}
	if err := s.Validate([]byte(`{"ship":{"zip":"1"}}`)); !errors.Is(err, ErrInvalid) {
		t.Errorf("missing city: %v", err)
	}
}

func TestLocalFiles(t *testing.T) {
	text := []byte(`{"type":"object","additionalProperties":false,"properties":{"u":{"$ref":"user.schema.json"}}}`)
	if _, err := Compile(text, Base("testdata/root.json")); err == nil {
		t.Fatal("a file reference loaded without LocalFiles")
	}
	s, err := Compile(text, Base("testdata/root.json"), LocalFiles())
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := s.Parquet(); ps.Lookup("u", "name") == nil {
		t.Errorf("u.name missing:\n%s", ps)
	}
	// The loaded file, named as $ref names it, compiles the schema again
	// under any base.
	loaded := s.Loaded()
	if len(loaded) != 1 || loaded[0].Name != "user.schema.json" {
		t.Fatalf("loaded %+v", loaded)
	}
	again, err := Compile(text, Reference(loaded[0].Name, []byte(loaded[0].Schema)))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := again.Fields(), s.Fields(); len(a) != len(b) || a[0].Fields[0].Name != "name" {
		t.Errorf("compiled again: %v", a)
	}
}

// TestFieldIDsStable: a field keeps its id when fields are added before it
// and around it.
func TestKeepsNull(t *testing.T) {
	s, err := Compile([]byte(`{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
		"a":{"type":["string","null"]},"b":{"type":"string"},"c":{"type":["string","null"]},
		"l":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["x"],"properties":{"x":{"anyOf":[{"type":"null"},{"type":"integer"}]}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"a": true, "b": false, "c": false, "l.list.element.x": true, "l": false} {
		if got := s.KeepsNull(path); got != want {
			t.Errorf("KeepsNull(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestFieldIDsStable(t *testing.T) {
	a, err := Compile([]byte(`{"type":"object","additionalProperties":false,"properties":{"x":{"type":"integer"},"o":{"type":"object","additionalProperties":false,"properties":{"y":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compile([]byte(`{"type":"object","additionalProperties":false,"properties":{"new":{"type":"integer"},"x":{"type":"integer"},"o":{"type":"object","additionalProperties":false,"properties":{"z":{"type":"string"},"y":{"type":"string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := a.Parquet()
	pb, _ := b.Parquet()
	for _, path := range [][]string{{"x"}, {"o"}, {"o", "y"}} {
		na, nb := pa.Lookup(path...), pb.Lookup(path...)
		if !na.HasFieldID || na.FieldID != nb.FieldID {
			t.Errorf("%v: ids %d and %d", path, na.FieldID, nb.FieldID)
		}
	}
	seen := map[int32]bool{}
	for _, l := range pb.Leaves() {
		if seen[l.FieldID] {
			t.Errorf("id %d twice", l.FieldID)
		}
		seen[l.FieldID] = true
	}
}

func TestValidate(t *testing.T) {
	s := compileFile(t, "testdata/event.schema.json")
	good := `{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":3}`
	if err := s.Validate([]byte(good)); err != nil {
		t.Fatalf("valid value: %v", err)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"missing required", `{"at":"2026-11-27T08:00:00Z","kind":"click","count":3}`, "at /: missing property 'id'"},
		{"wrong type", `{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":"3"}`, "at /count"},
		{"bad format", `{"id":"nope","at":"2026-11-27T08:00:00Z","kind":"click","count":3}`, "at /id"},
		{"not in enum", `{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"buy","count":3}`, "at /kind"},
		{"undeclared member", `{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":3,"zzz":1}`, "zzz"},
		{"price not a multiple", `{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":3,"price":1.005}`, "at /price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Validate([]byte(tc.value))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestValidateNotJSON(t *testing.T) {
	s := compileFile(t, "testdata/event.schema.json")
	for _, v := range []string{`{"id":`, `{} {}`, ``, "\xff"} {
		if err := s.Validate([]byte(v)); !errors.Is(err, ErrNotJSON) || errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v, want ErrNotJSON", v, err)
		}
	}
}

func FuzzValidate(f *testing.F) {
	text, err := os.ReadFile("testdata/event.schema.json")
	if err != nil {
		f.Fatal(err)
	}
	s, err := Compile(text)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"id":"7b1c9a52-8a3e-4e0c-9a51-2f4d1f7e6a10","at":"2026-11-27T08:00:00Z","kind":"click","count":3}`))
	f.Add([]byte(`{"tree":{"children":[{"children":[]}]},"labels":{"l_a":"x"}}`))
	f.Add([]byte(`[1,2,{"a":null}]`))
	f.Fuzz(func(t *testing.T, value []byte) {
		if err := s.Validate(value); err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNotJSON) {
			t.Fatalf("an error that is not ErrInvalid: %v", err)
		}
	})
}
