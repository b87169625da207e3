package variant

import (
	"math/big"
	"math/bits"
)

// Decimal is an exact decimal number Unscaled × 10^-Scale, where Unscaled
// is the 128-bit two's complement integer Hi:Lo. Decimals read from
// decimal4 and decimal8 values are sign-extended into Hi.
type Decimal struct {
	Hi    int64  // high 64 bits of the unscaled value, with its sign
	Lo    uint64 // low 64 bits of the unscaled value
	Scale uint8  // digits after the decimal point, 0-38 in a valid Variant
}

// DecimalFromInt64 returns the decimal unscaled × 10^-scale.
func DecimalFromInt64(unscaled int64, scale uint8) Decimal {
	return Decimal{Hi: unscaled >> 63, Lo: uint64(unscaled), Scale: scale}
}

// Big returns the unscaled value.
func (d Decimal) Big() *big.Int {
	hi, lo, neg := d.magnitude()
	var x big.Int
	x.SetUint64(hi)
	x.Lsh(&x, 64)
	x.Or(&x, new(big.Int).SetUint64(lo))
	if neg {
		x.Neg(&x)
	}
	return &x
}

// magnitude returns |unscaled| as hi:lo and its sign.
func (d Decimal) magnitude() (hi, lo uint64, neg bool) {
	hi, lo = uint64(d.Hi), d.Lo
	if d.Hi >= 0 {
		return hi, lo, false
	}
	lo, borrow := bits.Sub64(0, lo, 0)
	hi, _ = bits.Sub64(0, hi, borrow)
	return hi, lo, true
}

// Precision returns the number of decimal digits of the unscaled value,
// 1 for zero.
func (d Decimal) Precision() int {
	hi, lo, _ := d.magnitude()
	var digits [40]byte
	return len(appendDigits(digits[:0], hi, lo))
}

// AppendText appends the exact decimal text of d, such as "-12.340" or
// "0.001", with exactly Scale digits after the point and no exponent.
func (d Decimal) AppendText(dst []byte) []byte {
	hi, lo, neg := d.magnitude()
	var buf [40]byte
	digits := appendDigits(buf[:0], hi, lo)
	if neg {
		dst = append(dst, '-')
	}
	scale := int(d.Scale)
	if scale == 0 {
		return append(dst, digits...)
	}
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	point := len(digits) - scale
	dst = append(dst, digits[:point]...)
	dst = append(dst, '.')
	return append(dst, digits[point:]...)
}

// String returns the exact decimal text of d.
func (d Decimal) String() string { return string(d.AppendText(nil)) }

const pow19 = 10_000_000_000_000_000_000 // largest power of ten below 2^64

// appendDigits appends the decimal digits of the unsigned 128-bit hi:lo.
func appendDigits(dst []byte, hi, lo uint64) []byte {
	// Split into base-10^19 limbs, least significant first.
	var limbs [3]uint64
	n := 0
	for hi != 0 {
		var r uint64
		qhi := hi / pow19
		hi, r = qhi, hi%pow19
		lo, r = bits.Div64(r, lo, pow19)
		limbs[n] = r
		n++
	}
	limbs[n] = lo
	var tmp [20]byte
	first := true
	for i := n; i >= 0; i-- {
		s := uitoa(tmp[:], limbs[i])
		if !first {
			for pad := len(s); pad < 19; pad++ {
				dst = append(dst, '0')
			}
		}
		dst = append(dst, s...)
		first = false
	}
	return dst
}

// uitoa formats v into the end of buf and returns the digits.
func uitoa(buf []byte, v uint64) []byte {
	i := len(buf)
	for v >= 10 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	i--
	buf[i] = byte('0' + v)
	return buf[i:]
}
