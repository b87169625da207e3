package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

func TestLevels(t *testing.T) {
	type leaf struct {
		path     string
		def, rep int
	}
	tests := []struct {
		name   string
		text   string
		leaves []leaf
	}{
		{"flat", `message m { required int32 a; optional int32 b; repeated int32 c; }`,
			[]leaf{{"a", 0, 0}, {"b", 1, 0}, {"c", 1, 1}}},
		{"list", `message m { optional group tags (LIST) { repeated group list { optional binary element (STRING); } } }`,
			[]leaf{{"tags.list.element", 3, 1}}},
		{"required list of required", `message m { required group l (LIST) { repeated group list { required int32 element; } } }`,
			[]leaf{{"l.list.element", 1, 1}}},
		{"list of lists", `message m {
			optional group a (LIST) { repeated group list { optional group element (LIST) {
				repeated group list { optional int32 element; } } } } }`,
			[]leaf{{"a.list.element.list.element", 5, 2}}},
		{"map", `message m { optional group m (MAP) { repeated group key_value {
			required binary key (STRING); optional int64 value; } } }`,
			[]leaf{{"m.key_value.key", 2, 1}, {"m.key_value.value", 3, 1}}},
		{"groups in lists in maps", `message m {
			required int64 id;
			optional group m (MAP) { repeated group key_value {
				required binary key (STRING);
				optional group value (LIST) { repeated group list { optional group element {
					required int32 x;
					optional group inner { repeated double y; }
				} } }
			} }
			required group s { required int32 z; optional int32 w; }
		}`,
			[]leaf{
				{"id", 0, 0},
				{"m.key_value.key", 2, 1},
				{"m.key_value.value.list.element.x", 5, 2},
				{"m.key_value.value.list.element.inner.y", 7, 3},
				{"s.z", 0, 0},
				{"s.w", 1, 0},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Leaves()) != len(tt.leaves) {
				t.Fatalf("%d leaves, want %d", len(s.Leaves()), len(tt.leaves))
			}
			for i, want := range tt.leaves {
				n := s.Leaves()[i]
				if n.PathString() != want.path || n.MaxDef != want.def || n.MaxRep != want.rep || n.Column != i {
					t.Errorf("leaf %d = %s def %d rep %d column %d, want %s def %d rep %d column %d",
						i, n.PathString(), n.MaxDef, n.MaxRep, n.Column, want.path, want.def, want.rep, i)
				}
				if s.Leaf(want.path) != n {
					t.Errorf("Leaf(%q) does not find leaf %d", want.path, i)
				}
				if got := s.Lookup(n.Path...); got != n {
					t.Errorf("Lookup(%v) = %v", n.Path, got)
				}
			}
			for _, n := range allNodes(s.Fields()) {
				if !n.IsLeaf() && n.Column != -1 {
					t.Errorf("group %s has column %d", n.PathString(), n.Column)
				}
			}
		})
	}
}

func TestLevelLimit(t *testing.T) {
	nest := func(depth int, rep Repetition) []*Node {
		n := Leaf("leaf", rep, meta.TypeInt32, Logical{})
		for range depth - 1 {
			n = Group("g", rep, Logical{}, n)
		}
		return []*Node{n}
	}
	for _, rep := range []Repetition{Optional, Repeated} {
		s, err := New("m", nest(MaxLevel, rep)...)
		if err != nil {
			t.Fatalf("%s depth %d: %v", rep, MaxLevel, err)
		}
		l := s.Leaves()[0]
		if l.MaxDef != MaxLevel || (rep == Repeated && l.MaxRep != MaxLevel) {
			t.Errorf("%s: def %d rep %d", rep, l.MaxDef, l.MaxRep)
		}
		_, err = New("m", nest(MaxLevel+1, rep)...)
		if err == nil || !strings.Contains(err.Error(), "definition level 256 exceeds 255") {
			t.Errorf("%s depth %d: err = %v", rep, MaxLevel+1, err)
		}
	}
	// Required nesting adds no level, but depth itself is bounded.
	if _, err := New("m", nest(maxDepth+1, Required)...); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("deep required nesting: err = %v", err)
	}
}

func TestNewCopies(t *testing.T) {
	elem := Leaf("element", Optional, meta.TypeByteArray, Logical{Kind: String})
	list := Group("tags", Optional, Logical{Kind: List}, Group("list", Repeated, Logical{}, elem))
	id := Leaf("id", Required, meta.TypeInt64, Logical{}).WithFieldID(1)
	s, err := New("m", id, list)
	if err != nil {
		t.Fatal(err)
	}
	// Changing the builders' nodes afterwards does not reach the schema.
	elem.Name = "changed"
	list.Fields = nil
	if s.Leaf("tags.list.element") == nil {
		t.Fatal("schema shares nodes with its input")
	}
	// The same builders can make a second schema.
	if _, err := New("n", id, id.WithFieldID(2)); err == nil {
		t.Error("duplicate names accepted")
	}
	got := s.Leaf("tags.list.element")
	if got.Parent() == nil || got.Parent().Name != "list" || got.Parent().Parent() != s.Fields()[1] || s.Fields()[1].Parent() != nil {
		t.Error("parents wrong")
	}
	if s.Fields()[1].ListElement() != got {
		t.Error("ListElement of a three-level list")
	}
	if !s.Leaf("id").HasFieldID || s.Leaf("id").FieldID != 1 {
		t.Error("field id lost")
	}
	if s.Lookup("tags", "nope") != nil || s.Lookup() != nil || s.Leaf("tags") != nil {
		t.Error("lookup of missing or group path")
	}
}

func TestNormalize(t *testing.T) {
	s, err := New("m",
		Leaf("a", Required, meta.TypeByteArray, Logical{Kind: String, BitWidth: 8, Unit: Nanos}),
		Group("v", Optional, Logical{Kind: Variant},
			Leaf("metadata", Required, meta.TypeByteArray, Logical{}),
			Leaf("value", Required, meta.TypeByteArray, Logical{})))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Fields()[0].Logical; got != (Logical{Kind: String}) {
		t.Errorf("stray parameters kept: %+v", got)
	}
	if got := s.Fields()[1].Logical; got != (Logical{Kind: Variant, SpecVersion: 1}) {
		t.Errorf("variant version not defaulted: %+v", got)
	}
}

// leafOf wraps one leaf declaration so each validation case is one line.
func leafOf(physical meta.Type, length int32, l Logical) *Node {
	n := Leaf("f", Optional, physical, l)
	n.Length = length
	return n
}

func TestValidationErrors(t *testing.T) {
	str := Logical{Kind: String}
	bin := func(name string, rep Repetition) *Node { return Leaf(name, rep, meta.TypeByteArray, Logical{}) }
	list := func(rep Repetition, fields ...*Node) *Node { return Group("l", rep, Logical{Kind: List}, fields...) }
	mp := func(fields ...*Node) *Node { return Group("m", Optional, Logical{Kind: Map}, fields...) }
	variant := func(fields ...*Node) *Node { return Group("v", Optional, Logical{Kind: Variant}, fields...) }
	tests := []struct {
		name string
		node *Node
		want string
	}{
		{"string on int32", leafOf(meta.TypeInt32, 0, str), "field f: STRING must annotate BYTE_ARRAY, not INT32"},
		{"enum on fixed", leafOf(meta.TypeFixedLenByteArray, 4, Logical{Kind: Enum}), "ENUM must annotate BYTE_ARRAY, not FIXED_LEN_BYTE_ARRAY"},
		{"json on int64", leafOf(meta.TypeInt64, 0, Logical{Kind: JSON}), "JSON must annotate BYTE_ARRAY"},
		{"bson on double", leafOf(meta.TypeDouble, 0, Logical{Kind: BSON}), "BSON must annotate BYTE_ARRAY"},
		{"uuid on fixed 8", leafOf(meta.TypeFixedLenByteArray, 8, Logical{Kind: UUID}), "UUID must annotate FIXED_LEN_BYTE_ARRAY(16), not FIXED_LEN_BYTE_ARRAY(8)"},
		{"uuid on binary", leafOf(meta.TypeByteArray, 0, Logical{Kind: UUID}), "UUID must annotate FIXED_LEN_BYTE_ARRAY(16), not BYTE_ARRAY"},
		{"float16 on fixed 4", leafOf(meta.TypeFixedLenByteArray, 4, Logical{Kind: Float16}), "FLOAT16 must annotate FIXED_LEN_BYTE_ARRAY(2)"},
		{"interval on fixed 16", leafOf(meta.TypeFixedLenByteArray, 16, Logical{Kind: Interval}), "INTERVAL must annotate FIXED_LEN_BYTE_ARRAY(12)"},
		{"int8 on int64", leafOf(meta.TypeInt64, 0, Logical{Kind: Int, BitWidth: 8, Signed: true}), "INTEGER(8,true) must annotate INT32, not INT64"},
		{"int64 on int32", leafOf(meta.TypeInt32, 0, Logical{Kind: Int, BitWidth: 64}), "INTEGER(64,false) must annotate INT64, not INT32"},
		{"int width 12", leafOf(meta.TypeInt32, 0, Logical{Kind: Int, BitWidth: 12}), "bit width must be 8, 16, 32 or 64"},
		{"decimal precision 0", leafOf(meta.TypeInt32, 0, Logical{Kind: Decimal}), "DECIMAL(0,0): precision must be at least 1"},
		{"decimal scale > precision", leafOf(meta.TypeInt32, 0, Logical{Kind: Decimal, Precision: 3, Scale: 4}), "scale must be between 0 and the precision"},
		{"decimal negative scale", leafOf(meta.TypeInt64, 0, Logical{Kind: Decimal, Precision: 3, Scale: -1}), "scale must be between 0 and the precision"},
		{"decimal int32 10", leafOf(meta.TypeInt32, 0, Logical{Kind: Decimal, Precision: 10}), "precision of INT32 is at most 9"},
		{"decimal int64 19", leafOf(meta.TypeInt64, 0, Logical{Kind: Decimal, Precision: 19}), "precision of INT64 is at most 18"},
		{"decimal fixed 16 39", leafOf(meta.TypeFixedLenByteArray, 16, Logical{Kind: Decimal, Precision: 39}), "precision too large for FIXED_LEN_BYTE_ARRAY(16)"},
		{"decimal fixed 1 3", leafOf(meta.TypeFixedLenByteArray, 1, Logical{Kind: Decimal, Precision: 3}), "precision too large for FIXED_LEN_BYTE_ARRAY(1)"},
		{"decimal on double", leafOf(meta.TypeDouble, 0, Logical{Kind: Decimal, Precision: 3}), "DECIMAL must annotate INT32, INT64, FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY, not DOUBLE"},
		{"date on int64", leafOf(meta.TypeInt64, 0, Logical{Kind: Date}), "DATE must annotate INT32, not INT64"},
		{"time millis on int64", leafOf(meta.TypeInt64, 0, Logical{Kind: Time, Unit: Millis}), "TIME(MILLIS,false) must annotate INT32, not INT64"},
		{"time micros on int32", leafOf(meta.TypeInt32, 0, Logical{Kind: Time, Unit: Micros, UTC: true}), "TIME(MICROS,true) must annotate INT64, not INT32"},
		{"time nanos on int32", leafOf(meta.TypeInt32, 0, Logical{Kind: Time, Unit: Nanos}), "must annotate INT64"},
		{"time without unit", leafOf(meta.TypeInt32, 0, Logical{Kind: Time}), "TIME needs a unit"},
		{"timestamp on int32", leafOf(meta.TypeInt32, 0, Logical{Kind: Timestamp, Unit: Millis}), "TIMESTAMP(MILLIS,false) must annotate INT64, not INT32"},
		{"timestamp on int96", leafOf(meta.TypeInt96, 0, Logical{Kind: Timestamp, Unit: Nanos}), "must annotate INT64, not INT96"},
		{"timestamp without unit", leafOf(meta.TypeInt64, 0, Logical{Kind: Timestamp}), "TIMESTAMP needs a unit"},
		{"geometry on int32", leafOf(meta.TypeInt32, 0, Logical{Kind: Geometry}), "GEOMETRY must annotate BYTE_ARRAY"},
		{"geometry algorithm", leafOf(meta.TypeByteArray, 0, Logical{Kind: Geography, Algorithm: "FLAT"}), "GEOGRAPHY edge algorithm \"FLAT\""},
		{"unknown kind", leafOf(meta.TypeInt32, 0, Logical{Kind: 99}), "unknown logical kind 99"},
		{"list on leaf", leafOf(meta.TypeInt32, 0, Logical{Kind: List}), "LIST annotates a group, not a leaf"},
		{"variant on leaf", leafOf(meta.TypeByteArray, 0, Logical{Kind: Variant}), "VARIANT annotates a group"},
		{"fixed without length", leafOf(meta.TypeFixedLenByteArray, 0, Logical{}), "FIXED_LEN_BYTE_ARRAY needs a positive length, not 0"},
		{"fixed negative length", leafOf(meta.TypeFixedLenByteArray, -3, Logical{}), "positive length, not -3"},
		{"length on int32", leafOf(meta.TypeInt32, 4, Logical{}), "length 4 given for INT32"},
		{"bad physical", leafOf(9, 0, Logical{}), "invalid physical type 9"},
		{"bad repetition", Leaf("f", 3, meta.TypeInt32, Logical{}), "field f: invalid repetition 3"},
		{"empty name", Leaf("", Required, meta.TypeInt32, Logical{}), "message: a field has an empty name"},
		{"empty group", Group("g", Optional, Logical{}), "field g: group has no fields"},
		{"string on group", Group("g", Optional, str, bin("x", Required)), "field g: STRING annotates a leaf, not a group"},
		{"duplicate names", Group("g", Optional, Logical{}, bin("x", Required), bin("x", Optional)), "field g: duplicate field name \"x\""},
		{"legacy utf8", &Node{Name: "g", HasLegacy: true, Legacy: meta.ConvertedUTF8, Fields: []*Node{bin("x", Required)}}, "legacy annotation UTF8 has a logical type"},
		{"legacy on leaf", &Node{Name: "f", Physical: meta.TypeInt32, HasLegacy: true, Legacy: meta.ConvertedMapKeyValue}, "MAP_KEY_VALUE annotates a group, not a leaf"},

		{"list two fields", list(Optional, bin("a", Repeated), bin("b", Repeated)), "field l: LIST must contain exactly one field, a repeated one"},
		{"list not repeated", list(Optional, bin("a", Optional)), "LIST must contain exactly one field, a repeated one"},
		{"list repeated", list(Repeated, Group("list", Repeated, Logical{}, bin("element", Optional))), "LIST must be required or optional"},
		{"list two level", list(Optional, bin("element", Repeated)), `LIST must contain "repeated group list" holding one field "element"`},
		{"list misnamed", list(Optional, Group("bag", Repeated, Logical{}, bin("element", Optional))), `"repeated group list"`},
		{"list repeated element", list(Optional, Group("list", Repeated, Logical{}, bin("element", Repeated))), "LIST element must be required or optional"},
		{"map no fields", mp(bin("key", Required), bin("value", Required)), "field m: MAP must contain exactly one field"},
		{"map leaf", mp(bin("key_value", Repeated)), "MAP must contain one repeated group of a key and an optional value"},
		{"map three", mp(Group("key_value", Repeated, Logical{}, bin("key", Required), bin("value", Optional), bin("x", Optional))), "one repeated group of a key"},
		{"map misnamed", mp(Group("map", Repeated, Logical{}, bin("key", Required))), `named "key_value", not "map"`},
		{"map optional key", mp(Group("key_value", Repeated, Logical{}, bin("key", Optional))), `must start with a required field "key"`},
		{"map repeated value", mp(Group("key_value", Repeated, Logical{}, bin("key", Required), bin("value", Repeated))), `second field must be a required or optional "value"`},
		{"variant no metadata", variant(bin("value", Required)), `field v: VARIANT needs a field "required binary metadata"`},
		{"variant optional metadata", variant(bin("metadata", Optional), bin("value", Required)), `VARIANT needs a field "required binary metadata"`},
		{"variant int metadata", variant(Leaf("metadata", Required, meta.TypeInt32, Logical{}), bin("value", Required)), `"required binary metadata"`},
		{"variant no value", variant(bin("metadata", Required)), `VARIANT needs a binary field "value"`},
		{"variant optional value alone", variant(bin("metadata", Required), bin("value", Optional)), `may be optional only beside a typed_value`},
		{"variant extra", variant(bin("metadata", Required), bin("value", Required), bin("x", Optional)), `unexpected field "x"`},
		{"variant required typed", variant(bin("metadata", Required), bin("value", Optional), bin("typed_value", Required)), `"typed_value" must be optional`},
		{"variant version", Group("v", Optional, Logical{Kind: Variant, SpecVersion: -1}, bin("metadata", Required), bin("value", Required)), "VARIANT specification version -1 is not positive"},
		{"file extra", Group("f", Optional, Logical{Kind: File}, bin("path", Optional)), `FILE has an unexpected field "path"`},
		{"file uri type", Group("f", Optional, Logical{Kind: File}, bin("uri", Optional)), `FILE field "uri" must be "optional binary uri (STRING)"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Nest each case so the error must carry the full path.
			_, err := New("m", Group("outer", Required, Logical{}, tt.node))
			if err == nil {
				t.Fatal("accepted")
			}
			want := tt.want
			if rest, ok := strings.CutPrefix(want, "field "); ok {
				want = "field outer." + rest
			} else if rest, ok := strings.CutPrefix(want, "message:"); ok {
				want = "field outer:" + rest
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
			if path := "field outer." + tt.node.Name + ":"; tt.node.Name != "" && !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the path %q", err, path)
			}
		})
	}
}

func TestValidShapes(t *testing.T) {
	bin := func(name string, rep Repetition) *Node { return Leaf(name, rep, meta.TypeByteArray, Logical{}) }
	tests := []struct {
		name string
		node *Node
	}{
		{"decimal fixed 16 38", leafOf(meta.TypeFixedLenByteArray, 16, Logical{Kind: Decimal, Precision: 38, Scale: 38})},
		{"decimal fixed 1 2", leafOf(meta.TypeFixedLenByteArray, 1, Logical{Kind: Decimal, Precision: 2})},
		{"decimal binary 1000", leafOf(meta.TypeByteArray, 0, Logical{Kind: Decimal, Precision: 1000, Scale: 3})},
		{"decimal int32 9", leafOf(meta.TypeInt32, 0, Logical{Kind: Decimal, Precision: 9})},
		{"decimal int64 18", leafOf(meta.TypeInt64, 0, Logical{Kind: Decimal, Precision: 18, Scale: 2})},
		{"unknown on int96", leafOf(meta.TypeInt96, 0, Logical{Kind: Unknown})},
		{"unknown on boolean", leafOf(meta.TypeBoolean, 0, Logical{Kind: Unknown})},
		{"map without value", Group("m", Required, Logical{Kind: Map}, Group("key_value", Repeated, Logical{}, bin("key", Required)))},
		{"shredded variant", Group("v", Required, Logical{Kind: Variant}, bin("metadata", Required), bin("value", Optional),
			Group("typed_value", Optional, Logical{}, Group("a", Required, Logical{}, bin("value", Optional))))},
		{"file", Group("f", Optional, Logical{Kind: File}, Leaf("uri", Optional, meta.TypeByteArray, Logical{Kind: String}), Leaf("offset", Optional, meta.TypeInt64, Logical{}))},
	}
	for _, tt := range tests {
		if _, err := New("m", tt.node); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestDecimalFits(t *testing.T) {
	// Digits a FIXED_LEN_BYTE_ARRAY(n) holds: floor(log10(2^(8n-1) - 1)).
	want := []int32{0, 2, 4, 6, 9, 11, 14, 16, 18, 21, 23, 26, 28, 31, 33, 35, 38}
	for n := int32(1); n < int32(len(want)); n++ {
		if !decimalFits(want[n], n) || decimalFits(want[n]+1, n) {
			t.Errorf("length %d: want %d digits at most", n, want[n])
		}
	}
	if !decimalFits(1<<30, 1<<30) || decimalFits(1<<30, 1<<20) {
		t.Error("large lengths")
	}
}

func TestLegacyShapes(t *testing.T) {
	s := MustParse(`message m {
  optional group r1 (LIST) { repeated int32 element; }
  optional group r2 (LIST) { repeated group element { required binary str (STRING); required int32 num; } }
  optional group r3 (LIST) { repeated group array (LIST) { repeated int32 array; } }
  optional group r4a (LIST) { repeated group array { required binary str (STRING); } }
  optional group r4b (LIST) { repeated group r4b_tuple { required binary str (STRING); } }
  optional group r5 (LIST) { repeated group element { optional binary str (STRING); } }
  optional group std (LIST) { repeated group list { optional binary element; } }
  optional group m1 (MAP) { repeated group map { required binary str (STRING); required int32 num; } }
  optional group m2 (MAP_KEY_VALUE) { repeated group map { required binary key (STRING); optional int32 value; } }
  optional group m3 (MAP) { repeated group key_value { optional binary key; } }
  optional group notalist { required int32 x; }
}`)
	tests := []struct {
		list string
		elem string // path of the element node, "" for none
	}{
		{"r1", "r1.element"},
		{"r2", "r2.element"},
		{"r3", "r3.array"},
		{"r4a", "r4a.array"},
		{"r4b", "r4b.r4b_tuple"},
		{"r5", "r5.element.str"},
		{"std", "std.list.element"},
		{"notalist", ""},
	}
	for _, tt := range tests {
		got := s.Lookup(tt.list).ListElement()
		if (got == nil) != (tt.elem == "") || (got != nil && got.PathString() != tt.elem) {
			t.Errorf("%s: ListElement = %v, want %q", tt.list, got, tt.elem)
		}
	}
	mapTests := []struct{ m, key, value string }{
		{"m1", "m1.map.str", "m1.map.num"},
		{"m2", "m2.map.key", "m2.map.value"},
		{"m3", "m3.key_value.key", ""},
		{"notalist", "", ""},
	}
	for _, tt := range mapTests {
		k, v := s.Lookup(tt.m).MapKeyValue()
		name := func(n *Node) string {
			if n == nil {
				return ""
			}
			return n.PathString()
		}
		if name(k) != tt.key || name(v) != tt.value {
			t.Errorf("%s: MapKeyValue = %q, %q; want %q, %q", tt.m, name(k), name(v), tt.key, tt.value)
		}
	}
	// The writer's New is stricter than the reader's Parse.
	if _, err := New(s.Name(), s.Fields()...); err == nil {
		t.Error("New accepted legacy shapes")
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{Logical{}.String(), ""},
		{Logical{Kind: Timestamp, Unit: Micros, UTC: true}.String(), "TIMESTAMP(MICROS,true)"},
		{Logical{Kind: Time, Unit: Nanos}.String(), "TIME(NANOS,false)"},
		{Logical{Kind: Decimal, Precision: 18, Scale: 4}.String(), "DECIMAL(18,4)"},
		{Logical{Kind: Int, BitWidth: 8, Signed: true}.String(), "INTEGER(8,true)"},
		{Logical{Kind: Variant}.String(), "VARIANT(1)"},
		{Logical{Kind: Geography, CRS: "srid:4326"}.String(), "GEOGRAPHY(srid:4326)"},
		{Logical{Kind: Geometry, CRS: "a b"}.String(), `GEOMETRY("a b")`},
		{Logical{Kind: UUID}.String(), "UUID"},
		{Kind(200).String(), "Kind(200)"},
		{None.String(), "NONE"},
		{TimeUnit(0).String(), "TimeUnit(0)"},
		{Repeated.String(), "repeated"},
		{Repetition(7).String(), "Repetition(7)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func ExampleParse() {
	s := MustParse(`message event {
  required int64 id;
  optional group tags (LIST) {
    repeated group list {
      optional binary element (UTF8);
    }
  }
}`)
	for _, l := range s.Leaves() {
		fmt.Printf("%d %s def=%d rep=%d %q\n", l.Column, l.PathString(), l.MaxDef, l.MaxRep, l.Logical)
	}
	// Output:
	// 0 id def=0 rep=0 ""
	// 1 tags.list.element def=3 rep=1 "STRING"
}
