package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedFileIsCurrent fails when parquet.thrift or the generator
// changed without `go generate ./meta` being run.
func TestGeneratedFileIsCurrent(t *testing.T) {
	src, err := os.ReadFile("parquet.thrift")
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../thrift_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("meta/thrift_gen.go is stale: run go generate ./meta")
	}
}

func TestGoName(t *testing.T) {
	tests := []struct{ in, drop, want string }{
		{"type", "", "Type"},
		{"type_length", "", "TypeLength"},
		{"field_id", "", "FieldID"},
		{"logicalType", "", "LogicalType"},
		{"isAdjustedToUTC", "", "IsAdjustedToUTC"},
		{"crc", "", "CRC"},
		{"unencoded_byte_array_data_bytes", "", "UnencodedByteArrayDataBytes"},
		{"bitWidth", "", "BitWidth"},
		{"FLOAT16", "", "Float16"},
		{"JSON", "", "JSON"},
		{"RLE_DICTIONARY", "", "RLEDictionary"},
		{"LZ4_RAW", "", "LZ4Raw"},
		{"UINT_8", "", "Uint8"},
		{"AES_GCM_V1", "", "AesGcmV1"},
		{"IEEE_754_TOTAL_ORDER", "", "IEEE754TotalOrder"},
		{"DATA_PAGE_V2", "PAGE", "DataV2"},
		{"aad_prefix", "", "AADPrefix"},
	}
	for _, tt := range tests {
		if got := goName(tt.in, tt.drop); got != tt.want {
			t.Errorf("goName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"struct A { 1: required B b }", "undeclared type B"},
		{"struct A { 1: required i32 a; 1: optional i32 b }", "duplicate field id 1"},
		{"struct A { 1: optional map<i32,i32> m }", "map fields are not supported"},
		{"struct A { 1: optional list<list<i32>> l }", "nested list"},
		{"const i32 X = 1", "unsupported declaration"},
		{"struct A { /* open", "unterminated comment"},
		{"enum Unnamed { A = 1 }", "no naming rule"},
		{"struct A { 0: optional i32 a }", "bad field id"},
	}
	for _, tt := range tests {
		_, err := generate([]byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("generate(%q) = %v, want error containing %q", tt.src, err, tt.want)
		}
	}
}

func TestGenerateSmallIDL(t *testing.T) {
	src := `
// comment
# another
enum Type { BOOLEAN = 0, INT32 = 1 }
/** doc */
struct S {
  1: required Type t
  2: optional list<binary> values;
  17: optional bool flag = true
}
union U { 1: S s; 2: S other }
`
	code, err := generate([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"type Type int32", "TypeInt32", `return "INT32"`,
		"T Type", "Values [][]byte", "Flag *bool", "S *S", "Other *S",
		"nil means true", "func (x *U) Decode(src []byte) (int, error)",
		`d.missing("t")`,
	} {
		if !strings.Contains(string(code), want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
}
