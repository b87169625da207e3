package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertJSONSchema: --input-format json --json-schema F converts JSON
// Lines validated against F, whose relative $ref loads the file beside
// it; lines F refuses follow --errors; the flag refuses the other
// schemas' flags.
func TestConvertJSONSchema(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "user.json", `{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string"}}}`)
	schemaFile := writeFile(t, dir, "event.schema.json", `{"type":"object","additionalProperties":false,"required":["id"],
		"properties":{"id":{"type":"integer"},"at":{"type":"string","format":"date-time"},"user":{"$ref":"user.json"}}}`)
	in := writeFile(t, dir, "in.jsonl", `{"id":1,"at":"2024-05-06T07:08:09.123Z","user":{"name":"a"}}
{"id":2,"user":{}}
{"id":3}
`)
	out := filepath.Join(dir, "out.parquet")
	code, _, stderr := pqsink(t, "", "convert", "--quiet", "--input-format", "json", "--json-schema", schemaFile, "--errors", "skip", in, out)
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `line 2: json schema: invalid value: at /user: missing property 'name'`) || !strings.Contains(stderr, "skipped 1 of 3 lines") {
		t.Errorf("stderr does not report line 2:\n%s", stderr)
	}
	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", out)
	if code != 0 {
		t.Fatalf("inspect rows: exit %d: %s", code, stderr)
	}
	want := `{"id":1,"at":"2024-05-06T07:08:09.123000Z","user":{"name":"a"}}
{"id":3,"at":null,"user":null}`
	if got := strings.TrimSpace(stdout); got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
	for _, args := range [][]string{
		{"--json-schema", schemaFile, "--schema", schemaFile},
		{"--json-schema", schemaFile, "--variant"},
		{"--json-schema", schemaFile, "--input-format", "avro"},
		{"--json-schema", filepath.Join(dir, "missing.json")},
	} {
		if code, _, _ := pqsink(t, "", append(append([]string{"convert", "--quiet"}, args...), in, out)...); code == 0 {
			t.Errorf("convert %v: exit 0", args)
		}
	}
}

// TestConvertJSONSchemaWrapped: a schema whose root is no closed object
// (here an open one) is one column, value, that holds each line whole.
func TestConvertJSONSchemaWrapped(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "open.schema.json", `{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`)
	in := writeFile(t, dir, "in.jsonl", `{"id":1,"more":{"b":[1,2]}}
{"id":"x"}
{"id":2}
`)
	out := filepath.Join(dir, "out.parquet")
	code, _, stderr := pqsink(t, "", "convert", "--quiet", "--json-schema", schemaFile, "--errors", "skip", in, out)
	if code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "line 2: json schema: invalid value: at /id") {
		t.Errorf("stderr does not report line 2:\n%s", stderr)
	}
	code, stdout, stderr := pqsink(t, "", "inspect", "rows", "--json", out)
	if code != 0 {
		t.Fatalf("inspect rows: exit %d: %s", code, stderr)
	}
	want := `{"value":{"id":1,"more":{"b":[1,2]}}}
{"value":{"id":2}}`
	if got := strings.TrimSpace(stdout); got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
}
