package encoding

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"
)

// word is any integer type that the bit packers read or write. Signed types
// are packed by their two's complement low bits.
type word interface {
	~uint8 | ~uint32 | ~int32 | ~uint64
}

// BitWidth returns the number of bits needed to represent every value in
// 0..max: 0 for max 0, 1 for max 1, 2 for max 2 and 3, and so on.
func BitWidth(max uint64) int {
	return bits.Len64(max)
}

// widthMask returns a mask of the low width bits; width may be 0..64.
func widthMask(width int) uint64 {
	// A shift by 64 yields 0 in Go, so width 64 gives all ones.
	return uint64(1)<<uint(width) - 1
}

// pack appends the low width bits of every value of src, least significant
// bit first, to dst. len(src) must be a multiple of 8 so that the output is a
// whole number of bytes: len(src)*width/8.
func pack[T word](dst []byte, src []T, width int) []byte {
	size := len(src) * width / 8
	if size == 0 {
		return dst
	}
	if width <= 16 {
		return packNarrow(dst, src, width, size)
	}
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	out := dst[start:]
	mask := widthMask(width)
	w := uint(width)
	var acc uint64 // pending bits, least significant first
	var n uint     // number of pending bits, always < 64
	pos := 0
	for _, v := range src {
		x := uint64(v) & mask
		acc |= x << n
		n += w
		if n >= 64 {
			binary.LittleEndian.PutUint64(out[pos:], acc)
			pos += 8
			n -= 64
			// The bits of x that did not fit; a shift by 64 yields 0.
			acc = x >> (w - n)
		}
	}
	for ; n > 0; n -= 8 {
		out[pos] = byte(acc)
		acc >>= 8
		pos++
	}
	return dst
}

// packNarrow is pack for widths of 1 to 16, the widths of levels and of
// most dictionary indices: eight values at a time, packed into two words
// of four without a branch, and stored by two 8-byte writes, the last few
// groups through a scratch array (a branch per word and a byte a value
// stored, before).
func packNarrow[T word](dst []byte, src []T, width, size int) []byte {
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	out := dst[start:]
	mask := widthMask(width)
	w := uint(width)
	w2, w3, w4 := 2*w, 3*w, 4*w
	group := func(s []T) (uint64, uint64) {
		s = s[:8:8]
		lo := uint64(s[0])&mask | (uint64(s[1])&mask)<<w | (uint64(s[2])&mask)<<w2 | (uint64(s[3])&mask)<<w3
		hi := uint64(s[4])&mask | (uint64(s[5])&mask)<<w | (uint64(s[6])&mask)<<w2 | (uint64(s[7])&mask)<<w3
		// 8w bits: lo's 4w, then hi's, the part past 64 in the second
		// word (a shift by 64 is 0 in Go, which width 16 relies on).
		return lo | hi<<w4, hi >> (64 - w4)
	}
	i, pos := 0, 0
	for ; pos+16 <= size; i, pos = i+8, pos+width {
		a, b := group(src[i:])
		binary.LittleEndian.PutUint64(out[pos:], a)
		binary.LittleEndian.PutUint64(out[pos+8:], b)
	}
	for ; pos < size; i, pos = i+8, pos+width {
		var tail [16]byte
		a, b := group(src[i:])
		binary.LittleEndian.PutUint64(tail[:], a)
		binary.LittleEndian.PutUint64(tail[8:], b)
		copy(out[pos:pos+width], tail[:])
	}
	return dst
}

// unpack decodes len(dst) values of width bits from src, least significant
// bit first. len(dst) must be a multiple of 8 and src must hold at least
// len(dst)*width/8 bytes; width must be 0..64.
func unpack[T word](dst []T, src []byte, width int) {
	if len(dst) == 0 {
		return
	}
	switch width {
	case 0:
		clear(dst)
		return
	case 1:
		unpack1(dst, src)
		return
	case 8:
		for i, b := range src[:len(dst)] {
			dst[i] = T(b)
		}
		return
	}
	src = src[:len(dst)*width/8]
	mask := widthMask(width)
	w := uint(width)
	i := 0
	if width <= 8 {
		// A group of 8 values fits one 64-bit load.
		for ; i+8 <= len(dst) && len(src) >= 8; i += 8 {
			x := binary.LittleEndian.Uint64(src)
			d := dst[i : i+8 : i+8]
			d[0] = T(x & mask)
			d[1] = T(x >> w & mask)
			d[2] = T(x >> (2 * w) & mask)
			d[3] = T(x >> (3 * w) & mask)
			d[4] = T(x >> (4 * w) & mask)
			d[5] = T(x >> (5 * w) & mask)
			d[6] = T(x >> (6 * w) & mask)
			d[7] = T(x >> (7 * w) & mask)
			src = src[width:]
		}
		dst = dst[i:]
		i = 0
	}
	var bit uint
	if width <= 56 {
		// Each value lies within the 8 bytes starting at its first byte.
		for ; i < len(dst); i++ {
			b := bit >> 3
			if b+8 > uint(len(src)) {
				break
			}
			dst[i] = T(binary.LittleEndian.Uint64(src[b:]) >> (bit & 7) & mask)
			bit += w
		}
	} else {
		for ; i < len(dst); i++ {
			b := bit >> 3
			if b+9 > uint(len(src)) {
				break
			}
			s := bit & 7
			x := binary.LittleEndian.Uint64(src[b:])>>s | uint64(src[b+8])<<(64-s)
			dst[i] = T(x & mask)
			bit += w
		}
	}
	// The last few values: copy the remaining bytes to a zero-padded buffer.
	if i < len(dst) {
		var buf [24]byte
		b := bit >> 3
		copy(buf[:], src[b:])
		bit &= 7
		for ; i < len(dst); i++ {
			b := bit >> 3
			s := bit & 7
			x := binary.LittleEndian.Uint64(buf[b:])>>s | uint64(buf[b+8])<<(64-s)
			dst[i] = T(x & mask)
			bit += w
		}
	}
}

// unpack1 expands one bit per value.
func unpack1[T word](dst []T, src []byte) {
	src = src[:len(dst)/8]
	for i, b := range src {
		d := dst[i*8 : i*8+8 : i*8+8]
		d[0] = T(b & 1)
		d[1] = T(b >> 1 & 1)
		d[2] = T(b >> 2 & 1)
		d[3] = T(b >> 3 & 1)
		d[4] = T(b >> 4 & 1)
		d[5] = T(b >> 5 & 1)
		d[6] = T(b >> 6 & 1)
		d[7] = T(b >> 7)
	}
}

// boolBytes views a []bool as the bytes that hold it. Go stores false as 0
// and true as 1 in one byte, so the bit packers can read booleans directly
// and, writing only 0 and 1, fill them. This avoids a per-page conversion
// buffer on the hottest path of boolean and level-like data.
func boolBytes(b []bool) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}
