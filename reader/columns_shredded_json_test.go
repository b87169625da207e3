package reader

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
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

// shreddedVariantFile writes values as a VARIANT column shredded by
// shape, in row groups of rowGroup records, for the fuzz seeds.
func shreddedVariantFile(tb testing.TB, shapeText string, values []string, rowGroup int) []byte {
	tb.Helper()
	shape, err := rowgroup.ParseVariantShape(shapeText)
	if err != nil {
		tb.Fatal(err)
	}
	node, err := rowgroup.VariantNode("payload", schema.Optional, shape)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := schema.New("m", node)
	if err != nil {
		tb.Fatal(err)
	}
	g := rowgroup.New(s)
	payload, err := rowgroup.NewVariantShredder(g)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, payload)
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	w, err := writer.New(&out, s)
	if err != nil {
		tb.Fatal(err)
	}
	for i, v := range values {
		if err := b.Append([]byte(v), nil); err != nil {
			tb.Fatalf("record %d %s: %v", i, v, err)
		}
		if (i+1)%rowGroup == 0 || i == len(values)-1 {
			if err := w.WriteRowGroup(g); err != nil {
				tb.Fatal(err)
			}
			g.Reset()
		}
	}
	if _, err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}

// shreddedSeeds are files of Variants shredded by shapes of objects with
// residual fields before, between and after the shredded ones, nested
// objects, arrays of objects and of primitives, and values that do not
// fit the shape.
func shreddedSeeds(tb testing.TB) [][]byte {
	values := []string{
		`{"event":"click","user":{"id":42,"name":"ann","extra":[1,"two"]},"tags":["a","b"],"items":[{"sku":"x1","qty":2,"note":"n"},{"sku":"x2"}],"price":12.5,"at":1}`,
		`{"event":"view","user":{"id":"not-a-number"},"tags":[],"items":[],"more":{"deep":[null,true]}}`,
		`{"event":null,"user":null,"tags":null,"items":[null,{"qty":"many"},7]}`,
		`{"user":{"name":"bob","a":0,"z":1},"tags":["c",1,null,{"k":"v"}]}`,
		`{}`, `"just a string"`, `[1,2,{"event":"nested"}]`, `null`, `12345678901234`,
		`{"event":"e","price":-0.25,"user":{"id":-1,"name":"","extra":{}},"z":"last","a":"first","f":1}`,
	}
	var seeds [][]byte
	for _, shape := range []string{
		"$.event string\n$.price decimal(9,2)\n$.at timestamp",
		"$.event string\n$.user.id int64\n$.user.name string\n$.tags[*] string\n$.items[*].sku string\n$.items[*].qty int32",
		"$[*] int64",
	} {
		seeds = append(seeds, shreddedVariantFile(tb, shape, values, 4))
	}
	return seeds
}

// TestShreddedSeedsMatchRows reads the fuzz seeds of shredded Variants
// columnar (which they must be) and through Rows: the same bytes.
func TestShreddedSeedsMatchRows(t *testing.T) {
	for i, data := range shreddedSeeds(t) {
		f, err := Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := f.Rows()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for g := range f.NumRowGroups() {
			a, err := NewJSONAssembler(f, g, f.Schema().Fields(), false)
			if err != nil {
				t.Fatalf("seed %d row group %d: not columnar: %v", i, g, err)
			}
			for {
				got, err := a.Append(nil)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("seed %d record %d: %v", i, n, err)
				}
				v, err := rows.Next()
				if err != nil {
					t.Fatalf("seed %d record %d through Rows: %v", i, n, err)
				}
				if want := compactJSON(nil, v); !bytes.Equal(got, want) {
					t.Errorf("seed %d record %d:\n got %s\nwant %s", i, n, got, want)
				}
				n++
			}
			a.Release()
		}
		if n != 10 {
			t.Errorf("seed %d: %d records, want 10", i, n)
		}
	}
}

// TestShreddedBadFieldName: a shredded object field whose name is not
// UTF-8 is not read columnar (its JSON key would need replacing), and
// Rows refuses it.
func TestShreddedBadFieldName(t *testing.T) {
	s := mustParse(t, "message m {\n  required group v (VARIANT(1)) {\n    required binary metadata;\n    optional binary value;\n    optional group typed_value {\n      required group ab {\n        optional binary value;\n        optional int64 typed_value;\n      }\n    }\n  }\n}")
	data := buildFile(t, s, 1, []testChunk{
		{vals: byteArrays("\x01\x00\x00")},
		{def: []uint8{0}, vals: Values{Type: meta.TypeByteArray}},
		{def: []uint8{1}, vals: Values{Type: meta.TypeByteArray}},
		{def: []uint8{2}, vals: Values{Type: meta.TypeInt64, Int64: []int64{5}}},
	}, nil, nil)
	// The field's name as a footer may say it: the same length, so the
	// footer's offsets hold.
	if n := bytes.Count(data, []byte("ab")); n != 3 { // the name, and its two columns' paths
		t.Fatalf("the file holds %q %d times, want 3", "ab", n)
	}
	data = bytes.ReplaceAll(data, []byte("ab"), []byte("a\xff"))
	f, err := Open(bytesReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewJSONAssembler(f, 0, f.Schema().Fields(), false); !errors.Is(err, ErrNotColumnar) {
		t.Errorf("assembler: %v, want ErrNotColumnar", err)
	}
	if _, err := rowsOne(t, data); err == nil {
		t.Error("Rows read the record")
	}
}
