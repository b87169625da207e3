package jsonschema

import (
	"errors"
	"strings"
	"testing"
)

// TestProperty: a property's schema, mapped and validated as a root of
// its own; a nullable object is its object; a property that is not an
// object of declared members, or that the root lacks, is an error.
func TestProperty(t *testing.T) {
	const envelope = `{"type":"object","properties":{
"after":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/Row"}]},
"plain":{"$ref":"#/definitions/Row"},
"open":{"type":"object","properties":{"a":{"type":"integer"}}},
"n":{"type":"integer"}},
"definitions":{"Row":{"type":"object","additionalProperties":false,
"properties":{"id":{"type":"integer"},"name":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}}},
"required":["id","name"]}}}`
	s, err := Compile([]byte(envelope))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Wrapped() {
		t.Fatal("an open root maps to a group")
	}
	for _, name := range []string{"after", "plain"} {
		row, err := s.Property(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, err := row.Parquet()
		if err != nil {
			t.Fatal(err)
		}
		want := "message schema {\nrequired int64 id;\noptional binary name (STRING);\noptional group tags (LIST) {\nrepeated group list {\nrequired binary element (STRING);\n}\n}\n}\n"
		if got := stripIDs(p.String()); got != want {
			t.Errorf("%s: schema\n%s\nwant\n%s", name, got, want)
		}
		if row.Wrapped() || !row.KeepsNull("name") || row.KeepsNull(ValueField) {
			t.Errorf("%s: wrapped %v, keeps null name %v, value %v", name, row.Wrapped(), row.KeepsNull("name"), row.KeepsNull(ValueField))
		}
		if err := row.Validate([]byte(`{"id":1,"name":null,"tags":[]}`)); err != nil {
			t.Errorf("%s: a row: %v", name, err)
		}
		if err := row.Validate([]byte(`{"id":1,"name":"a","x":1}`)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: a row with an undeclared member: %v", name, err)
		}
		if string(row.Text()) != envelope {
			t.Errorf("%s: text is not the root's", name)
		}
	}
	for name, want := range map[string]string{
		"open": "property open is not an object schema whose members are all declared",
		"n":    "property n is not an object schema",
		"gone": "no property gone",
	} {
		if _, err := s.Property(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
}
