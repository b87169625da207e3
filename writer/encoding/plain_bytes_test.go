package encoding

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// plainByteArraysReference is PLAIN's byte-array layout spelled out: each
// value's 4-byte little-endian length, then its bytes.
func plainByteArraysReference(dst []byte, values [][]byte) []byte {
	for _, v := range values {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// TestPlainByteArrayShortValues checks EncodeByteArray against the layout
// for values around the length it copies as two words, at the start, the
// middle and the end of the data (where the data does not hold 16 bytes
// past the value), after a prefix already in dst, and that it leaves the
// capacity past what it appends alone.
func TestPlainByteArrayShortValues(t *testing.T) {
	value := func(n int, seed byte) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = seed + byte(i)
		}
		return v
	}
	lengths := []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 40}
	var tests []struct {
		name   string
		values [][]byte
		prefix []byte
	}
	add := func(name string, prefix []byte, values ...[]byte) {
		tests = append(tests, struct {
			name   string
			values [][]byte
			prefix []byte
		}{name, values, prefix})
	}
	for _, n := range lengths {
		add("alone", nil, value(n, 'a'))
		add("first", nil, value(n, 'a'), value(20, 'k'), value(3, 'x'))
		add("last", []byte("head"), value(3, 'x'), value(20, 'k'), value(n, 'a'))
		add("between", nil, value(2, 'x'), value(n, 'a'), value(1, 'k'))
		add("runs", []byte{9}, value(n, 'a'), value(n, 'b'), value(n, 'c'), value(n, 'd'))
	}
	add("none", []byte("kept"))
	for _, tc := range tests {
		in := makeByteArrays(tc.values...)
		want := plainByteArraysReference(append([]byte(nil), tc.prefix...), tc.values)
		// dst with spare capacity filled with a marker: nothing past
		// what EncodeByteArray appends may change.
		dst := append(make([]byte, 0, len(want)+64), tc.prefix...)
		spare := dst[len(want):cap(dst)]
		for i := range spare {
			spare[i] = 0xee
		}
		got, err := Plain{}.EncodeByteArray(dst, in.data, in.offsets)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s (%d values): got %x, want %x", tc.name, len(tc.values), got, want)
		}
		for i, b := range got[len(got):cap(got)] {
			if b != 0xee {
				t.Errorf("%s: byte %d past the end written: %#x", tc.name, len(got)+i, b)
				break
			}
		}
		// Round trip through the decoder too.
		data, offsets, err := Plain{}.DecodeByteArray(nil, nil, got[len(tc.prefix):], len(tc.values))
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		for i, v := range tc.values {
			if g := data[offsets[i]:offsets[i+1]]; !bytes.Equal(g, v) {
				t.Errorf("%s: value %d decoded as %q, want %q", tc.name, i, g, v)
			}
		}
	}
	// A page is a slice of a column's offsets: the data then holds
	// other values' bytes past the page's last value.
	for _, n := range lengths {
		values := [][]byte{value(3, 'x'), value(n, 'a'), value(n, 'b'), value(30, 'k')}
		in := makeByteArrays(values...)
		want := plainByteArraysReference(nil, values[1:3])
		got, err := Plain{}.EncodeByteArray(nil, in.data, in.offsets[1:4])
		if err != nil {
			t.Fatalf("page of length %d values: %v", n, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("page of length %d values: got %x, want %x", n, got, want)
		}
	}
}
