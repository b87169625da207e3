package reader

import (
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/variant"
)

// TestShreddedVariant reconstructs Variants from shredded columns, per the
// cases of VariantShredding.md: a fully shredded object, a partially
// shredded one with a field that is not of the shredded type, a value that
// is not an object, and a Variant null; next to an unshredded Variant.
func TestShreddedVariant(t *testing.T) {
	s := mustParse(t, `message m {
  required group v (VARIANT(1)) {
    required binary metadata;
    optional binary value;
    optional group typed_value {
      required group a {
        optional binary value;
        optional int64 typed_value;
      }
      required group b {
        optional binary value;
        optional binary typed_value (STRING);
      }
    }
  }
  optional group u (VARIANT(1)) {
    required binary metadata;
    required binary value;
  }
}`)
	// One dictionary, sorted: a=0, b=1, c=2.
	m, _, err := variant.FromJSON([]byte(`{"a":0,"b":0,"c":0}`))
	if err != nil {
		t.Fatal(err)
	}
	residual := []byte{0x02, 1, 2, 0, 1, 0x04} // object {"c": true}
	str := []byte{3<<2 | 1, 's', 't', 'r'}     // short string "str"
	fortyTwo := []byte{3 << 2, 42}             // int8 42
	null := []byte{0}
	um, uv, err := variant.FromJSON([]byte(`{"k":[1,2.5,"x"]}`))
	if err != nil {
		t.Fatal(err)
	}
	bin := func(b ...[]byte) Values {
		v := Values{Type: meta.TypeByteArray, Offsets: []uint32{0}}
		for _, x := range b {
			v.Data = append(v.Data, x...)
			v.Offsets = append(v.Offsets, uint32(len(v.Data)))
		}
		return v
	}
	chunks := []testChunk{
		{vals: bin(m, m, m, m)},
		{def: []uint8{0, 1, 1, 1}, vals: bin(residual, fortyTwo, null)},
		{def: []uint8{1, 2, 0, 0}, vals: bin(str)},
		{def: []uint8{2, 1, 0, 0}, vals: Values{Type: meta.TypeInt64, Int64: []int64{1}}},
		{def: []uint8{1, 1, 0, 0}, vals: bin()},
		{def: []uint8{2, 1, 0, 0}, vals: byteArrays("x")},
		{def: []uint8{1, 0, 1, 0}, vals: bin(um, um)},
		{def: []uint8{1, 0, 1, 0}, vals: bin(uv, uv)},
	}
	data := buildFile(t, s, 4, chunks, nil, nil)
	got, err := readBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":{"a":1,"b":"x"},"u":{"k":[1,2.5,"x"]}}
{"v":{"a":"str","c":true},"u":null}
{"v":42,"u":{"k":[1,2.5,"x"]}}
{"v":null,"u":null}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// The reconstructed Variant is a valid one, with its own metadata.
	recs, err := readAll(openBytesData(t, data))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := recs[1].Field("v")
	if v.Kind() != KindVariant {
		t.Fatalf("kind %v", v.Kind())
	}
	vv, err := v.Variant()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok, err := vv.Lookup("c"); err != nil || !ok {
		t.Fatalf("Lookup(c): %v %v", ok, err)
	} else if b, _ := c.Bool(); !b {
		t.Error("c is not true")
	}

	// A residual that is not an object, next to a shredded object, is
	// corrupt.
	bad := append([]testChunk(nil), chunks...)
	bad[1] = testChunk{def: []uint8{1, 1, 1, 1}, vals: bin(fortyTwo, fortyTwo, fortyTwo, null)}
	if _, err := readBytes(buildFile(t, s, 4, bad, nil, nil)); err == nil {
		t.Error("non-object residual with typed_value: no error")
	}
	// So is an invalid unshredded Variant.
	bad = append([]testChunk(nil), chunks...)
	bad[7] = testChunk{def: []uint8{1, 0, 1, 0}, vals: bin([]byte{0xff}, uv)}
	if _, err := readBytes(buildFile(t, s, 4, bad, nil, nil)); err == nil {
		t.Error("invalid Variant value: no error")
	}
}

func openBytesData(t *testing.T, data []byte) *File {
	t.Helper()
	f, err := Open(bytesReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
