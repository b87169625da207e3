package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Plain is the PLAIN encoding: values back to back, little endian, booleans
// bit-packed LSB first, byte arrays prefixed by a 4-byte length. It supports
// every physical type and is also the format of dictionary pages.
type Plain struct{}

// String returns "PLAIN".
func (Plain) String() string { return "PLAIN" }

// EncodeBoolean appends src bit-packed, least significant bit first.
func (Plain) EncodeBoolean(dst []byte, src []bool) ([]byte, error) {
	b := boolBytes(src)
	full := len(b) &^ 7
	dst = pack(dst, b[:full], 1)
	if full < len(b) {
		var last byte
		for i, v := range b[full:] {
			last |= (v & 1) << i
		}
		dst = append(dst, last)
	}
	return dst, nil
}

// EncodeInt32 appends src as 4-byte little-endian values.
func (Plain) EncodeInt32(dst []byte, src []int32) ([]byte, error) {
	out, dst := grow(dst, 4*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
	}
	return dst, nil
}

// EncodeInt64 appends src as 8-byte little-endian values.
func (Plain) EncodeInt64(dst []byte, src []int64) ([]byte, error) {
	out, dst := grow(dst, 8*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
	}
	return dst, nil
}

// EncodeInt96 appends src's 12-byte values as they are.
func (Plain) EncodeInt96(dst []byte, src [][12]byte) ([]byte, error) {
	out, dst := grow(dst, 12*len(src))
	for i := range src {
		copy(out[12*i:], src[i][:])
	}
	return dst, nil
}

// EncodeFloat appends src as 4-byte IEEE 754 little-endian values, keeping
// NaN payloads and the sign of zero.
func (Plain) EncodeFloat(dst []byte, src []float32) ([]byte, error) {
	out, dst := grow(dst, 4*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return dst, nil
}

// EncodeDouble appends src as 8-byte IEEE 754 little-endian values.
func (Plain) EncodeDouble(dst []byte, src []float64) ([]byte, error) {
	out, dst := grow(dst, 8*len(src))
	for i, v := range src {
		binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(v))
	}
	return dst, nil
}

// EncodeByteArray appends each value as a 4-byte little-endian length
// followed by its bytes.
func (Plain) EncodeByteArray(dst []byte, data []byte, offsets []uint32) ([]byte, error) {
	n, err := checkOffsets(data, offsets)
	if err != nil {
		return dst, fmt.Errorf("PLAIN: %w", err)
	}
	if n == 0 {
		return dst, nil
	}
	out, dst := grow(dst, 4*n+int(offsets[n]-offsets[0]))
	pos := 0
	for i := range n {
		lo, hi := offsets[i], offsets[i+1]
		l := int(hi - lo)
		binary.LittleEndian.PutUint32(out[pos:], uint32(l))
		pos += 4
		// A value of up to shortValue bytes (a code, an id, a short
		// name: most values of most columns) is copied as two words,
		// without a call to memmove, when data holds shortValue bytes
		// from it and out has room for them: the bytes written past the
		// value are the next values' room, which they overwrite.
		if l <= shortValue && len(data)-int(lo) >= shortValue && len(out)-pos >= shortValue {
			w, t := data[lo:lo+shortValue], out[pos:pos+shortValue]
			binary.LittleEndian.PutUint64(t, binary.LittleEndian.Uint64(w))
			binary.LittleEndian.PutUint64(t[8:], binary.LittleEndian.Uint64(w[8:]))
			pos += l
			continue
		}
		pos += copy(out[pos:], data[lo:hi])
	}
	return dst, nil
}

// shortValue is the length up to which EncodeByteArray copies a value as
// two 8-byte words.
const shortValue = 16

// EncodeFixedLenByteArray appends data as it is.
func (Plain) EncodeFixedLenByteArray(dst []byte, data []byte, size int) ([]byte, error) {
	if err := checkFixedSize(data, size); err != nil {
		return dst, fmt.Errorf("PLAIN: %w", err)
	}
	return append(dst, data...), nil
}

// DecodeBoolean appends n bit-packed booleans.
func (Plain) DecodeBoolean(dst []bool, src []byte, n int) ([]bool, error) {
	if err := checkPlain(src, n, 1, 8, "BOOLEAN"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := boolBytes(dst[start:])
	full := n &^ 7
	unpack(out[:full], src, 1)
	for i := full; i < n; i++ {
		out[i] = src[i/8] >> (i % 8) & 1
	}
	return dst, nil
}

// DecodeInt32 appends n 4-byte little-endian values.
func (Plain) DecodeInt32(dst []int32, src []byte, n int) ([]int32, error) {
	if err := checkPlain(src, n, 4, 1, "INT32"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = int32(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return dst, nil
}

// DecodeInt64 appends n 8-byte little-endian values.
func (Plain) DecodeInt64(dst []int64, src []byte, n int) ([]int64, error) {
	if err := checkPlain(src, n, 8, 1, "INT64"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = int64(binary.LittleEndian.Uint64(src[8*i:]))
	}
	return dst, nil
}

// DecodeInt96 appends n 12-byte values.
func (Plain) DecodeInt96(dst [][12]byte, src []byte, n int) ([][12]byte, error) {
	if err := checkPlain(src, n, 12, 1, "INT96"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = [12]byte(src[12*i:])
	}
	return dst, nil
}

// DecodeFloat appends n 4-byte IEEE 754 values.
func (Plain) DecodeFloat(dst []float32, src []byte, n int) ([]float32, error) {
	if err := checkPlain(src, n, 4, 1, "FLOAT"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return dst, nil
}

// DecodeDouble appends n 8-byte IEEE 754 values.
func (Plain) DecodeDouble(dst []float64, src []byte, n int) ([]float64, error) {
	if err := checkPlain(src, n, 8, 1, "DOUBLE"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:]))
	}
	return dst, nil
}

// DecodeByteArray appends n length-prefixed values to data and their end
// offsets to offsets.
func (Plain) DecodeByteArray(data []byte, offsets []uint32, src []byte, n int) ([]byte, []uint32, error) {
	// Every value needs at least its 4-byte length.
	if err := checkPlain(src, n, 4, 1, "BYTE_ARRAY"); err != nil {
		return data, offsets, err
	}
	origData, origOffsets := len(data), len(offsets)
	offsets = startOffsets(offsets)
	offsets = slices.Grow(offsets, n)
	pos := 0
	for i := range n {
		if len(src)-pos < 4 {
			return data[:origData], offsets[:origOffsets], fmt.Errorf("PLAIN BYTE_ARRAY: value %d: length at offset %d: need 4 bytes, have %d", i, pos, len(src)-pos)
		}
		size := binary.LittleEndian.Uint32(src[pos:])
		pos += 4
		if uint64(size) > uint64(len(src)-pos) {
			return data[:origData], offsets[:origOffsets], fmt.Errorf("PLAIN BYTE_ARRAY: value %d at offset %d: length %d exceeds the %d bytes left", i, pos-4, size, len(src)-pos)
		}
		data = append(data, src[pos:pos+int(size)]...)
		pos += int(size)
		if len(data) > maxByteArrayData {
			return data[:origData], offsets[:origOffsets], fmt.Errorf("PLAIN BYTE_ARRAY: value %d: data exceeds 4 GiB", i)
		}
		offsets = append(offsets, uint32(len(data)))
	}
	return data, offsets, nil
}

// DecodeFixedLenByteArray appends n values of size bytes.
func (Plain) DecodeFixedLenByteArray(dst []byte, src []byte, size, n int) ([]byte, error) {
	if err := checkFixedSize(nil, size); err != nil {
		return dst, fmt.Errorf("PLAIN: %w", err)
	}
	if err := checkPlain(src, n, size, 1, "FIXED_LEN_BYTE_ARRAY"); err != nil {
		return dst, err
	}
	return append(dst, src[:n*size]...), nil
}

// checkPlain verifies that src holds n values of size bytes each, or, when
// per > 1, n values packed per to a byte. It divides instead of multiplying
// so that a huge n cannot overflow.
func checkPlain(src []byte, n, size, per int, typ string) error {
	if err := checkCount(n); err != nil {
		return fmt.Errorf("PLAIN %s: %w", typ, err)
	}
	if uint64(n) > uint64(len(src))*uint64(per)/uint64(size) {
		return fmt.Errorf("PLAIN %s: %d values need more than the %d bytes present", typ, n, len(src))
	}
	return nil
}

// grow extends dst by size bytes and returns the new tail and the grown slice.
func grow(dst []byte, size int) (tail, grown []byte) {
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	return dst[start:], dst
}
