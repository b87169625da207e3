package reader

import (
	"bytes"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// TestShreddedJSONMatchesRows renders shredded Variants of every typed
// primitive the spec allows, with the values at and past the edges of
// their types, straight from the columns, and checks each record against
// the Variant Rows rebuilds, rendered by the variant package: the same
// bytes, or an error from both.
func TestShreddedJSONMatchesRows(t *testing.T) {
	fixed16 := func(bs ...[]byte) Values {
		return Values{Type: meta.TypeFixedLenByteArray, Size: 16, Data: bytes.Join(bs, nil)}
	}
	b16 := func(s string) []byte { return []byte(s) }
	for _, tc := range []struct {
		typ  string
		vals Values
	}{
		{"boolean typed_value", Values{Type: meta.TypeBoolean, Bool: []bool{true, false}}},
		{"int32 typed_value", Values{Type: meta.TypeInt32, Int32: []int32{0, -1, math.MaxInt32, math.MinInt32}}},
		{"int32 typed_value (INTEGER(8,true))", Values{Type: meta.TypeInt32, Int32: []int32{-128, 127, 300}}},
		{"int32 typed_value (INTEGER(16,true))", Values{Type: meta.TypeInt32, Int32: []int32{-32768, 70000}}},
		{"int32 typed_value (INTEGER(32,true))", Values{Type: meta.TypeInt32, Int32: []int32{7}}},
		{"int64 typed_value", Values{Type: meta.TypeInt64, Int64: []int64{math.MaxInt64, math.MinInt64, 0}}},
		{"int64 typed_value (INTEGER(64,true))", Values{Type: meta.TypeInt64, Int64: []int64{-5}}},
		{"float typed_value", Values{Type: meta.TypeFloat, Float: []float32{1.5, -0, float32(math.Inf(1)), float32(math.NaN()), 1e-45}}},
		{"double typed_value", Values{Type: meta.TypeDouble, Double: []float64{0.1, -0.0, 1e300, math.Inf(-1), math.NaN(), 5e-324}}},
		{"int32 typed_value (DECIMAL(9,2))", Values{Type: meta.TypeInt32, Int32: []int32{12345, -1, 999999999, -999999999, 1000000000, math.MinInt32}}},
		{"int32 typed_value (DECIMAL(9,0))", Values{Type: meta.TypeInt32, Int32: []int32{42, 0}}},
		{"int64 typed_value (DECIMAL(18,4))", Values{Type: meta.TypeInt64, Int64: []int64{123456789, -10, 999999999999999999, 1000000000000000000, math.MinInt64}}},
		{"fixed_len_byte_array(16) typed_value (DECIMAL(38,10))", fixed16(
			b16("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x30\x39"),
			b16("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
			b16("\x7f\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"))},
		{"int32 typed_value (DATE)", Values{Type: meta.TypeInt32, Int32: []int32{0, -1, 20000}}},
		{"int64 typed_value (TIME(MICROS,false))", Values{Type: meta.TypeInt64, Int64: []int64{0, 86399999999, 86400000000, -1}}},
		{"int64 typed_value (TIMESTAMP(MICROS,true))", Values{Type: meta.TypeInt64, Int64: []int64{0, -1, 1700000000123456}}},
		{"int64 typed_value (TIMESTAMP(MICROS,false))", Values{Type: meta.TypeInt64, Int64: []int64{1700000000123456}}},
		{"int64 typed_value (TIMESTAMP(NANOS,true))", Values{Type: meta.TypeInt64, Int64: []int64{1700000000123456789, -1}}},
		{"int64 typed_value (TIMESTAMP(NANOS,false))", Values{Type: meta.TypeInt64, Int64: []int64{5}}},
		{"binary typed_value", byteArrays("", "\x00\xff", "abc")},
		{"binary typed_value (STRING)", byteArrays("", "plain", "quote\" and \\ and \n", "é ☃ 𝄞", "\xff not UTF-8", "\x00\x1f")},
		{"fixed_len_byte_array(16) typed_value (UUID)", fixed16(b16("0123456789abcdef"))},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			s := mustParse(t, `message m {
  required group v (VARIANT(1)) {
    required binary metadata;
    optional binary value;
    optional `+tc.typ+`;
  }
}`)
			// Record by record: each value in a file of its own, so that
			// one error does not hide the records after it.
			for i := range tc.vals.Len() {
				one := tc.vals.slice(i)
				data := buildFile(t, s, 1, []testChunk{
					{vals: byteArrays("\x01\x00\x00")},
					{def: []uint8{0}, vals: Values{Type: meta.TypeByteArray}},
					{def: []uint8{1}, vals: one},
				}, nil, nil)
				got, gotErr := assembleOne(t, data)
				want, wantErr := rowsOne(t, data)
				switch {
				case (gotErr != nil) != (wantErr != nil):
					t.Errorf("value %d: columns %q, %v; Rows %q, %v", i, got, gotErr, want, wantErr)
				case gotErr == nil && !bytes.Equal(got, want):
					t.Errorf("value %d: columns %s, Rows %s", i, got, want)
				case gotErr != nil && !errorsIsCorrupt(gotErr):
					t.Errorf("value %d: %v, want an ErrCorrupt", i, gotErr)
				}
			}
		})
	}
}

// slice is value i of v alone.
func (v Values) slice(i int) Values {
	o := Values{Type: v.Type, Size: v.Size}
	switch v.Type {
	case meta.TypeBoolean:
		o.Bool = v.Bool[i : i+1]
	case meta.TypeInt32:
		o.Int32 = v.Int32[i : i+1]
	case meta.TypeInt64:
		o.Int64 = v.Int64[i : i+1]
	case meta.TypeFloat:
		o.Float = v.Float[i : i+1]
	case meta.TypeDouble:
		o.Double = v.Double[i : i+1]
	case meta.TypeByteArray:
		o = byteArrays(string(v.Data[v.Offsets[i]:v.Offsets[i+1]]))
	case meta.TypeFixedLenByteArray:
		o.Data = v.Data[i*int(v.Size) : (i+1)*int(v.Size)]
	}
	return o
}

func errorsIsCorrupt(err error) bool { return err != nil && strings.Contains(err.Error(), "corrupt") }

// assembleOne renders the one record of data with the JSONAssembler.
func assembleOne(t *testing.T, data []byte) ([]byte, error) {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewJSONAssembler(f, 0, f.Schema().Fields(), false)
	if err != nil {
		t.Fatalf("not columnar: %v", err)
	}
	defer a.Release()
	out, err := a.Append(nil)
	if err == io.EOF {
		t.Fatal("no record")
	}
	return out, err
}

// rowsOne renders the one record of data as Rows assembles it.
func rowsOne(t *testing.T, data []byte) ([]byte, error) {
	t.Helper()
	f, err := Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	v, err := rows.Next()
	if err != nil {
		return nil, err
	}
	return compactJSON(nil, v), nil
}
