package schema

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// TestConvertedForward checks Logical.Converted row by row against the
// forward-compatibility tables of LogicalTypes.md and the LogicalType
// comments of parquet.thrift.
func TestConvertedForward(t *testing.T) {
	none := meta.ConvertedType(-1)
	tests := []struct {
		l    Logical
		want meta.ConvertedType
	}{
		{Logical{Kind: String}, meta.ConvertedUTF8},
		{Logical{Kind: Map}, meta.ConvertedMap},
		{Logical{Kind: List}, meta.ConvertedList},
		{Logical{Kind: Enum}, meta.ConvertedEnum},
		{Logical{Kind: Decimal, Precision: 9, Scale: 2}, meta.ConvertedDecimal},
		{Logical{Kind: Date}, meta.ConvertedDate},
		{Logical{Kind: Time, Unit: Millis, UTC: true}, meta.ConvertedTimeMillis},
		{Logical{Kind: Time, Unit: Micros, UTC: true}, meta.ConvertedTimeMicros},
		{Logical{Kind: Time, Unit: Nanos, UTC: true}, none},
		{Logical{Kind: Time, Unit: Millis}, meta.ConvertedTimeMillis},
		{Logical{Kind: Time, Unit: Micros}, meta.ConvertedTimeMicros},
		{Logical{Kind: Time, Unit: Nanos}, none},
		{Logical{Kind: Timestamp, Unit: Millis, UTC: true}, meta.ConvertedTimestampMillis},
		{Logical{Kind: Timestamp, Unit: Micros, UTC: true}, meta.ConvertedTimestampMicros},
		{Logical{Kind: Timestamp, Unit: Nanos, UTC: true}, none},
		{Logical{Kind: Timestamp, Unit: Millis}, meta.ConvertedTimestampMillis},
		{Logical{Kind: Timestamp, Unit: Micros}, meta.ConvertedTimestampMicros},
		{Logical{Kind: Timestamp, Unit: Nanos}, none},
		{Logical{Kind: Int, BitWidth: 8, Signed: true}, meta.ConvertedInt8},
		{Logical{Kind: Int, BitWidth: 16, Signed: true}, meta.ConvertedInt16},
		{Logical{Kind: Int, BitWidth: 32, Signed: true}, meta.ConvertedInt32},
		{Logical{Kind: Int, BitWidth: 64, Signed: true}, meta.ConvertedInt64},
		{Logical{Kind: Int, BitWidth: 8}, meta.ConvertedUint8},
		{Logical{Kind: Int, BitWidth: 16}, meta.ConvertedUint16},
		{Logical{Kind: Int, BitWidth: 32}, meta.ConvertedUint32},
		{Logical{Kind: Int, BitWidth: 64}, meta.ConvertedUint64},
		{Logical{Kind: Unknown}, none},
		{Logical{Kind: JSON}, meta.ConvertedJSON},
		{Logical{Kind: BSON}, meta.ConvertedBSON},
		{Logical{Kind: UUID}, none},
		{Logical{Kind: Float16}, none},
		{Logical{Kind: Variant, SpecVersion: 1}, none},
		{Logical{Kind: Geometry}, none},
		{Logical{Kind: Geography}, none},
		{Logical{Kind: File}, none},
		{Logical{Kind: Interval}, meta.ConvertedInterval},
		{Logical{}, none},
	}
	for _, tt := range tests {
		got, ok := tt.l.Converted()
		if !ok {
			got = none
		}
		if got != tt.want {
			t.Errorf("%v: converted %v, want %v", tt.l, got, tt.want)
		}
	}
}

// TestConvertedBackward checks fromConverted against the backward-
// compatibility tables: a ConvertedType alone implies these logical types.
func TestConvertedBackward(t *testing.T) {
	tests := []struct {
		c    meta.ConvertedType
		want Logical
	}{
		{meta.ConvertedUTF8, Logical{Kind: String}},
		{meta.ConvertedMap, Logical{Kind: Map}},
		{meta.ConvertedList, Logical{Kind: List}},
		{meta.ConvertedEnum, Logical{Kind: Enum}},
		{meta.ConvertedDecimal, Logical{Kind: Decimal, Precision: 7, Scale: 3}},
		{meta.ConvertedDate, Logical{Kind: Date}},
		{meta.ConvertedTimeMillis, Logical{Kind: Time, Unit: Millis, UTC: true}},
		{meta.ConvertedTimeMicros, Logical{Kind: Time, Unit: Micros, UTC: true}},
		{meta.ConvertedTimestampMillis, Logical{Kind: Timestamp, Unit: Millis, UTC: true}},
		{meta.ConvertedTimestampMicros, Logical{Kind: Timestamp, Unit: Micros, UTC: true}},
		{meta.ConvertedInt8, Logical{Kind: Int, BitWidth: 8, Signed: true}},
		{meta.ConvertedInt16, Logical{Kind: Int, BitWidth: 16, Signed: true}},
		{meta.ConvertedInt32, Logical{Kind: Int, BitWidth: 32, Signed: true}},
		{meta.ConvertedInt64, Logical{Kind: Int, BitWidth: 64, Signed: true}},
		{meta.ConvertedUint8, Logical{Kind: Int, BitWidth: 8}},
		{meta.ConvertedUint16, Logical{Kind: Int, BitWidth: 16}},
		{meta.ConvertedUint32, Logical{Kind: Int, BitWidth: 32}},
		{meta.ConvertedUint64, Logical{Kind: Int, BitWidth: 64}},
		{meta.ConvertedJSON, Logical{Kind: JSON}},
		{meta.ConvertedBSON, Logical{Kind: BSON}},
		{meta.ConvertedInterval, Logical{Kind: Interval}},
	}
	for _, tt := range tests {
		got, ok := fromConverted(tt.c, 7, 3)
		if !ok || got != tt.want {
			t.Errorf("%v: %+v, %v; want %+v", tt.c, got, ok, tt.want)
		}
	}
	if _, ok := fromConverted(meta.ConvertedMapKeyValue, 0, 0); ok {
		t.Error("MAP_KEY_VALUE has no logical type")
	}
}

func TestElementsRoundTrip(t *testing.T) {
	s := MustParse(everyType)
	elems := s.Elements()
	if len(elems) != 1+len(allNodes(s.Fields())) {
		t.Fatalf("%d elements", len(elems))
	}
	back, err := FromElements(elems)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Fatalf("round trip differs:\n%s\nvs\n%s", s, back)
	}
	// Through the thrift encoding too.
	fmd := meta.FileMetaData{Schema: elems}
	var decoded meta.FileMetaData
	if err := meta.Unmarshal(meta.Marshal(&fmd), &decoded); err != nil {
		t.Fatal(err)
	}
	if back, err = FromElements(decoded.Schema); err != nil || !back.Equal(s) {
		t.Fatalf("thrift round trip: %v", err)
	}

	byName := map[string]meta.SchemaElement{}
	for _, e := range elems[1:] {
		byName[e.Name] = e
	}
	root := elems[0]
	if root.Name != "every_type" || root.RepetitionType != nil || root.NumChildren == nil || int(*root.NumChildren) != len(s.Fields()) {
		t.Errorf("root element %+v", root)
	}
	conv := func(name string) string {
		if c := byName[name].ConvertedType; c != nil {
			return c.String()
		}
		return "-"
	}
	for name, want := range map[string]string{
		"s": "UTF8", "s_legacy": "UTF8", "u": "-", "i8": "INT_8", "u64": "UINT_64", "d64": "DECIMAL",
		"half": "-", "t_us": "TIME_MICROS", "t_ns": "-", "ts_us": "TIMESTAMP_MICROS", "ts_ns": "-",
		"iv": "INTERVAL", "nothing": "-", "geom": "-", "tags": "LIST", "attrs": "MAP", "old_map": "MAP_KEY_VALUE",
		"payload": "-", "attachment": "-", "raw": "-",
	} {
		if got := conv(name); got != want {
			t.Errorf("%s: converted type %s, want %s", name, got, want)
		}
	}
	if e := byName["d64"]; e.Precision == nil || *e.Precision != 18 || e.Scale == nil || *e.Scale != 4 ||
		e.LogicalType == nil || e.LogicalType.Decimal == nil || *e.LogicalType.Decimal != (meta.DecimalType{Precision: 18, Scale: 4}) {
		t.Errorf("decimal element %+v", e)
	}
	if e := byName["iv"]; e.LogicalType != nil {
		t.Errorf("INTERVAL has a LogicalType: %+v", e.LogicalType)
	}
	if e := byName["ts_ns"]; e.LogicalType == nil || e.LogicalType.Timestamp == nil || e.LogicalType.Timestamp.IsAdjustedToUTC || e.LogicalType.Timestamp.Unit.Nanos == nil {
		t.Errorf("timestamp element %+v", e.LogicalType)
	}
	if e := byName["fixed3"]; e.TypeLength == nil || *e.TypeLength != 3 || *e.Type != meta.TypeFixedLenByteArray || e.NumChildren != nil {
		t.Errorf("fixed element %+v", e)
	}
	if e := byName["tags"]; e.Type != nil || e.NumChildren == nil || *e.NumChildren != 1 || e.FieldID == nil || *e.FieldID != 3 {
		t.Errorf("group element %+v", e)
	}
	if e := byName["geog"].LogicalType.Geography; *e.CRS != "srid:4326" || *e.Algorithm != meta.EdgeKarney {
		t.Errorf("geography element %+v", e)
	}
}

// readFooter returns the schema elements of a Parquet file's footer.
func readFooter(t testing.TB, path string) []meta.SchemaElement {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	var fmd meta.FileMetaData
	if err := meta.Unmarshal(b[len(b)-8-n:len(b)-8], &fmd); err != nil {
		t.Fatal(path, err)
	}
	return fmd.Schema
}

func TestFromElementsFiles(t *testing.T) {
	tests := []struct {
		file   string
		leaves []string // path:def:rep of each leaf
		check  func(t *testing.T, s *Schema)
	}{
		{"nested_lists.snappy.parquet", []string{"a.list.element.list.element.list.element:7:3", "b:0:0"}, nil},
		{"repeated_primitive_no_list.parquet", []string{"Int32_list:1:1", "String_list:1:1",
			"group_of_lists.Int32_list_in_group:1:1", "group_of_lists.String_list_in_group:1:1"}, nil},
		{"incorrect_map_schema.parquet", []string{"my_map.key_value.key:3:1", "my_map.key_value.value:3:1"}, func(t *testing.T, s *Schema) {
			kv := s.Lookup("my_map", "key_value")
			if !kv.HasLegacy || kv.Legacy != meta.ConvertedMapKeyValue {
				t.Error("MAP_KEY_VALUE lost")
			}
			if k, _ := s.Lookup("my_map").MapKeyValue(); k == nil || k.Repetition != Optional {
				t.Error("optional key not found")
			}
		}},
		{"unknown-logical-type.parquet", []string{"column with known type:1:0", "column with unknown type:1:0"}, func(t *testing.T, s *Schema) {
			if s.Leaves()[1].Logical.Kind != None {
				t.Errorf("unknown logical type read as %v", s.Leaves()[1].Logical)
			}
		}},
		{"nonnullable.impala.parquet", nil, func(t *testing.T, s *Schema) {
			if l := s.Leaf("nested_Struct.G.map.value.h.i.list.element"); l == nil || l.MaxDef != 2 || l.MaxRep != 2 {
				t.Errorf("deep leaf %+v", l)
			}
		}},
		{"nullable.impala.parquet", nil, func(t *testing.T, s *Schema) {
			if l := s.Leaf("nested_struct.g.map.value.H.i.list.element"); l == nil || l.MaxDef != 8 || l.MaxRep != 2 {
				t.Errorf("deep leaf %+v", l)
			}
		}},
		{"fixed_length_decimal_legacy.parquet", []string{"value:1:0"}, func(t *testing.T, s *Schema) {
			if l := s.Leaves()[0]; l.Logical != (Logical{Kind: Decimal, Precision: 13, Scale: 2}) || l.Length != 6 {
				t.Errorf("decimal %+v", l)
			}
		}},
		{"float16_zeros_and_nans.parquet", []string{"x:1:0"}, func(t *testing.T, s *Schema) {
			if s.Leaves()[0].Logical.Kind != Float16 {
				t.Error("FLOAT16 lost")
			}
		}},
		{"byte_array_decimal.parquet", []string{"value:1:0"}, func(t *testing.T, s *Schema) {
			if l := s.Leaves()[0]; l.Logical != (Logical{Kind: Decimal, Precision: 4, Scale: 2}) || l.FieldID != 6 {
				t.Errorf("decimal %+v", l)
			}
		}},
		{"alltypes_plain.parquet", []string{"id:1:0", "bool_col:1:0", "tinyint_col:1:0", "smallint_col:1:0", "int_col:1:0",
			"bigint_col:1:0", "float_col:1:0", "double_col:1:0", "date_string_col:1:0", "string_col:1:0", "timestamp_col:1:0"}, nil},
		{"list_columns.parquet", []string{"int64_list.list.item:3:1", "utf8_list.list.item:3:1"}, nil},
		{"int32_decimal.parquet", []string{"value:1:0"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			elems := readFooter(t, filepath.Join("testdata", tt.file))
			s, err := FromElements(elems)
			if err != nil {
				t.Fatal(err)
			}
			if tt.leaves != nil {
				var got []string
				for _, l := range s.Leaves() {
					got = append(got, l.PathString()+":"+strconv.Itoa(l.MaxDef)+":"+strconv.Itoa(l.MaxRep))
				}
				if !reflect.DeepEqual(got, tt.leaves) {
					t.Errorf("leaves %q, want %q", got, tt.leaves)
				}
			}
			if tt.check != nil {
				tt.check(t, s)
			}
			// The file's schema survives printing, parsing and flattening.
			again, err := Parse(s.String())
			if err != nil || !again.Equal(s) {
				t.Fatalf("text round trip: %v\n%s", err, s)
			}
			back, err := FromElements(s.Elements())
			if err != nil || !back.Equal(s) {
				t.Fatalf("elements round trip: %v", err)
			}
		})
	}
}

func TestFromElementsHandBuilt(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	rep := func(r meta.FieldRepetitionType) *meta.FieldRepetitionType { return &r }
	typ := func(v meta.Type) *meta.Type { return &v }
	conv := func(c meta.ConvertedType) *meta.ConvertedType { return &c }

	// A two-level legacy list and an old decimal without a LogicalType, as
	// parquet-avro and Hive wrote them.
	elems := []meta.SchemaElement{
		{Name: "hive", NumChildren: i32(2)},
		{Name: "l", RepetitionType: rep(meta.Optional), NumChildren: i32(1), ConvertedType: conv(meta.ConvertedList)},
		{Name: "array", RepetitionType: rep(meta.Repeated), Type: typ(meta.TypeInt32), NumChildren: i32(0)},
		{Name: "d", RepetitionType: rep(meta.Required), Type: typ(meta.TypeFixedLenByteArray), TypeLength: i32(5),
			ConvertedType: conv(meta.ConvertedDecimal), Precision: i32(10), Scale: i32(3)},
	}
	s, err := FromElements(elems)
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Leaf("l.array"); l == nil || l.MaxDef != 2 || l.MaxRep != 1 || s.Lookup("l").ListElement() != l {
		t.Errorf("two-level list leaf %+v", l)
	}
	if l := s.Leaf("d"); l.Logical != (Logical{Kind: Decimal, Precision: 10, Scale: 3}) {
		t.Errorf("decimal %+v", l.Logical)
	}
	// A LogicalType wins over a ConvertedType.
	elems[3].LogicalType = &meta.LogicalType{Decimal: &meta.DecimalType{Precision: 11, Scale: 1}}
	if s, err = FromElements(elems); err != nil || s.Leaf("d").Logical.Precision != 11 {
		t.Errorf("logical type did not win: %v", err)
	}

	malformed := []struct {
		name  string
		elems []meta.SchemaElement
		want  string
	}{
		{"empty", nil, "no elements"},
		{"leaf root", []meta.SchemaElement{{Name: "r", Type: typ(meta.TypeInt32)}}, "root element \"r\" is a leaf"},
		{"too many children", []meta.SchemaElement{{Name: "r", NumChildren: i32(3)}, {Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeInt32)}}, "root: 3 children, but 1 elements remain"},
		{"huge children", []meta.SchemaElement{{Name: "r", NumChildren: i32(1 << 30)}}, "1073741824 children, but 0 elements remain"},
		{"children run out", []meta.SchemaElement{{Name: "r", NumChildren: i32(2)}, {Name: "g", RepetitionType: rep(meta.Required), NumChildren: i32(1)},
			{Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeInt32)}}, "root: elements end after 1 of 2 children"},
		{"negative children", []meta.SchemaElement{{Name: "r", NumChildren: i32(-1)}}, "-1 children"},
		{"trailing", []meta.SchemaElement{{Name: "r", NumChildren: i32(0)}, {Name: "a"}}, "1 elements after the end"},
		{"no repetition", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", Type: typ(meta.TypeInt32)}}, "field a: no repetition type"},
		{"bad repetition", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", RepetitionType: rep(5), Type: typ(meta.TypeInt32)}}, "field a: invalid repetition type 5"},
		{"bad type", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", RepetitionType: rep(meta.Required), Type: typ(42)}}, "field a: invalid physical type 42"},
		{"fixed no length", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeFixedLenByteArray)}}, "field a: FIXED_LEN_BYTE_ARRAY without a type length"},
		{"bad converted", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeInt32), ConvertedType: conv(77)}}, "field a: unknown converted type 77"},
		{"decimal without precision", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeInt32), ConvertedType: conv(meta.ConvertedDecimal)}}, "field a: DECIMAL(0,0): precision must be at least 1"},
		{"empty group", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "g", RepetitionType: rep(meta.Optional)}}, "field g: group has no fields"},
		{"utf8 on int", []meta.SchemaElement{{Name: "r", NumChildren: i32(1)}, {Name: "g", RepetitionType: rep(meta.Optional), NumChildren: i32(1)},
			{Name: "a", RepetitionType: rep(meta.Required), Type: typ(meta.TypeInt32), ConvertedType: conv(meta.ConvertedUTF8)}}, "field g.a: STRING must annotate BYTE_ARRAY, not INT32"},
	}
	for _, tt := range malformed {
		_, err := FromElements(tt.elems)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func FuzzFromElements(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.parquet")
	for _, file := range files {
		fmd := meta.FileMetaData{Schema: readFooter(f, file)}
		f.Add(meta.Marshal(&fmd))
	}
	f.Add(meta.Marshal(&meta.FileMetaData{Schema: MustParse(everyType).Elements()}))
	f.Fuzz(func(t *testing.T, footer []byte) {
		var fmd meta.FileMetaData
		if _, err := fmd.Decode(footer); err != nil {
			return
		}
		s, err := FromElements(fmd.Schema)
		if err != nil {
			return
		}
		back, err := FromElements(s.Elements())
		if err != nil || !back.Equal(s) {
			t.Fatalf("elements round trip: %v\n%s", err, s)
		}
		again, err := Parse(s.String())
		if err != nil || !again.Equal(s) {
			t.Fatalf("text round trip: %v\n%s", err, s)
		}
	})
}
