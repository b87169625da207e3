package merge

import (
	"testing"

	"github.com/pqsink/pqsink/schema"
)

func TestFirstDifference(t *testing.T) {
	const base = `message m { required int64 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; }`
	tests := []struct {
		name, other, want string
	}{
		{"same", base, ""},
		{"another message name", `message n { required int64 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; }`, ""},
		{"physical type", `message m { required int32 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; }`,
			"column a: INT64, the other schema's is INT32"},
		{"repetition of a group", `message m { required int64 a; required group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; }`,
			"column g.list.element: repetition of group g optional, the other schema's is required"},
		{"logical type", `message m { required int64 a; optional group g (LIST) { repeated group list { optional binary element; } } optional int32 c = 7; }`,
			"column g.list.element: logical type STRING, the other schema's is none"},
		{"field id", `message m { required int64 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 8; }`,
			"column c: field id 7, the other schema's is 8"},
		{"a column more", `message m { required int64 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; optional int32 d; }`,
			"column d is not in the first schema"},
		{"a column less", `message m { required int64 a; optional group g (LIST) { repeated group list { optional binary element (STRING); } } }`,
			"column c is missing"},
		{"another name", `message m { required int64 b; optional group g (LIST) { repeated group list { optional binary element (STRING); } } optional int32 c = 7; }`,
			"column a: the other schema has b in its place"},
	}
	a := schema.MustParse(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := firstDifference(a, schema.MustParse(tt.other))
			if got != tt.want {
				t.Errorf("firstDifference = %q, want %q", got, tt.want)
			}
		})
	}
}
