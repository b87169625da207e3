package protobuf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzSplitWire feeds arbitrary values to SplitWire: a value is either
// split, and AppendWire of what it gave is a prefix of a value that
// splits the same (the canonical header; a non-canonical array such as
// [1, 0] for [0] is written as the single byte 0), or refused with an
// error wrapping ErrWireFormat; it never panics. Seeds: headers of the
// first message, of nested messages, cut short and corrupt.
func FuzzSplitWire(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 0, 7, 0, 0x08, 0x01},
		{0, 0, 0, 1, 0, 4, 2, 6, 0x0a, 0},
		{0, 0, 0, 0, 1, 2, 0},
		{0, 0, 0, 0, 1, 0x81},
		{1, 0, 0, 0, 1, 0},
		{0, 0, 0, 0, 1, 0xc8, 0x01},
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		id, idx, body, err := SplitWire(value, nil)
		if err != nil {
			if !errors.Is(err, ErrWireFormat) {
				t.Fatalf("error %v does not wrap ErrWireFormat", err)
			}
			return
		}
		if len(idx) == 0 || len(idx) > maxIndexes {
			t.Fatalf("%d indexes", len(idx))
		}
		again := append(AppendWire(nil, id, idx), body...)
		id2, idx2, body2, err := SplitWire(again, nil)
		if err != nil || id2 != id || !bytes.Equal(body2, body) || len(idx2) != len(idx) {
			t.Fatalf("AppendWire(%d, %v) does not split back: %v", id, idx, err)
		}
		for i := range idx {
			if idx[i] != idx2[i] {
				t.Fatalf("indexes %v split back as %v", idx, idx2)
			}
		}
	})
}
