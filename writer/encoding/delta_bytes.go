package encoding

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
)

// DeltaLengthByteArray is the DELTA_LENGTH_BYTE_ARRAY encoding of BYTE_ARRAY
// values: all lengths DELTA_BINARY_PACKED, then all bytes back to back.
type DeltaLengthByteArray struct {
	unsupported[DeltaLengthByteArray]
}

// String returns "DELTA_LENGTH_BYTE_ARRAY".
func (DeltaLengthByteArray) String() string { return "DELTA_LENGTH_BYTE_ARRAY" }

// EncodeByteArray appends the delta-encoded lengths and the concatenated
// values.
func (DeltaLengthByteArray) EncodeByteArray(dst []byte, data []byte, offsets []uint32) ([]byte, error) {
	values, err := byteArrayValues(data, offsets)
	if err != nil {
		return dst, fmt.Errorf("DELTA_LENGTH_BYTE_ARRAY: %w", err)
	}
	dst = appendLengths(dst, values, wholeLength)
	if values.n > 0 {
		dst = append(dst, data[offsets[0]:offsets[values.n]]...)
	}
	return dst, nil
}

// DecodeByteArray appends n values to data and their end offsets to offsets.
func (DeltaLengthByteArray) DecodeByteArray(data []byte, offsets []uint32, src []byte, n int) ([]byte, []uint32, error) {
	origData, origOffsets := len(data), len(offsets)
	data, offsets, err := decodeDeltaLength(data, startOffsets(offsets), src, n)
	if err != nil {
		return data[:origData], offsets[:origOffsets], fmt.Errorf("DELTA_LENGTH_BYTE_ARRAY: %w", err)
	}
	return data, offsets, nil
}

func decodeDeltaLength(data []byte, offsets []uint32, src []byte, n int) ([]byte, []uint32, error) {
	var lengths deltaValues
	rest, err := lengths.init(src, n, "length")
	if err != nil {
		return data, offsets, err
	}
	offsets = slices.Grow(offsets, n)
	for i := range n {
		size, err := lengths.next()
		if err != nil {
			return data, offsets, err
		}
		if size > len(rest) {
			return data, offsets, fmt.Errorf("value %d: length %d exceeds the %d bytes left", i, size, len(rest))
		}
		data = append(data, rest[:size]...)
		rest = rest[size:]
		if len(data) > maxByteArrayData {
			return data, offsets, fmt.Errorf("value %d: data exceeds 4 GiB", i)
		}
		offsets = append(offsets, uint32(len(data)))
	}
	return data, offsets, nil
}

// DeltaByteArray is the DELTA_BYTE_ARRAY encoding (front coding) of
// BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY values: the length of the prefix each
// value shares with the previous one, DELTA_BINARY_PACKED, then the
// remaining suffixes DELTA_LENGTH_BYTE_ARRAY encoded.
type DeltaByteArray struct{ unsupported[DeltaByteArray] }

// String returns "DELTA_BYTE_ARRAY".
func (DeltaByteArray) String() string { return "DELTA_BYTE_ARRAY" }

// EncodeByteArray appends the front-coded values.
func (DeltaByteArray) EncodeByteArray(dst []byte, data []byte, offsets []uint32) ([]byte, error) {
	values, err := byteArrayValues(data, offsets)
	if err != nil {
		return dst, fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	return appendFrontCoded(dst, values), nil
}

// EncodeFixedLenByteArray appends the front-coded values.
func (DeltaByteArray) EncodeFixedLenByteArray(dst []byte, data []byte, size int) ([]byte, error) {
	if err := checkFixedSize(data, size); err != nil {
		return dst, fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("DELTA_BYTE_ARRAY: size %d exceeds %d", size, math.MaxInt32)
	}
	return appendFrontCoded(dst, byteValues{data: data, size: size, n: len(data) / size}), nil
}

// DecodeByteArray appends n values to data and their end offsets to offsets.
func (DeltaByteArray) DecodeByteArray(data []byte, offsets []uint32, src []byte, n int) ([]byte, []uint32, error) {
	origData, origOffsets := len(data), len(offsets)
	data, offsets, err := decodeFrontCoded(data, startOffsets(offsets), src, n, 0)
	if err != nil {
		return data[:origData], offsets[:origOffsets], fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	return data, offsets, nil
}

// DecodeFixedLenByteArray appends n values of size bytes.
func (DeltaByteArray) DecodeFixedLenByteArray(dst []byte, src []byte, size, n int) ([]byte, error) {
	if err := checkFixedSize(nil, size); err != nil {
		return dst, fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	orig := len(dst)
	dst, _, err := decodeFrontCoded(dst, nil, src, n, size)
	if err != nil {
		return dst[:orig], fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	return dst, nil
}

// decodeFrontCoded appends n front-coded values to data. With size 0 the
// values are BYTE_ARRAY and each end offset is appended to offsets;
// otherwise every value must be size bytes long.
func decodeFrontCoded(data []byte, offsets []uint32, src []byte, n, size int) ([]byte, []uint32, error) {
	var prefixes, suffixes deltaValues
	rest, err := prefixes.init(src, n, "prefix length")
	if err != nil {
		return data, offsets, err
	}
	rest, err = suffixes.init(rest, n, "suffix length")
	if err != nil {
		return data, offsets, err
	}
	if size == 0 {
		offsets = slices.Grow(offsets, n)
	}
	prevStart, prevEnd := len(data), len(data)
	for i := range n {
		prefix, err := prefixes.next()
		if err != nil {
			return data, offsets, fmt.Errorf("value %d: %w", i, err)
		}
		suffix, err := suffixes.next()
		if err != nil {
			return data, offsets, fmt.Errorf("value %d: %w", i, err)
		}
		if prefix > prevEnd-prevStart {
			return data, offsets, fmt.Errorf("value %d: prefix length %d exceeds the previous value's %d bytes", i, prefix, prevEnd-prevStart)
		}
		if suffix > len(rest) {
			return data, offsets, fmt.Errorf("value %d: suffix length %d exceeds the %d bytes left", i, suffix, len(rest))
		}
		if size > 0 && prefix+suffix != size {
			return data, offsets, fmt.Errorf("value %d: prefix %d + suffix %d bytes != size %d", i, prefix, suffix, size)
		}
		start := len(data)
		// Appending part of data to itself is safe: if append moves data,
		// it copies from the old array, which still holds the prefix.
		data = append(data, data[prevStart:prevStart+prefix]...)
		data = append(data, rest[:suffix]...)
		rest = rest[suffix:]
		prevStart, prevEnd = start, len(data)
		if size == 0 {
			if len(data) > maxByteArrayData {
				return data, offsets, fmt.Errorf("value %d: data exceeds 4 GiB", i)
			}
			offsets = append(offsets, uint32(len(data)))
		}
	}
	return data, offsets, nil
}

// deltaValues reads a DELTA_BINARY_PACKED stream of lengths one at a time.
type deltaValues struct {
	r    deltaReader
	buf  [deltaGroup]uint64
	i, k int // next buffered value, buffered values
	what string
}

// init starts reading a stream of exactly n lengths at the start of src and
// returns the bytes that follow the stream. A stream holding more values
// than the page is rejected: finding its end would take time the page does
// not account for.
func (d *deltaValues) init(src []byte, n int, what string) ([]byte, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	d.what = what
	if err := d.r.init(src, 32); err != nil {
		return nil, fmt.Errorf("%ss: %w", what, err)
	}
	if d.r.left != n {
		return nil, fmt.Errorf("%ss: header holds %d values, page has %d", what, d.r.left, n)
	}
	end := d.r
	off, err := end.end()
	if err != nil {
		return nil, fmt.Errorf("%ss: %w", what, err)
	}
	return src[off:], nil
}

// next returns the next length, rejecting negative ones.
func (d *deltaValues) next() (int, error) {
	if d.i == d.k {
		k, err := d.r.next(&d.buf)
		if err != nil {
			return 0, fmt.Errorf("%ss: %w", d.what, err)
		}
		if k == 0 {
			return 0, fmt.Errorf("%ss: stream ended early", d.what)
		}
		d.i, d.k = 0, k
	}
	v := int32(d.buf[d.i])
	d.i++
	if v < 0 {
		return 0, fmt.Errorf("negative %s %d", d.what, v)
	}
	return int(v), nil
}

// byteValues addresses BYTE_ARRAY values through offsets, or
// FIXED_LEN_BYTE_ARRAY values (offsets nil) by their size.
type byteValues struct {
	data    []byte
	offsets []uint32
	size    int
	n       int
}

func (v byteValues) at(i int) []byte {
	if v.offsets == nil {
		return v.data[i*v.size : (i+1)*v.size]
	}
	return v.data[v.offsets[i]:v.offsets[i+1]]
}

// byteArrayValues validates BYTE_ARRAY input; lengths are written as INT32,
// so no value may exceed 2^31-1 bytes.
func byteArrayValues(data []byte, offsets []uint32) (byteValues, error) {
	n, err := checkOffsets(data, offsets)
	if err != nil {
		return byteValues{}, err
	}
	if n > 0 && offsets[n]-offsets[0] > math.MaxInt32 {
		for i := range n {
			if size := offsets[i+1] - offsets[i]; size > math.MaxInt32 {
				return byteValues{}, fmt.Errorf("value %d: length %d exceeds %d", i, size, math.MaxInt32)
			}
		}
	}
	return byteValues{data: data, offsets: offsets, n: n}, nil
}

// lengthKind selects the length stream appendLengths writes.
type lengthKind int

const (
	wholeLength  lengthKind = iota // length of each value
	prefixLength                   // bytes shared with the previous value
	suffixLength                   // bytes not shared with the previous value
)

func (v byteValues) length(i int, kind lengthKind) int {
	cur := v.at(i)
	if kind == wholeLength {
		return len(cur)
	}
	prefix := 0
	if i > 0 {
		prefix = commonPrefix(v.at(i-1), cur)
	}
	if kind == prefixLength {
		return prefix
	}
	return len(cur) - prefix
}

// appendLengths appends one DELTA_BINARY_PACKED stream of lengths.
func appendLengths(dst []byte, values byteValues, kind lengthKind) []byte {
	var w deltaWriter
	if values.n == 0 {
		return w.begin(dst, 0, 0, true)
	}
	dst = w.begin(dst, values.n, int64(values.length(0, kind)), true)
	if kind == wholeLength {
		// The lengths alone, a block at a time, taken without comparing
		// values and added without a call per value.
		var buf [deltaBlockSize]int32
		for i := 1; i < values.n; {
			k := min(len(buf), values.n-i)
			for j := range buf[:k] {
				buf[j] = int32(len(values.at(i + j)))
			}
			dst = addDeltas(&w, dst, buf[:k])
			i += k
		}
		return w.finish(dst)
	}
	for i := 1; i < values.n; i++ {
		dst = w.add(dst, int64(values.length(i, kind)))
	}
	return w.finish(dst)
}

// frontScratch holds what appendFrontCoded writes after the prefix
// lengths while it writes them: the suffix lengths and the suffixes, so
// that each value is compared with the one before it once, not once per
// section. Pooled: an encoder allocates nothing once warm.
type frontScratch struct{ lengths, suffixes []byte }

var frontScratchPool = sync.Pool{New: func() any { return new(frontScratch) }}

// appendFrontCoded appends the prefix lengths, the suffix lengths and the
// suffixes of values.
func appendFrontCoded(dst []byte, values byteValues) []byte {
	var prefixes, suffixes deltaWriter
	if values.n == 0 {
		dst = prefixes.begin(dst, 0, 0, true)
		return suffixes.begin(dst, 0, 0, true)
	}
	sc := frontScratchPool.Get().(*frontScratch)
	first := values.at(0)
	dst = prefixes.begin(dst, values.n, 0, true)
	sc.lengths = suffixes.begin(sc.lengths[:0], values.n, int64(len(first)), true)
	sc.suffixes = append(sc.suffixes[:0], first...)
	prev := first
	// The prefix and suffix lengths of a block of values are gathered
	// first and added a block at a time, without a call per value.
	var pre, suf [deltaBlockSize]int32
	for i := 1; i < values.n; {
		k := min(deltaBlockSize, values.n-i)
		for j := range k {
			cur := values.at(i + j)
			p := commonPrefix(prev, cur)
			pre[j], suf[j] = int32(p), int32(len(cur)-p)
			sc.suffixes = append(sc.suffixes, cur[p:]...)
			prev = cur
		}
		dst = addDeltas(&prefixes, dst, pre[:k])
		sc.lengths = addDeltas(&suffixes, sc.lengths, suf[:k])
		i += k
	}
	dst = prefixes.finish(dst)
	sc.lengths = suffixes.finish(sc.lengths)
	dst = append(append(dst, sc.lengths...), sc.suffixes...)
	if cap(sc.suffixes) <= maxPooledScratch {
		frontScratchPool.Put(sc)
	}
	return dst
}

// maxPooledScratch bounds the scratch a pool keeps: a page of huge values
// should not pin its size in memory.
const maxPooledScratch = 4 << 20

// commonPrefix returns the length of the longest common prefix of a and b,
// comparing eight bytes at a time.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// DeltaByteArraySize returns the bytes of value data that n DELTA_BYTE_ARRAY
// values at the start of src decode to, reading only their lengths. Front
// coding lets a few bytes describe long values, so a reader bounds the
// memory a page needs with it before decoding the page.
func DeltaByteArraySize(src []byte, n int) (int64, error) {
	var prefixes, suffixes deltaValues
	rest, err := prefixes.init(src, n, "prefix length")
	if err != nil {
		return 0, fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	if _, err = suffixes.init(rest, n, "suffix length"); err != nil {
		return 0, fmt.Errorf("DELTA_BYTE_ARRAY: %w", err)
	}
	var total, prev int64
	for i := range n {
		prefix, err := prefixes.next()
		if err != nil {
			return 0, fmt.Errorf("DELTA_BYTE_ARRAY: value %d: %w", i, err)
		}
		suffix, err := suffixes.next()
		if err != nil {
			return 0, fmt.Errorf("DELTA_BYTE_ARRAY: value %d: %w", i, err)
		}
		if int64(prefix) > prev {
			return 0, fmt.Errorf("DELTA_BYTE_ARRAY: value %d: prefix length %d exceeds the previous value's %d bytes", i, prefix, prev)
		}
		prev = int64(prefix) + int64(suffix)
		total += prev
	}
	return total, nil
}
