package reader

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// TestShreddedTypedValueTypes forges shredded Variants whose typed_value
// has a type VariantShredding.md does not allow, and checks that reading
// them is an error naming the column, while allowed ones read.
func TestShreddedTypedValueTypes(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		vals Values
		want string // "" when allowed
	}{
		{"int32 typed_value (INTEGER(32,false))", Values{Type: meta.TypeInt32, Int32: []int32{5}}, "v.typed_value is INT32 INTEGER(32,false)"},
		{"fixed_len_byte_array(4) typed_value", Values{Type: meta.TypeFixedLenByteArray, Size: 4, Data: []byte("abcd")}, "v.typed_value is FIXED_LEN_BYTE_ARRAY"},
		{"int64 typed_value (TIMESTAMP(MILLIS,true))", Values{Type: meta.TypeInt64, Int64: []int64{5}}, "v.typed_value is INT64 TIMESTAMP(MILLIS,true)"},
		{"int32 typed_value (INTEGER(16,true))", Values{Type: meta.TypeInt32, Int32: []int32{5}}, ""},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			s := mustParse(t, `message m {
  required group v (VARIANT(1)) {
    required binary metadata;
    optional binary value;
    optional `+tc.typ+`;
  }
}`)
			data := buildFile(t, s, 1, []testChunk{
				{vals: byteArrays("\x01\x00\x00")},
				{def: []uint8{0}, vals: Values{Type: meta.TypeByteArray}},
				{def: []uint8{1}, vals: tc.vals},
			}, nil, nil)
			out, err := readBytes(data)
			if tc.want == "" {
				if err != nil || !strings.Contains(string(out), `"v":5`) {
					t.Fatalf("got %s, %v", out, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "VariantShredding.md does not allow") {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			// The file is refused when opened, even where every value of
			// the column is null, so no reader of it gets half way.
			nulls := buildFile(t, s, 1, []testChunk{
				{vals: byteArrays("\x01\x00\x00")},
				{def: []uint8{1}, vals: byteArrays("\x0c\x05")}, // int8 5 in value
				{def: []uint8{0}, vals: Values{Type: tc.vals.Type, Size: tc.vals.Size}},
			}, nil, nil)
			if _, err := Open(bytes.NewReader(nulls), int64(len(nulls))); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open of a file whose typed_value is all null: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
