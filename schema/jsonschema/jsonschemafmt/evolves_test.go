package jsonschemafmt

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// TestEvolves: a schema evolves another when it only adds optional fields
// or makes required fields optional; anything else names the field.
func TestEvolves(t *testing.T) {
	base := `message m { required int64 id; optional group u { optional binary name (STRING); } }`
	for _, tc := range []struct{ name, next, want string }{
		{"same", base, ""},
		{"optional added", `message m { required int64 id; optional binary c (STRING); optional group u { optional binary name (STRING); optional int64 age; } }`, ""},
		{"required relaxed", `message m { optional int64 id; optional group u { optional binary name (STRING); } }`, ""},
		{"removed", `message m { required int64 id; }`, "field u removed"},
		{"nested removed", `message m { required int64 id; optional group u { optional int64 age; } }`, "field u.name removed"},
		{"type changed", `message m { required binary id (STRING); optional group u { optional binary name (STRING); } }`, "field id changed from INT64 to BYTE_ARRAY (STRING)"},
		{"logical changed", `message m { required int64 id (TIMESTAMP(MICROS,true)); optional group u { optional binary name (STRING); } }`, "field id changed from INT64 to INT64 (TIMESTAMP(MICROS,true))"},
		{"became required", `message m { required int64 id; required group u { optional binary name (STRING); } }`, "field u changed from optional to required"},
		{"required added", `message m { required int64 id; required int64 n; optional group u { optional binary name (STRING); } }`, "field n added as required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, err := schema.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			next, err := schema.Parse(tc.next)
			if err != nil {
				t.Fatal(err)
			}
			err = evolves(old, next)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("evolves: %v, want %q", err, tc.want)
			}
		})
	}
}
