package rowgroup

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

func variantGroup(t *testing.T, shape variant.Shape) (*RowGroup, *VariantShredder) {
	t.Helper()
	node, err := VariantNode("v", schema.Required, shape)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New("m", node)
	if err != nil {
		t.Fatalf("%v\n", err)
	}
	g := New(s)
	sh, err := NewVariantShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, sh
}

// levelDump renders a column as rep/def/value triples, values as the
// Variant JSON of value columns and as text for typed ones.
func levelDump(c *Column, metadata [][]byte) []string {
	var out []string
	vi := 0
	row := -1
	for i := 0; i < c.NumLevels(); i++ {
		rep, def := 0, 0
		if c.MaxRep() > 0 {
			rep = int(c.Rep[i])
		}
		if rep == 0 {
			row++
		}
		if c.MaxDef() > 0 {
			def = int(c.Def[i])
		}
		s := fmt.Sprintf("r%d d%d", rep, def)
		if def == int(c.MaxDef()) {
			switch {
			case c.Leaf.Name == "value":
				js, err := variant.AppendJSON(nil, metadata[row], c.ByteArray(vi))
				if err != nil {
					js = []byte(err.Error())
				}
				s += " " + string(js)
			case c.Offsets != nil:
				s += " " + string(c.ByteArray(vi))
			case c.Int64 != nil:
				s += fmt.Sprint(" ", c.Int64[vi])
			case c.Int32 != nil:
				s += fmt.Sprint(" ", c.Int32[vi])
			}
			vi++
		}
		out = append(out, s)
	}
	return out
}

// TestVariantShredderSpecTables shreds the examples of VariantShredding.md
// and checks every column's levels and values against the spec's tables.
func TestVariantShredderSpecTables(t *testing.T) {
	tests := []struct {
		name  string
		shape string
		rows  []string
		want  map[string][]string // column path below v → dump
	}{
		{
			name:  "tags",
			shape: "$[*] string",
			rows:  []string{`["comedy","drama"]`, `["horror",null]`, `[]`, `null`, `"not a list"`},
			want: map[string][]string{
				"value": {"r0 d0", "r0 d0", "r0 d0", "r0 d1 null", `r0 d1 "not a list"`},
				"typed_value.list.element.value": {
					"r0 d2", "r1 d2", // comedy, drama
					"r0 d2", "r1 d3 null", // horror, null
					"r0 d1",           // empty list
					"r0 d0", "r0 d0"}, // not arrays
				"typed_value.list.element.typed_value": {
					"r0 d3 comedy", "r1 d3 drama",
					"r0 d3 horror", "r1 d2",
					"r0 d1",
					"r0 d0", "r0 d0"},
			},
		},
		{
			name:  "event",
			shape: "$.event_type string\n$.event_ts int64",
			rows: []string{
				`{"event_type":"noop","event_ts":1729794114937}`,
				`{"event_type":"login","event_ts":1729794146402,"email":"user@example.com"}`,
				`{"error_msg":"malformed: ..."}`,
				`"malformed: not an object"`,
				`{"event_ts":1729794240241,"click":"_button"}`,
				`{"event_type":null,"event_ts":1729794954163}`,
				`{"event_type":"noop","event_ts":"2024-10-24"}`,
				`{}`,
				`null`,
			},
			want: map[string][]string{
				"value": {"r0 d0", `r0 d1 {"email":"user@example.com"}`, `r0 d1 {"error_msg":"malformed: ..."}`,
					`r0 d1 "malformed: not an object"`, `r0 d1 {"click":"_button"}`, "r0 d0", "r0 d0", "r0 d0", "r0 d1 null"},
				"typed_value.event_type.value": {"r0 d1", "r0 d1", "r0 d1", "r0 d0", "r0 d1", "r0 d2 null", "r0 d1", "r0 d1", "r0 d0"},
				"typed_value.event_type.typed_value": {"r0 d2 noop", "r0 d2 login", "r0 d1", "r0 d0", "r0 d1", "r0 d1",
					"r0 d2 noop", "r0 d1", "r0 d0"},
				"typed_value.event_ts.value": {"r0 d1", "r0 d1", "r0 d1", "r0 d0", "r0 d1", "r0 d1", `r0 d2 "2024-10-24"`, "r0 d1", "r0 d0"},
				"typed_value.event_ts.typed_value": {"r0 d2 1729794114937", "r0 d2 1729794146402", "r0 d1", "r0 d0",
					"r0 d2 1729794240241", "r0 d2 1729794954163", "r0 d1", "r0 d1", "r0 d0"},
			},
		},
	}
	for _, tt := range tests {
		shape, err := variant.ParseShapePaths(tt.shape)
		if err != nil {
			t.Fatal(err)
		}
		g, sh := variantGroup(t, shape)
		var metas [][]byte
		for _, r := range tt.rows {
			if err := sh.ShredJSON([]byte(r)); err != nil {
				t.Fatalf("%s: %s: %v", tt.name, r, err)
			}
			mc := g.Column(0)
			metas = append(metas, bytes.Clone(mc.ByteArray(mc.NumValues()-1)))
		}
		if err := g.Check(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		for _, c := range g.Columns()[1:] {
			path := strings.TrimPrefix(c.Leaf.PathString(), "v.")
			want, ok := tt.want[path]
			if !ok {
				t.Errorf("%s: unexpected column %s", tt.name, path)
				continue
			}
			if got := levelDump(c, metas); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: column %s:\n got %q\nwant %q", tt.name, path, got, want)
			}
		}
	}
}

func TestVariantShapeSchemaRoundTrip(t *testing.T) {
	shapes := []string{
		"$ int64",
		"$.a boolean\n$.b int8\n$.c int16\n$.d int32\n$.e float\n$.f double\n$.g decimal(9,2)\n$.h decimal(18,3)\n$.i decimal(38,10)\n" +
			"$.j date\n$.k time_ntz\n$.l timestamp\n$.m timestamp_ntz\n$.n timestamp_nanos\n$.o timestamp_ntz_nanos\n$.p binary\n$.q string\n$.r uuid",
		"$.a[*][*].b[*] string\n$.a[*][*].c.d int64",
	}
	for _, text := range shapes {
		shape, err := variant.ParseShapePaths(text)
		if err != nil {
			t.Fatal(err)
		}
		node, err := VariantNode("v", schema.Optional, shape)
		if err != nil {
			t.Fatal(err)
		}
		s, err := schema.New("m", node)
		if err != nil {
			t.Fatalf("%s: %v", shape.String(), err)
		}
		// Through the message syntax and back, as --shred FILE reads it.
		s2, err := schema.Parse(s.String())
		if err != nil {
			t.Fatalf("%s: reparse: %v\n%s", shape.String(), err, s)
		}
		back, err := VariantShape(s2.Fields()[0])
		if err != nil {
			t.Fatalf("%s: %v", shape.String(), err)
		}
		if back.String() != shape.String() {
			t.Errorf("shape %s came back as %s", shape.String(), back.String())
		}
	}
}

func TestVariantShapeRejects(t *testing.T) {
	bad := []string{
		`message m { required group v (VARIANT) { required binary metadata; optional binary value; optional group typed_value { optional group a { optional binary value; } } } }`,
		`message m { required group v (VARIANT) { required binary metadata; optional binary value; optional int32 typed_value (TIME(MILLIS,true)); } }`,
		`message m { required group v (VARIANT) { required binary metadata; optional binary value; optional group typed_value (LIST) { repeated group list { optional group element { optional binary value; } } } } }`,
		`message m { required group v (VARIANT) { required binary metadata; optional binary value; optional group typed_value { required group a { optional binary value; optional binary x; } } } }`,
		`message m { required group v (VARIANT) { required binary metadata; optional binary value; optional int64 typed_value (INTEGER(64,false)); } }`,
	}
	for _, text := range bad {
		s, err := schema.Parse(text)
		if err != nil {
			continue // rejected earlier, fine too
		}
		if shape, err := VariantShape(s.Fields()[0]); err == nil {
			t.Errorf("VariantShape accepted %s as %s", text, shape.String())
		}
	}
}

// A user schema may leave out value columns; a record that needs one
// fails and leaves the row group as it was.
func TestVariantShredderNoValueColumn(t *testing.T) {
	s, err := schema.Parse(`message m { required group v (VARIANT) {
		required binary metadata;
		optional binary value;
		optional group typed_value { required group a { optional int64 typed_value; } }
	} }`)
	if err != nil {
		t.Fatal(err)
	}
	g := New(s)
	sh, err := NewVariantShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.ShredJSON([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := sh.ShredJSON([]byte(`{"a":"x"}`)); err == nil || !strings.Contains(err.Error(), "$.a") {
		t.Fatalf("error %v, want one naming $.a", err)
	}
	if err := sh.ShredJSON([]byte(`{"a":`)); err == nil {
		t.Fatal("bad JSON accepted")
	}
	if g.NumRows() != 1 || g.Check() != nil {
		t.Fatalf("rows %d, check %v after failed records", g.NumRows(), g.Check())
	}
}

func TestVariantShredderAllocs(t *testing.T) {
	shape, err := variant.ParseShapePaths("$.id int64\n$.tags[*] string\n$.u.n decimal(9,2)")
	if err != nil {
		t.Fatal(err)
	}
	g, sh := variantGroup(t, shape)
	line := []byte(`{"id":7,"tags":["a","b",3],"u":{"n":1.5,"x":[1,{}]},"other":"z"}`)
	for range 1000 {
		if err := sh.ShredJSON(line); err != nil {
			t.Fatal(err)
		}
	}
	g.Reset()
	allocs := testing.AllocsPerRun(1000, func() {
		if err := sh.ShredJSON(line); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations per record", allocs)
	}
}
