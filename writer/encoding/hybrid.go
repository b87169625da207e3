package encoding

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"
)

// hybridValue is an element type the RLE/bit-packing hybrid codec accepts.
type hybridValue interface {
	~uint8 | ~uint32 | ~int32
}

const (
	// minRepeat is the shortest run of equal values written as an RLE run.
	// Eight values bit-packed cost width bytes, the same order as an RLE
	// run's header and value, so shorter runs stay bit-packed.
	minRepeat = 8
	// maxRunLength is the longest run the spec allows (2^31-1 values).
	maxRunLength = 1<<31 - 1
	// maxBitPackedGroups is the largest multiple-of-8 run, in groups of 8.
	maxBitPackedGroups = maxRunLength / 8
)

// AppendHybrid appends values encoded with the RLE/bit-packing hybrid at the
// given bit width (0..32), without a length prefix, and returns the grown
// slice. Runs of 8 or more equal values become RLE runs wherever that is no
// larger than bit-packing them (always at widths of 3 and more); everything
// else is bit-packed in runs as long as the data allows. Bits of a value above
// bitWidth are ignored. It panics if bitWidth is outside 0..32.
func AppendHybrid(dst []byte, values []uint32, bitWidth int) []byte {
	if bitWidth < 0 || bitWidth > 32 {
		panic(fmt.Sprintf("encoding: hybrid bit width %d outside 0..32", bitWidth))
	}
	return appendHybrid(dst, values, bitWidth)
}

// DecodeHybrid decodes n values of the given bit width (0..32) from the
// RLE/bit-packing hybrid runs in src (no length prefix), appends them to dst
// and returns the grown slice. Bytes after the n-th value are ignored.
func DecodeHybrid(dst []uint32, src []byte, bitWidth, n int) ([]uint32, error) {
	if bitWidth < 0 || bitWidth > 32 {
		return dst, fmt.Errorf("rle/bit-packed hybrid: bit width %d outside 0..32", bitWidth)
	}
	return decodeHybrid(dst, src, bitWidth, n)
}

// AppendLevels appends repetition or definition levels encoded with the
// RLE/bit-packing hybrid at bitWidth (0..8), without a length prefix, and
// returns the grown slice. Use BitWidth(maxLevel) for bitWidth. It panics if
// bitWidth is outside 0..8.
func AppendLevels(dst []byte, levels []uint8, bitWidth int) []byte {
	if bitWidth < 0 || bitWidth > 8 {
		panic(fmt.Sprintf("encoding: level bit width %d outside 0..8", bitWidth))
	}
	return appendHybrid(dst, levels, bitWidth)
}

// DecodeLevels decodes n levels of bitWidth (0..8) bits from the
// RLE/bit-packing hybrid runs in src (no length prefix), appends them to dst
// and returns the grown slice. Bytes after the n-th level are ignored.
func DecodeLevels(dst []uint8, src []byte, bitWidth, n int) ([]uint8, error) {
	if bitWidth < 0 || bitWidth > 8 {
		return dst, fmt.Errorf("levels: bit width %d outside 0..8", bitWidth)
	}
	return decodeHybrid(dst, src, bitWidth, n)
}

// DecodeBitPackedLevels decodes n levels from the deprecated BIT_PACKED
// encoding, which packs values most significant bit first, appends them to
// dst and returns the grown slice. Old writers used it for levels.
func DecodeBitPackedLevels(dst []uint8, src []byte, bitWidth, n int) ([]uint8, error) {
	if bitWidth < 0 || bitWidth > 8 {
		return dst, fmt.Errorf("bit-packed levels: bit width %d outside 0..8", bitWidth)
	}
	if err := checkCount(n); err != nil {
		return dst, fmt.Errorf("bit-packed levels: %w", err)
	}
	if need := (uint64(n)*uint64(bitWidth) + 7) / 8; need > uint64(len(src)) {
		return dst, fmt.Errorf("bit-packed levels: %d levels of %d bits need %d bytes, have %d", n, bitWidth, need, len(src))
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	if bitWidth == 0 {
		clear(out)
		return dst, nil
	}
	w := uint(bitWidth)
	mask := uint16(1)<<w - 1
	var bit uint
	for i := range out {
		b := bit >> 3
		// Values span at most two bytes; read them big-endian.
		x := uint16(src[b]) << 8
		if int(b)+1 < len(src) {
			x |= uint16(src[b+1])
		}
		out[i] = uint8(x >> (16 - (bit & 7) - w) & mask)
		bit += w
	}
	return dst, nil
}

// appendHybrid encodes values as RLE runs and bit-packed runs. Bit-packed
// runs hold a multiple of 8 values, so a repeat that starts mid-group joins
// the bit-packed run up to the next group boundary and becomes an RLE run
// from there when worthRepeat says so.
func appendHybrid[T hybridValue](dst []byte, values []T, width int) []byte {
	n := len(values)
	for i := 0; i < n; {
		start := i
		for k := i; ; {
			// A value that differs from the next is a run of one, never
			// a repeat: skip such values in a tight loop, not one run at
			// a time (on dictionary indices of many distinct values,
			// nearly every value).
			k = nextRepeat(values, k)
			// Only a repeat of minRepeat values or more can become an
			// RLE run (rest below is at most r). A shorter one, which
			// its minRepeat-th value tells apart without measuring it,
			// is stepped over two values at a time, the two known to be
			// equal: the values after them are a shorter repeat still,
			// or none. On indices of a few dozen values, two equal
			// neighbours are common and eight rare.
			r := min(2, n-k)
			if k+minRepeat <= n && values[k+minRepeat-1] == values[k] {
				r = runLength(values[k:])
				boundary := start + (k-start+7)&^7
				if rest := k + r - boundary; rest >= minRepeat && worthRepeat(rest, width, boundary > start, k+r < n) {
					dst = appendBitPacked(dst, values[start:boundary], width)
					dst = appendRepeat(dst, uint64(values[boundary]), rest, width)
					i = k + r
					break
				}
			}
			k += r
			if k == n {
				dst = appendBitPacked(dst, values[start:], width)
				i = n
				break
			}
		}
	}
	return dst
}

// worthRepeat reports whether count equal values cost no more as an RLE run
// than left in a bit-packed run. The RLE run costs its header and value, plus
// a header for the bit-packed run that resumes after it; bit-packed, the
// values cost width bits each, plus a header if no bit-packed run precedes
// them (split is false). Ties go to RLE, which decodes faster. In the
// middle of bit-packed data, a run of 8 pays off at widths of 3 and more; at
// width 1, 24 values are needed.
func worthRepeat(count, width int, split, resume bool) bool {
	rle := uvarintLen(uint64(count)<<1) + (width+7)/8
	if resume {
		rle++
	}
	packed := count * width / 8
	if !split {
		packed++
	}
	return rle <= packed
}

func uvarintLen(v uint64) int {
	return (bits.Len64(v|1) + 6) / 7
}

// nextRepeat returns the first k' from k on whose value equals the next,
// or len(values)-1 when there is none. Levels (one byte each) are
// compared eight pairs at a time.
func nextRepeat[T hybridValue](values []T, k int) int {
	n := len(values)
	// Random levels repeat within a pair or two: those are checked
	// first, one at a time.
	for end := min(k+2, n-1); k < end; k++ {
		if values[k] == values[k+1] {
			return k
		}
	}
	if unsafe.Sizeof(values[0]) == 1 {
		b := bytesOf(values)
		for ; k+9 <= n; k += 8 {
			x := binary.LittleEndian.Uint64(b[k:]) ^ binary.LittleEndian.Uint64(b[k+1:])
			if z := ZeroBytes(x); z != 0 {
				return k + bits.TrailingZeros64(z)/8
			}
		}
	}
	for k+1 < n && values[k] != values[k+1] {
		k++
	}
	return k
}

// runLength returns how many values at the start of values (not empty)
// equal the first. Values of one and of four bytes are compared a word at
// a time: a run of levels is often thousands long.
func runLength[T hybridValue](values []T) int {
	n, v := len(values), values[0]
	// Most runs of random levels are short: their first values are
	// compared one at a time.
	i := 1
	for ; i < min(n, 4); i++ {
		if values[i] != v {
			return i
		}
	}
	switch unsafe.Sizeof(values[0]) {
	case 1:
		b := bytesOf(values)
		pat := ones * uint64(b[0])
		for ; i+8 <= n; i += 8 {
			if x := binary.LittleEndian.Uint64(b[i:]) ^ pat; x != 0 {
				return i + bits.TrailingZeros64(x)/8
			}
		}
	case 4:
		b := bytesOf(values)
		// The first value's bytes twice, as the words below are read.
		pat := uint64(binary.LittleEndian.Uint32(b)) * (1<<32 + 1)
		for ; i+2 <= n; i += 2 {
			if x := binary.LittleEndian.Uint64(b[4*i:]) ^ pat; x != 0 {
				return i + bits.TrailingZeros64(x)/32
			}
		}
	}
	for ; i < n; i++ {
		if values[i] != v {
			return i
		}
	}
	return n
}

// ones has a 1 in every byte.
const ones = 0x0101010101010101

// ZeroBytes returns x with the high bit of each zero byte set, and every
// other bit clear (a carry never crosses into the next byte, so the marks
// are exact). Byte slices, levels above all, are scanned with it eight
// bytes at a time, as little-endian words: bits.OnesCount64 of the result
// counts a word's zero bytes, bits.TrailingZeros64/8 places the first.
// The writer's level scans share it with this package's encoders.
func ZeroBytes(x uint64) uint64 {
	const low = 0x7f7f7f7f7f7f7f7f
	return ^((x&low + low) | x | low)
}

// bytesOf is the memory of values, as bytes.
func bytesOf[T hybridValue](values []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(values)*int(unsafe.Sizeof(values[0])))
}

// appendRepeat appends RLE runs of count copies of v.
func appendRepeat(dst []byte, v uint64, count, width int) []byte {
	v &= widthMask(width)
	byteWidth := (width + 7) / 8
	for count > 0 {
		c := min(count, maxRunLength)
		dst = binary.AppendUvarint(dst, uint64(c)<<1)
		for b := 0; b < byteWidth; b++ {
			dst = append(dst, byte(v>>(8*b)))
		}
		count -= c
	}
	return dst
}

// appendBitPacked appends values as bit-packed runs, zero-padding the last
// group to 8 values.
func appendBitPacked[T hybridValue](dst []byte, values []T, width int) []byte {
	for len(values) > 0 {
		groups := min((len(values)+7)/8, maxBitPackedGroups)
		dst = binary.AppendUvarint(dst, uint64(groups)<<1|1)
		full := min(len(values)/8, groups) * 8
		dst = pack(dst, values[:full], width)
		values = values[full:]
		if full < groups*8 {
			var last [8]T
			copy(last[:], values)
			dst = pack(dst, last[:], width)
			values = nil
		}
	}
	return dst
}

// decodeHybrid appends n values decoded from the hybrid runs in src.
func decodeHybrid[T hybridValue](dst []T, src []byte, width, n int) ([]T, error) {
	if err := checkCount(n); err != nil {
		return dst, fmt.Errorf("rle/bit-packed hybrid: %w", err)
	}
	orig := len(dst)
	mask := widthMask(width)
	byteWidth := (width + 7) / 8
	off := 0
	for n > 0 {
		header, k := binary.Uvarint(src[off:])
		if k <= 0 {
			return dst[:orig], fmt.Errorf("rle/bit-packed hybrid: missing or invalid run header at offset %d with %d values left", off, n)
		}
		runStart := off
		off += k
		if header&1 == 0 {
			count := header >> 1
			if len(src)-off < byteWidth {
				return dst[:orig], fmt.Errorf("rle/bit-packed hybrid: RLE run at offset %d: value needs %d bytes, have %d", runStart, byteWidth, len(src)-off)
			}
			var v uint64
			for b := range byteWidth {
				v |= uint64(src[off+b]) << (8 * b)
			}
			off += byteWidth
			if v > mask {
				return dst[:orig], fmt.Errorf("rle/bit-packed hybrid: RLE run at offset %d: value %d exceeds bit width %d", runStart, v, width)
			}
			m := int(min(count, uint64(n)))
			dst = slices.Grow(dst, m)
			for range m {
				dst = append(dst, T(v))
			}
			n -= m
			continue
		}
		groups := header >> 1
		avail := len(src) - off
		// Values the run holds, capped by what is still needed; a run
		// longer than the input can hold is cut to what is present.
		m := n
		if groups < (uint64(n)+7)/8 {
			m = int(groups) * 8
		}
		// Each value takes at least one bit, which also keeps m*width small.
		if width > 0 && m > avail*8 {
			return dst[:orig], fmt.Errorf("rle/bit-packed hybrid: bit-packed run at offset %d: %d values of %d bits need more than the %d bytes left", runStart, m, width, avail)
		}
		need := (m*width + 7) / 8
		if need > avail {
			return dst[:orig], fmt.Errorf("rle/bit-packed hybrid: bit-packed run at offset %d: %d values of %d bits need %d bytes, have %d", runStart, m, width, need, avail)
		}
		full := m &^ 7
		start := len(dst)
		dst = slices.Grow(dst, m)[:start+m]
		unpack(dst[start:start+full], src[off:], width)
		if full < m {
			var buf [40]byte
			var last [8]T
			copy(buf[:], src[off+full*width/8:])
			unpack(last[:], buf[:], width)
			copy(dst[start+full:], last[:])
		}
		// Advance over the whole run when present; a truncated final run
		// ends the input.
		if size := groups * uint64(width); size <= uint64(avail) {
			off += int(size)
		} else {
			off = len(src)
		}
		n -= m
	}
	return dst, nil
}
