package schema

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// everyType declares every physical type and every annotation, logical and
// legacy, with field ids, nesting and the legacy shapes.
const everyType = `
// Every physical type and annotation.
message every_type {
  required boolean flag = 1;
  optional int32 i32;
  optional int64 i64;
  optional int96 legacy_ts;
  optional float f32;
  optional double f64;
  optional binary raw;
  optional fixed_len_byte_array(3) fixed3;
  required binary s (STRING);
  required binary s_legacy (UTF8) = 2;
  optional binary e (ENUM);
  optional fixed_len_byte_array(16) u (UUID);
  required int32 i8 (INTEGER(8,true));
  required int32 u8 (INTEGER(8,false));
  required int32 i16 (INTEGER(16,true));
  required int32 u16 (INTEGER(16,false));
  required int32 i32a (INTEGER(32,true));
  required int32 u32 (INTEGER(32,false));
  required int64 i64a (INTEGER(64,true));
  required int64 u64 (INTEGER(64,false));
  required int32 l_i8 (INT_8);
  required int32 l_i16 (INT_16);
  required int32 l_i32 (INT_32);
  required int64 l_i64 (INT_64);
  required int32 l_u8 (UINT_8);
  required int32 l_u16 (UINT_16);
  required int32 l_u32 (UINT_32);
  required int64 l_u64 (UINT_64);
  optional int32 d32 (DECIMAL(9,2));
  optional int64 d64 (DECIMAL(18,4));
  optional fixed_len_byte_array(16) d128 (DECIMAL(38,10));
  optional binary dbig (DECIMAL(100,50));
  optional fixed_len_byte_array(2) half (FLOAT16);
  optional int32 day (DATE);
  optional int32 t_ms (TIME(MILLIS,true));
  optional int64 t_us (TIME(MICROS,false));
  optional int64 t_ns (TIME(NANOS,true));
  optional int32 l_t_ms (TIME_MILLIS);
  optional int64 l_t_us (TIME_MICROS);
  optional int64 ts_ms (TIMESTAMP(MILLIS,true));
  optional int64 ts_us (TIMESTAMP(MICROS,false));
  optional int64 ts_ns (TIMESTAMP(NANOS,false));
  optional int64 l_ts_ms (TIMESTAMP_MILLIS);
  optional int64 l_ts_us (TIMESTAMP_MICROS);
  optional fixed_len_byte_array(12) iv (INTERVAL);
  optional binary j (JSON);
  optional binary b (BSON);
  optional int32 nothing (UNKNOWN);
  optional binary geom (GEOMETRY);
  optional binary geom_crs (GEOMETRY(OGC:CRS84));
  optional binary geog (GEOGRAPHY("srid:4326",KARNEY));
  optional group tags (LIST) = 3 {
    repeated group list {
      optional binary element (STRING);
    }
  }
  optional group attrs (MAP) {
    repeated group key_value {
      required binary key (STRING);
      optional group value {
        optional int64 score;
        repeated group hist (LIST) {
          repeated int32 hist;
        }
      }
    }
  }
  optional group old_map (MAP_KEY_VALUE) {
    repeated group map {
      required binary key (STRING);
      optional int32 value;
    }
  }
  optional group set (MAP) {
    repeated group key_value (MAP_KEY_VALUE) {
      required int32 key;
    }
  }
  optional group payload (VARIANT(1)) {
    required binary metadata;
    required binary value;
  }
  required group shredded (VARIANT) {
    required binary metadata;
    optional binary value;
    optional int64 typed_value;
  }
  optional group attachment (FILE) {
    optional binary uri (STRING);
    optional int64 size;
    optional binary inline;
  }
  repeated group "odd name with spaces" {
    required binary "" (STRING);
  }
}
`

func TestParseRoundTrip(t *testing.T) {
	s, err := Parse(everyType)
	if err != nil {
		t.Fatal(err)
	}
	text := s.String()
	again, err := Parse(text)
	if err != nil {
		t.Fatalf("reparse: %v\n%s", err, text)
	}
	if !again.Equal(s) {
		t.Fatalf("reparsed schema differs:\n%s\nvs\n%s", text, again)
	}
	if again.String() != text {
		t.Fatalf("String not stable:\n%s\nvs\n%s", text, again)
	}
	// Every kind, and every legacy annotation, appears in the schema.
	seen := map[Kind]bool{}
	for _, n := range allNodes(s.Fields()) {
		seen[n.Logical.Kind] = true
	}
	for k := None; k <= File; k++ {
		if !seen[k] {
			t.Errorf("kind %s not covered", k)
		}
	}
}

func allNodes(fields []*Node) []*Node {
	var out []*Node
	for _, f := range fields {
		out = append(out, f)
		out = append(out, allNodes(f.Fields)...)
	}
	return out
}

func TestParseAnnotations(t *testing.T) {
	tests := []struct {
		decl   string
		want   Logical
		legacy bool
	}{
		{"binary x (STRING)", Logical{Kind: String}, false},
		{"binary x (utf8)", Logical{Kind: String}, false},
		{"binary x (ENUM)", Logical{Kind: Enum}, false},
		{"binary x (Json)", Logical{Kind: JSON}, false},
		{"binary x (BSON)", Logical{Kind: BSON}, false},
		{"int32 x (INT_8)", Logical{Kind: Int, BitWidth: 8, Signed: true}, false},
		{"int32 x (UINT_16)", Logical{Kind: Int, BitWidth: 16}, false},
		{"int64 x (UINT_64)", Logical{Kind: Int, BitWidth: 64}, false},
		{"int32 x (INTEGER(32, TRUE))", Logical{Kind: Int, BitWidth: 32, Signed: true}, false},
		{"int32 x (INT(8,false))", Logical{Kind: Int, BitWidth: 8}, false},
		{"int32 x (DECIMAL(5,2))", Logical{Kind: Decimal, Precision: 5, Scale: 2}, false},
		{"int32 x (DECIMAL(5))", Logical{Kind: Decimal, Precision: 5}, false},
		{"int32 x (DATE)", Logical{Kind: Date}, false},
		{"int32 x (TIME_MILLIS)", Logical{Kind: Time, Unit: Millis, UTC: true}, false},
		{"int64 x (TIME_MICROS)", Logical{Kind: Time, Unit: Micros, UTC: true}, false},
		{"int64 x (time(nanos,false))", Logical{Kind: Time, Unit: Nanos}, false},
		{"int64 x (TIMESTAMP_MILLIS)", Logical{Kind: Timestamp, Unit: Millis, UTC: true}, false},
		{"int64 x (TIMESTAMP_MICROS)", Logical{Kind: Timestamp, Unit: Micros, UTC: true}, false},
		{"int64 x (TIMESTAMP(NANOS,true))", Logical{Kind: Timestamp, Unit: Nanos, UTC: true}, false},
		{"fixed_len_byte_array(12) x (INTERVAL)", Logical{Kind: Interval}, false},
		{"fixed_len_byte_array(16) x (uuid)", Logical{Kind: UUID}, false},
		{"fixed_len_byte_array(2) x (FLOAT16)", Logical{Kind: Float16}, false},
		{"double x (UNKNOWN)", Logical{Kind: Unknown}, false},
		{"binary x (GEOGRAPHY(OGC:CRS84,vincenty))", Logical{Kind: Geography, CRS: "OGC:CRS84", Algorithm: "VINCENTY"}, false},
		{"group x (LIST) { repeated int32 y; }", Logical{Kind: List}, false},
		{"group x (MAP) { repeated group kv { required int32 k; } }", Logical{Kind: Map}, false},
		{"group x (VARIANT) { required binary metadata; required binary value; }", Logical{Kind: Variant, SpecVersion: 1}, false},
		{"group x (MAP_KEY_VALUE) { repeated group kv { required int32 k; } }", Logical{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.decl, func(t *testing.T) {
			decl := tt.decl
			if !strings.HasSuffix(decl, "}") {
				decl += ";"
			}
			s, err := Parse("message m { optional " + decl + " }")
			if err != nil {
				t.Fatal(err)
			}
			n := s.Fields()[0]
			if n.Logical != tt.want {
				t.Errorf("Logical = %+v, want %+v", n.Logical, tt.want)
			}
			if n.HasLegacy != tt.legacy || (tt.legacy && n.Legacy != meta.ConvertedMapKeyValue) {
				t.Errorf("legacy = %v %v, want %v", n.HasLegacy, n.Legacy, tt.legacy)
			}
		})
	}
}

func TestParseSyntax(t *testing.T) {
	s, err := Parse(`
MESSAGE Root { /* a block
   comment */
  REQUIRED INT64 Id = -4; // trailing comment
  Optional Group g = 9 {
    repeated BINARY "a \"quoted\" name" (utf8);
  };
}`)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "Root" {
		t.Errorf("name %q", s.Name())
	}
	id := s.Leaf("Id")
	if id == nil || id.Physical != meta.TypeInt64 || !id.HasFieldID || id.FieldID != -4 {
		t.Errorf("Id = %+v", id)
	}
	g := s.Lookup("g")
	if g == nil || g.IsLeaf() || g.FieldID != 9 || g.Repetition != Optional {
		t.Fatalf("g = %+v", g)
	}
	q := g.Fields[0]
	if q.Name != `a "quoted" name` || q.Repetition != Repeated || q.Logical.Kind != String {
		t.Errorf("quoted field = %+v", q)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		text string
		want []string // substrings of the error
	}{
		{"", []string{"1:1", "expected 'message', found end of input"}},
		{"schema m {}", []string{"1:1", "expected 'message'"}},
		{"message {}", []string{"1:9", "expected message name"}},
		{"message m", []string{"1:10", "expected '{' after the message name"}},
		{"message m {\n  required int32 a\n}", []string{"3:1", "expected ';' after field \"a\", found '}'"}},
		{"message m {\n  needed int32 a;\n}", []string{"2:3", "expected 'required', 'optional', 'repeated' or '}'"}},
		{"message m { required int31 a; }", []string{"1:22", "expected a physical type or 'group', found 'int31'"}},
		{"message m { required fixed_len_byte_array a; }", []string{"1:43", "expected '(' after fixed_len_byte_array"}},
		{"message m { required fixed_len_byte_array(x) a; }", []string{"1:43", "byte length"}},
		{"message m { required int32 a (FOO); }", []string{"1:31", "unknown annotation 'FOO'"}},
		{"message m { required int32 a (INTEGER(8)); }", []string{"1:31", "INTEGER takes (bit width, signed)"}},
		{"message m { required int32 a (INTEGER(8,maybe)); }", []string{"INTEGER takes signed as true or false"}},
		{"message m { required int64 a (TIMESTAMP(SECONDS,true)); }", []string{"TIMESTAMP takes a unit"}},
		{"message m { required int64 a (STRING(1)); }", []string{"STRING takes no parameters"}},
		{"message m { required int64 a (UTF8(1)); }", []string{"UTF8 takes no parameters"}},
		{"message m { required int64 a = x; }", []string{"1:32", "field id"}},
		{"message m { required int64 a = 99999999999; }", []string{"field id (a 32-bit integer)"}},
		{"message m { required group g { required int32 a; }", []string{"1:51", "expected 'required', 'optional', 'repeated' or '}', found end of input"}},
		{"message m { } extra", []string{"1:15", "expected end of input after the message"}},
		{"message m { /* open", []string{"1:13", "comment not closed"}},
		{"message m { required int32 \"bad; }", []string{"1:28", "malformed quoted string"}},
		{"message m { required int32 a! ; }", []string{"1:29", "unexpected character '!'"}},
		// Structure parses, validation names the field.
		{"message m { required int32 a (STRING); }", []string{"field a", "STRING must annotate BYTE_ARRAY, not INT32"}},
		{"message m { optional group g { required binary a (INT_8); } }", []string{"field g.a", "INTEGER(8,true) must annotate INT32, not BYTE_ARRAY"}},
	}
	for _, tt := range tests {
		_, err := Parse(tt.text)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", tt.text)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q) = %q, want it to contain %q", tt.text, err, w)
			}
		}
	}
}

func TestParseDepthLimit(t *testing.T) {
	var b strings.Builder
	b.WriteString("message m {")
	for range maxDepth + 1 {
		b.WriteString(" required group g {")
	}
	_, err := Parse(b.String())
	if err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("err = %v", err)
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse did not panic")
		}
	}()
	MustParse("message")
}

func FuzzParse(f *testing.F) {
	f.Add(everyType)
	f.Add("message m { required int32 a; }")
	f.Add("message m { optional group l (LIST) { repeated group list { optional binary element (STRING); } } }")
	f.Add(`message "q" { repeated binary "x\x00y" (GEOGRAPHY("",THOMAS)) = -1; }`)
	f.Add("message m { required fixed_len_byte_array(16) d (DECIMAL(38,2)); }")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse(text)
		if err != nil {
			return
		}
		printed := s.String()
		again, err := Parse(printed)
		if err != nil {
			t.Fatalf("printed schema does not parse: %v\n%s", err, printed)
		}
		if !again.Equal(s) {
			t.Fatalf("reparsed schema differs:\n%s\nvs\n%s", printed, again)
		}
		if again.String() != printed {
			t.Fatalf("String not stable:\n%s\nvs\n%s", printed, again)
		}
		back, err := FromElements(s.Elements())
		if err != nil {
			t.Fatalf("FromElements(Elements()): %v\n%s", err, printed)
		}
		if !back.Equal(s) {
			t.Fatalf("elements round trip differs:\n%s\nvs\n%s", printed, back)
		}
	})
}
