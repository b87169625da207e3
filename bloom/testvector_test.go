package bloom

import (
	"encoding/binary"
	"math/bits"
	"os"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// The strings parquet-testing's README says were inserted into both
// bloom_filter.bin and bloom_filter.xxhash.bin (by parquet-mr).
var testVectorValues = []string{"hello", "parquet", "bloom", "filter"}

// TestXXHashVector reads bloom_filter.xxhash.bin, a thrift BloomFilterHeader
// followed by the bitset, as a reader would find it in a file.
func TestXXHashVector(t *testing.T) {
	data, err := os.ReadFile("testdata/bloom_filter.xxhash.bin")
	if err != nil {
		t.Fatal(err)
	}
	var h meta.BloomFilterHeader
	n, err := h.Decode(data)
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	if h.Algorithm.Block == nil || h.Hash.XXHash == nil || h.Compression.Uncompressed == nil {
		t.Fatalf("header %+v: want BLOCK, XXHASH, UNCOMPRESSED", h)
	}
	bitset := data[n:]
	if int(h.NumBytes) != len(bitset) {
		t.Fatalf("header says %d bytes, %d follow it", h.NumBytes, len(bitset))
	}
	f, err := Load(bitset)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range testVectorValues {
		if !f.Check(HashBytes([]byte(v))) {
			t.Errorf("%q missing from parquet-mr's filter", v)
		}
	}
	absent := 0
	for i := range 1000 {
		if !f.Check(HashInt64(int64(i))) {
			absent++
		}
	}
	if absent < 990 { // 4 values in 32 blocks: rate far below 1%
		t.Errorf("only %d of 1000 never-inserted values rejected", absent)
	}

	// Building the same filter ourselves must give the same bytes.
	g := New(len(bitset))
	for _, v := range testVectorValues {
		g.Insert(HashString(v))
	}
	if string(g.Bytes()) != string(bitset) {
		t.Errorf("our filter of the same values differs from parquet-mr's")
	}
}

// TestLegacyVector reads bloom_filter.bin, written in the format Parquet
// drafted before it settled on xxHash: a 12-byte little-endian header
// (numBytes, algorithm, hash) and a Murmur3-hashed bitset. Which bytes that
// draft hashed, and how it picked blocks, is not recoverable from the
// current spec (Murmur3 x64 128 of the UTF-8 bytes, either half, with or
// without a length prefix, does not reproduce it), so only the block layout
// is checked: four inserts must have touched at most four blocks, setting
// exactly one bit in each of their eight words, as mask does.
func TestLegacyVector(t *testing.T) {
	data, err := os.ReadFile("testdata/bloom_filter.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 12 {
		t.Fatal("short file")
	}
	numBytes := binary.LittleEndian.Uint32(data)
	algorithm := binary.LittleEndian.Uint32(data[4:])
	hash := binary.LittleEndian.Uint32(data[8:])
	bitset := data[12:]
	if int(numBytes) != len(bitset) || algorithm != 0 || hash != 0 {
		t.Fatalf("header: numBytes %d (%d follow), algorithm %d, hash %d", numBytes, len(bitset), algorithm, hash)
	}
	if _, err := Load(bitset); err != nil {
		t.Fatal(err)
	}
	touched := 0
	for b := 0; b < len(bitset); b += BlockBytes {
		var ones [8]int
		set := false
		for w := range ones {
			ones[w] = bits.OnesCount32(binary.LittleEndian.Uint32(bitset[b+4*w:]))
			set = set || ones[w] != 0
		}
		if !set {
			continue
		}
		touched++
		if ones != [8]int{1, 1, 1, 1, 1, 1, 1, 1} {
			t.Errorf("block %d: bits per word %v, want one in each", b/BlockBytes, ones)
		}
	}
	if touched == 0 || touched > len(testVectorValues) {
		t.Errorf("%d blocks touched by %d inserts", touched, len(testVectorValues))
	}
}
