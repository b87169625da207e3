package reader

import "math/bits"

// appendInt appends x in decimal, as strconv.AppendInt(dst, x, 10) does,
// writing the digits in place in dst, two at a time: strconv formats into
// a buffer of its own and copies it, and that copy (a call to memmove per
// number) was a tenth of replay's JSON rendering.
func appendInt(dst []byte, x int64) []byte {
	u := uint64(x)
	if x < 0 {
		dst = append(dst, '-')
		u = -u
	}
	return appendUint(dst, u)
}

// appendUint appends u in decimal.
func appendUint(dst []byte, u uint64) []byte {
	n := decimalLen(u)
	dst, out := extend(dst, n)
	i := n
	for u >= 100 {
		q := u / 100
		r := u - q*100
		i -= 2
		out[i], out[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		out[0], out[1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		out[0] = byte('0' + u)
	}
	return dst
}

// extend lengthens dst by n bytes and returns it with those n bytes, for
// the caller to write in place.
func extend(dst []byte, n int) (longer, added []byte) {
	at := len(dst)
	if cap(dst)-at < n {
		dst = append(dst, make([]byte, n)...)
	} else {
		dst = dst[:at+n]
	}
	return dst, dst[at : at+n]
}

// digitPairs is "00" to "99".
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// decimalLen returns the number of decimal digits of u (1 for 0).
func decimalLen(u uint64) int {
	// log10(u) is about log2(u)·1233/4096: low by at most one.
	n := (bits.Len64(u|1) * 1233) >> 12
	if n < 20 && u >= tenTo(n) {
		n++
	}
	return max(n, 1)
}

// tenTo returns 10^n, for n < 20.
func tenTo(n int) uint64 {
	p := uint64(1)
	for range n {
		p *= 10
	}
	return p
}

// appendDigitsInPlace appends the n lowest decimal digits of v, zeros in
// front, as appendDigits does, without its copy.
func appendDigitsInPlace(dst []byte, v uint64, n int) []byte {
	dst, out := extend(dst, n)
	i := n
	for ; i >= 2; i -= 2 {
		q := v / 100
		r := v - q*100
		out[i-2], out[i-1] = digitPairs[2*r], digitPairs[2*r+1]
		v = q
	}
	if i == 1 {
		out[0] = byte('0' + v%10)
	}
	return dst
}
