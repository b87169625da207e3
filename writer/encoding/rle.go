package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// RLE is the RLE encoding of BOOLEAN values in data pages: a 4-byte
// little-endian length followed by the RLE/bit-packing hybrid at bit width 1.
// For levels, use AppendLevels and DecodeLevels.
type RLE struct{ unsupported[RLE] }

// String returns "RLE".
func (RLE) String() string { return "RLE" }

// EncodeBoolean appends the length-prefixed hybrid encoding of src.
func (RLE) EncodeBoolean(dst []byte, src []bool) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = appendHybrid(dst, boolBytes(src), 1)
	size := len(dst) - start - 4
	if uint64(size) > math.MaxUint32 {
		return dst[:start], fmt.Errorf("RLE: encoded booleans exceed 4 GiB")
	}
	binary.LittleEndian.PutUint32(dst[start:], uint32(size))
	return dst, nil
}

// DecodeBoolean appends n booleans decoded from the length-prefixed hybrid
// encoding in src.
func (RLE) DecodeBoolean(dst []bool, src []byte, n int) ([]bool, error) {
	if err := checkCount(n); err != nil {
		return dst, fmt.Errorf("RLE BOOLEAN: %w", err)
	}
	if len(src) < 4 {
		return dst, fmt.Errorf("RLE BOOLEAN: need a 4-byte length, have %d bytes", len(src))
	}
	size := binary.LittleEndian.Uint32(src)
	if uint64(size) > uint64(len(src)-4) {
		return dst, fmt.Errorf("RLE BOOLEAN: length %d exceeds the %d bytes that follow it", size, len(src)-4)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	// Decode into the bytes of dst's spare capacity; width 1 only yields
	// 0 and 1, which are valid bools.
	out, err := decodeHybrid(boolBytes(dst[start : start+n])[:0], src[4:4+size], 1, n)
	if err != nil {
		return dst[:start], fmt.Errorf("RLE BOOLEAN: %w", err)
	}
	_ = out
	return dst[:start+n], nil
}

// RLEDictionary is the RLE_DICTIONARY encoding of dictionary indices in data
// pages: one byte holding the bit width, then the RLE/bit-packing hybrid.
// PLAIN_DICTIONARY data pages use the same bytes. Indices are INT32 values.
type RLEDictionary struct{ unsupported[RLEDictionary] }

// String returns "RLE_DICTIONARY".
func (RLEDictionary) String() string { return "RLE_DICTIONARY" }

// EncodeInt32 appends the indices in src, with the smallest bit width that
// holds the largest index. Negative indices are an error.
func (RLEDictionary) EncodeInt32(dst []byte, src []int32) ([]byte, error) {
	var max int32
	for i, v := range src {
		if v < 0 {
			return dst, fmt.Errorf("RLE_DICTIONARY: negative index %d at position %d", v, i)
		}
		max |= v
	}
	width := BitWidth(uint64(max))
	dst = append(dst, byte(width))
	return appendHybrid(dst, src, width), nil
}

// DecodeInt32 appends n indices decoded from src.
func (RLEDictionary) DecodeInt32(dst []int32, src []byte, n int) ([]int32, error) {
	if err := checkCount(n); err != nil {
		return dst, fmt.Errorf("RLE_DICTIONARY: %w", err)
	}
	if len(src) == 0 {
		if n == 0 {
			return dst, nil
		}
		return dst, fmt.Errorf("RLE_DICTIONARY: missing bit width byte")
	}
	width := int(src[0])
	if width > 32 {
		return dst, fmt.Errorf("RLE_DICTIONARY: bit width %d > 32", width)
	}
	dst, err := decodeHybrid(dst, src[1:], width, n)
	if err != nil {
		return dst, fmt.Errorf("RLE_DICTIONARY: %w", err)
	}
	return dst, nil
}
