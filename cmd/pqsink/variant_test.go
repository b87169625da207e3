package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
)

const variantInput = `{"user":{"id":1,"name":"ada"},"tags":["a","b"],"score":1.5}
{"user":{"id":2,"name":"bob"},"tags":[],"score":2}
{"user":{"id":3},"extra":{"deep":[1,{"x":null}]},"score":"n/a"}
[1,2,3]
"just a string"
{"user":{"id":10,"name":"u10"},"tags":["t"],"score":10.5}
{"user":{"id":11,"name":"u11"},"tags":["t"],"score":11.5}
{"user":{"id":12,"name":"u12"},"tags":["t"],"score":12.5}
{"user":{"id":13,"name":"u13"},"tags":["t"],"score":13.5}
{"user":{"id":14,"name":"u14"},"tags":["t"],"score":14.5}
{"user":{"id":15,"name":"u15"},"tags":["t"],"score":15.5}
{"user":{"id":16,"name":"u16"},"tags":["t"],"score":16.5}
{"user":{"id":17,"name":"u17"},"tags":["t"],"score":17.5}
{"user":{"id":18,"name":"u18"},"tags":["t"],"score":18.5}
{"user":{"id":19,"name":"u19"},"tags":["t"],"score":19.5}
{"user":{"id":20,"name":"u20"},"tags":["t"],"score":20.5}
{"user":{"id":21,"name":"u21"},"tags":["t"],"score":21.5}
{"user":{"id":22,"name":"u22"},"tags":["t"],"score":22.5}
{"user":{"id":23,"name":"u23"},"tags":["t"],"score":23.5}
{"user":{"id":24,"name":"u24"},"tags":["t"],"score":24.5}
{"user":{"id":25,"name":"u25"},"tags":["t"],"score":25.5}
{"user":{"id":26,"name":"u26"},"tags":["t"],"score":26.5}
{"user":{"id":27,"name":"u27"},"tags":["t"],"score":27.5}
{"user":{"id":28,"name":"u28"},"tags":["t"],"score":28.5}
{"user":{"id":29,"name":"u29"},"tags":["t"],"score":29.5}
`

func TestConvertVariant(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", variantInput)
	paths := writeFile(t, dir, "shred.paths", "$.user.id int64\n$.score decimal(9,1)\n")
	message := writeFile(t, dir, "shred.schema", `// shred user.id only
message m {
  required group payload (VARIANT(1)) {
    required binary metadata;
    optional binary value;
    optional group typed_value {
      required group user {
        optional binary value;
        optional group typed_value { required group id { optional binary value; optional int64 typed_value; } }
      }
    }
  }
}`)
	for _, tc := range []struct {
		name    string
		args    []string
		column  string
		schema  []string // in `inspect schema`
		without []string
	}{
		{"auto", nil, "payload", []string{"(VARIANT(1))", "typed_value", "user"}, nil},
		{"none", []string{"--shred", "none"}, "payload", []string{"(VARIANT(1))"}, []string{"typed_value"}},
		{"paths", []string{"--shred", paths, "--column", "doc"}, "doc", []string{"doc (VARIANT(1))", "typed_value", "score"}, []string{"tags"}},
		{"message", []string{"--shred", message}, "payload", []string{"(VARIANT(1))", "typed_value", "optional int64 typed_value"}, []string{"score"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".parquet")
			args := append([]string{"convert", "--variant", "--quiet"}, tc.args...)
			if code, _, stderr := pqsink(t, "", append(args, in, out)...); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, stderr)
			}
			_, sch, _ := pqsink(t, "", "inspect", "schema", out)
			for _, s := range tc.schema {
				if !strings.Contains(sch, s) {
					t.Errorf("schema lacks %q:\n%s", s, sch)
				}
			}
			for _, s := range tc.without {
				if strings.Contains(sch, s) {
					t.Errorf("schema has %q:\n%s", s, sch)
				}
			}
			code, rows, stderr := pqsink(t, "", "inspect", "rows", "--json", out)
			if code != 0 {
				t.Fatalf("inspect rows: %s", stderr)
			}
			got := strings.Split(strings.TrimSpace(rows), "\n")
			want := strings.Split(strings.TrimSpace(variantInput), "\n")
			if len(got) != len(want) {
				t.Fatalf("%d rows, want %d", len(got), len(want))
			}
			for i := range want {
				var row map[string]json.RawMessage
				if err := json.Unmarshal([]byte(got[i]), &row); err != nil {
					t.Fatal(err)
				}
				// Numbers compare by value, as doubles: a shredded decimal
				// column gives 2 back as 2.0.
				if ok, err := testutil.JSONEqualFunc(row[tc.column], []byte(want[i]), testutil.DoubleNumbers); err != nil || !ok {
					t.Errorf("row %d: %s, want %s", i, got[i], want[i])
				}
			}
		})
	}
	if code, _, stderr := pqsink(t, "", "convert", "--variant", "--shred", filepath.Join(dir, "missing"), in, filepath.Join(dir, "x.parquet")); code != 2 || !strings.Contains(stderr, "--shred") {
		t.Errorf("missing --shred file: exit %d, %q", code, stderr)
	}
	bad := writeFile(t, dir, "bad.jsonl", "{\"a\":1}\n{\"a\":\n")
	if code, _, stderr := pqsink(t, "", "convert", "--variant", bad, filepath.Join(dir, "bad.parquet")); code != 1 || !strings.Contains(stderr, "line 2") {
		t.Errorf("bad line: exit %d, %q", code, stderr)
	}
}

// TestConvertSchemaVariantField: a --schema message may declare VARIANT
// fields among typed ones; each takes any JSON value.
func TestConvertSchemaVariantField(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", `message m {
  required int64 id;
  required group attrs (VARIANT) { required binary metadata; required binary value; }
  optional group extra (VARIANT(1)) { required binary metadata; required binary value; }
}`)
	input := `{"id":1,"attrs":{"color":"red","sizes":[1,2.5]},"extra":[true,null]}
{"id":2,"attrs":"text","extra":null}
{"id":3,"attrs":null}
`
	in := writeFile(t, dir, "in.jsonl", input)
	out := filepath.Join(dir, "out.parquet")
	if code, _, stderr := pqsink(t, "", "convert", "--quiet", "--schema", schemaFile, in, out); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, stderr)
	}
	code, rows, stderr := pqsink(t, "", "inspect", "rows", "--json", out)
	if code != 0 {
		t.Fatalf("inspect rows: %s", stderr)
	}
	want := []string{
		`{"id":1,"attrs":{"color":"red","sizes":[1,2.5]},"extra":[true,null]}`,
		`{"id":2,"attrs":"text","extra":null}`,
		`{"id":3,"attrs":null,"extra":null}`,
	}
	got := strings.Split(strings.TrimSpace(rows), "\n")
	if len(got) != len(want) {
		t.Fatalf("rows:\n%s", rows)
	}
	for i := range want {
		ok, err := testutil.JSONEqualFunc([]byte(got[i]), []byte(want[i]), testutil.DoubleNumbers)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("row %d: %s, want %s", i, got[i], want[i])
		}
	}
}
