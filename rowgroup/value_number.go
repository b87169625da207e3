package rowgroup

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// Reasons a number literal cannot become a column value. The shredder wraps
// them with the literal and the column type.
var (
	errNotNumber  = errors.New("not a valid JSON number")
	errNotInteger = errors.New("not an integer")
	errRange      = errors.New("out of range")
	errFraction   = errors.New("too many fractional digits")
	// errUnderflow comes with the float it rounds to: the literal is not
	// zero but lies below what the float type holds (jsonscan.Underflows).
	errUnderflow = errors.New("underflows")
)

// maxExponent bounds the exponent kept while parsing a literal. Anything
// larger already overflows every column type (the longest decimal has a few
// hundred digits), and saturating keeps the arithmetic in int.
const maxExponent = 1 << 24

// decimalLiteral is a JSON number split into the parts that exact
// conversion needs. Its value is ±digits × 10^exp, where digits are the
// significant digits of the literal (no leading or trailing zeros) and
// zero is an empty digit string.
type decimalLiteral struct {
	neg      bool
	intPart  []byte // digits before the point, as written
	fracPart []byte // digits after the point, as written
	lead     int    // leading zeros of intPart+fracPart
	trail    int    // trailing zeros of intPart+fracPart
	exp      int    // exponent of the last significant digit
}

// parseDecimalLiteral parses b with the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// It works on sub-slices of b and never allocates.
func parseDecimalLiteral(b []byte) (d decimalLiteral, ok bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	start := i
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	if i == start || (b[start] == '0' && i-start > 1) {
		return d, false
	}
	d.intPart = b[start:i]
	if i < len(b) && b[i] == '.' {
		i++
		start = i
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		if i == start {
			return d, false
		}
		d.fracPart = b[start:i]
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		negExp := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			negExp = b[i] == '-'
			i++
		}
		start = i
		for i < len(b) && isDigit(b[i]) {
			if exp < maxExponent {
				exp = exp*10 + int(b[i]-'0')
			}
			i++
		}
		if i == start {
			return d, false
		}
		if negExp {
			exp = -exp
		}
	}
	if i != len(b) {
		return d, false
	}
	n := d.numDigits()
	for d.lead < n && d.digit(d.lead) == '0' {
		d.lead++
	}
	for d.trail < n-d.lead && d.digit(n-1-d.trail) == '0' {
		d.trail++
	}
	d.exp = exp - len(d.fracPart) + d.trail
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d *decimalLiteral) numDigits() int { return len(d.intPart) + len(d.fracPart) }

// digit returns digit i of intPart+fracPart.
func (d *decimalLiteral) digit(i int) byte {
	if i < len(d.intPart) {
		return d.intPart[i]
	}
	return d.fracPart[i-len(d.intPart)]
}

// significant returns the number of significant digits; 0 means the value
// is zero.
func (d *decimalLiteral) significant() int {
	n := d.numDigits() - d.lead - d.trail
	if n < 0 {
		return 0
	}
	return n
}

// sigDigit returns significant digit i, or '0' past the significant ones,
// which is how a value is scaled up by a positive exponent.
func (d *decimalLiteral) sigDigit(i int) byte {
	if i < d.significant() {
		return d.digit(d.lead + i)
	}
	return '0'
}

// magnitude returns |value| × 10^shift as a uint64 when it is an integer
// that fits, with errFraction when non-zero digits would be cut off and
// errRange when it does not fit in maxDigits digits or 64 bits.
func (d *decimalLiteral) magnitude(shift, maxDigits int) (uint64, error) {
	sig := d.significant()
	if sig == 0 {
		return 0, nil
	}
	e := d.exp + shift
	if e < 0 {
		return 0, errFraction
	}
	n := sig + e
	if n > maxDigits || n > 20 {
		return 0, errRange
	}
	var v uint64
	for i := 0; i < n; i++ {
		hi, lo := bits.Mul64(v, 10)
		if hi != 0 {
			return 0, errRange
		}
		v, hi = bits.Add64(lo, uint64(d.sigDigit(i)-'0'), 0)
		if hi != 0 {
			return 0, errRange
		}
	}
	return v, nil
}

// intRange is the set of integers a column accepts: [-neg, pos].
type intRange struct {
	neg uint64 // largest magnitude of a negative value
	pos uint64 // largest positive value
}

// parseInteger converts a JSON number literal to an integer in r, exactly:
// 1.0 and 1e2 are integers, 1.5 is not. It returns the two's complement bit
// pattern, so unsigned 64-bit values above 2^63-1 come back negative.
func parseInteger(b []byte, r intRange) (int64, error) {
	if m, neg, ok := plainInteger(b); ok {
		if neg && m > r.neg || !neg && m > r.pos {
			return 0, errRange
		}
		if neg {
			return -int64(m), nil
		}
		return int64(m), nil
	}
	return parseDecimalInteger(b, r)
}

// parseDecimalInteger is parseInteger for any literal, through the
// decimal split.
func parseDecimalInteger(b []byte, r intRange) (int64, error) {
	d, ok := parseDecimalLiteral(b)
	if !ok {
		return 0, errNotNumber
	}
	m, err := d.magnitude(0, 20)
	if err == errFraction {
		return 0, errNotInteger
	}
	if err != nil {
		return 0, err
	}
	if d.neg && m > r.neg || !d.neg && m > r.pos {
		return 0, errRange
	}
	v := int64(m)
	if d.neg {
		v = -v
	}
	return v, nil
}

// plainInteger parses the common integer spelling, -?(0|[1-9][0-9]*) with
// at most 19 digits, which cannot overflow a uint64. Anything else (a
// fraction, an exponent, more digits, a syntax error) is left to the
// general path by returning ok false.
func plainInteger(b []byte) (m uint64, neg, ok bool) {
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || b[0] == '0' && len(b) > 1 {
		return 0, false, false
	}
	for _, c := range b {
		c -= '0'
		if c > 9 {
			return 0, false, false
		}
		m = m*10 + uint64(c)
	}
	return m, neg, true
}

// decimalScratch holds the big integers of the decimal conversions that
// need more than 64 bits, reused between values.
type decimalScratch struct {
	v, t, chunk big.Int
}

// appendDecimal converts the literal b to the unscaled integer of
// DECIMAL(precision, scale), exactly and without floating point, and appends
// it big-endian two's complement: sign-extended to size bytes when fixed
// (FIXED_LEN_BYTE_ARRAY), in the fewest bytes otherwise (BYTE_ARRAY).
// INT32 and INT64 decimals use parseDecimalInt instead.
//
// Fractional digits beyond scale are an error unless they are zeros, and so
// is a value of more than precision digits. math/big is used only when the
// precision exceeds 18 digits.
func appendDecimal(dst, b []byte, precision, scale int32, size int, fixed bool, z *decimalScratch) ([]byte, error) {
	d, ok := parseDecimalLiteral(b)
	if !ok {
		return dst, errNotNumber
	}
	if precision <= 18 {
		m, err := d.magnitude(int(scale), int(precision))
		if err != nil {
			return dst, err
		}
		v := int64(m)
		if d.neg {
			v = -v
		}
		if !fixed {
			size = minTwosComplementLen(v)
		}
		return appendInt64BE(dst, v, size), nil
	}
	sig := d.significant()
	if sig == 0 {
		if !fixed {
			size = 1
		}
		return appendZeros(dst, size), nil
	}
	e := d.exp + int(scale)
	if e < 0 {
		return dst, errFraction
	}
	n := sig + e
	if n > int(precision) {
		return dst, errRange
	}
	// Accumulate 18 digits at a time so the big.Int words are reused and
	// no decimal string is built.
	v := &z.v
	v.SetUint64(0)
	for i := 0; i < n; {
		k := min(18, n-i)
		var c uint64
		for j := 0; j < k; j++ {
			c = c*10 + uint64(d.sigDigit(i+j)-'0')
		}
		z.t.SetUint64(pow10[k])
		v.Mul(v, &z.t)
		z.chunk.SetUint64(c)
		v.Add(v, &z.chunk)
		i += k
	}
	if d.neg {
		v.Neg(v)
	}
	return appendBigTwos(dst, v, size, fixed, &z.t), nil
}

// parseDecimalInt converts the literal b to the unscaled integer of a
// DECIMAL(precision, scale) stored in INT32 or INT64 (precision <= 18).
func parseDecimalInt(b []byte, precision, scale int32) (int64, error) {
	if v, ok := plainDecimalInt(b, precision, scale); ok {
		return v, nil
	}
	return decimalIntFromLiteral(b, precision, scale)
}

// decimalIntFromLiteral is parseDecimalInt for any literal, through the
// decimal split.
func decimalIntFromLiteral(b []byte, precision, scale int32) (int64, error) {
	d, ok := parseDecimalLiteral(b)
	if !ok {
		return 0, errNotNumber
	}
	m, err := d.magnitude(int(scale), int(precision))
	if err != nil {
		return 0, err
	}
	v := int64(m)
	if d.neg {
		v = -v
	}
	return v, nil
}

// plainDecimalInt is parseDecimalInt for the common spelling
// -?(0|[1-9][0-9]*)(\.[0-9]+)? with at most scale fraction digits and at
// most 18 digits once scaled, whose value is within precision. It reports
// ok false for anything else, errors included, and leaves those to the
// general path.
func plainDecimalInt(b []byte, precision, scale int32) (v int64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || b[0] == '0' && len(b) > 1 && b[1] != '.' {
		return 0, false
	}
	var m uint64
	digits, frac := 0, -1 // frac counts digits after the point, -1 before it
	for _, c := range b {
		if c == '.' && frac < 0 && digits > 0 {
			frac = 0
			continue
		}
		c -= '0'
		if c > 9 {
			return 0, false
		}
		m = m*10 + uint64(c)
		digits++
		if frac >= 0 {
			frac++
		}
	}
	if frac == 0 {
		return 0, false
	}
	frac = max(frac, 0)
	shift := int(scale) - frac
	if shift < 0 || digits+shift > 18 {
		return 0, false
	}
	m *= pow10[shift]
	if m >= pow10[precision] {
		return 0, false
	}
	if neg {
		return -int64(m), true
	}
	return int64(m), true
}

var pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// minTwosComplementLen is the fewest bytes that hold v in two's complement.
func minTwosComplementLen(v int64) int {
	u := uint64(v)
	if v < 0 {
		u = ^u // the same count of significant bits as v has below its sign
	}
	return bits.Len64(u)/8 + 1
}

// appendInt64BE appends v big-endian in n bytes, sign-extended when n > 8.
func appendInt64BE(dst []byte, v int64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		shift := uint(i) * 8
		if shift >= 64 {
			dst = append(dst, byte(v>>63))
			continue
		}
		dst = append(dst, byte(v>>shift))
	}
	return dst
}

func appendZeros(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, 0)
	}
	return dst
}

// appendBigTwos appends v big-endian two's complement: in exactly size
// bytes when fixed (the caller has checked that it fits), otherwise in the
// fewest bytes. t is scratch.
func appendBigTwos(dst []byte, v *big.Int, size int, fixed bool, t *big.Int) []byte {
	if !fixed {
		if v.Sign() >= 0 {
			size = v.BitLen()/8 + 1
		} else {
			// -m fits in n bytes when m-1 < 2^(8n-1).
			t.Not(v) // -v-1
			size = t.BitLen()/8 + 1
		}
	}
	start := len(dst)
	dst = appendZeros(dst, size)
	if v.Sign() >= 0 {
		v.FillBytes(dst[start:])
		return dst
	}
	// 2^(8·size) + v, the two's complement of a negative v.
	t.SetInt64(1)
	t.Lsh(t, uint(8*size))
	t.Add(t, v)
	t.FillBytes(dst[start:])
	return dst
}

// parseFloat converts a JSON number literal, or one of the strings "NaN",
// "Infinity" and "-Infinity", to a float of bitSize 32 or 64. Overflow is an
// error; a value that underflows (1e-400 for a double) is errUnderflow, with
// the float IEEE 754 rounding gives, for callers that take lossy numbers.
func parseFloat(b []byte, bitSize int) (float64, error) {
	if v, ok := specialFloat(b); ok {
		return v, nil
	}
	if _, ok := parseDecimalLiteral(b); !ok {
		return 0, errNotNumber
	}
	return parseNumber(b, bitSize)
}

// parseNumber is parseFloat for a literal already known to follow the JSON
// number grammar, such as a Number token of the scanner.
func parseNumber(b []byte, bitSize int) (float64, error) {
	if bitSize == 64 {
		if v, ok := exactFloat64(b); ok {
			return v, nil
		}
	}
	v, err := strconv.ParseFloat(string(b), bitSize)
	if err != nil && math.IsInf(v, 0) {
		return 0, errRange
	}
	minNormal := 0x1p-1022
	if bitSize == 32 {
		minNormal = 0x1p-126
	}
	if math.Abs(v) < minNormal && jsonscan.Underflows(b, v, bitSize) {
		return v, errUnderflow
	}
	return v, nil
}

// exactFloat64 converts the common literals -?d+(.d+)? of at most 19
// digits (not counting the 0 of 0.ddd), correctly rounded: the result strconv.ParseFloat gives, at a
// fraction of its cost. Other literals (exponents, more digits) report ok
// false. b must follow the JSON number grammar.
//
// The digits, as an integer m < 10^19, and 10^f for f fraction digits are
// both exact uint64 values. When m <= 2^53 they are exact float64 values
// too, and one IEEE division rounds m/10^f correctly. Otherwise a 128-bit
// division gives the leading 63 or 64 bits of the quotient and whether
// anything remains, which is enough to round to 53 bits by hand.
func exactFloat64(b []byte) (v float64, ok bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 21 { // 0, a point and 19 digits
		return 0, false
	}
	m, i := parseDigits(b, 0, 0)
	if i == 0 {
		return 0, false
	}
	f := 0 // fraction digits
	if i < len(b) {
		if b[i] != '.' {
			return 0, false
		}
		var j int
		if m, j = parseDigits(b, i+1, m); j != len(b) || j == i+1 {
			return 0, false
		}
		f = j - i - 1
	}
	n := i + f // digits in m
	if i == 1 && b[0] == '0' {
		n = f // "0.ddd": the zero is not one
	}
	if n > 19 || f > 19 {
		return 0, false // m may have wrapped, or 10^f does not fit
	}
	return decimalFloat64(m, f, neg), true
}

// decimalFloat64 returns ±m/10^f correctly rounded, for m < 10^19 and
// f <= 19: the last step of exactFloat64, shared with the shredder's fast
// path so that both give the same bits.
func decimalFloat64(m uint64, f int, neg bool) float64 {
	var v float64
	if m <= 1<<53 {
		v = float64(m)
		if f > 0 {
			v /= float64Pow10[f]
		}
	} else {
		v = divideRounded(m, uint64Pow10[f])
	}
	if neg {
		v = -v
	}
	return v
}

// parseDigits reads the decimal digits of b from i on into m (m*10+digit
// each, wrapping on overflow) and returns m and the index of the first
// byte that is not a digit. Eight digits at a time, as one word, and the
// digits of the last word too, where b holds 8 bytes from them, without
// a loop whose end depends on the number.
func parseDigits(b []byte, i int, m uint64) (uint64, int) {
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		// The high bit of each byte that is not '0'..'9': below '0' the
		// subtraction borrows, above '9' the addition carries into it, and
		// it is set in bytes above 0x7f. The lowest one is exact; those
		// above it may come from a borrow or a carry.
		if stops := ((x - 0x3030303030303030) | (x + 0x4646464646464646) | x) & 0x8080808080808080; stops != 0 {
			n := bits.TrailingZeros64(stops) >> 3
			// The n digits moved to the top of the word, zeros below
			// them: the bytes past them, which may have borrowed, are gone.
			x = (x - 0x3030303030303030) << (64 - 8*n)
			x = (x*10 + x>>8) & 0x00ff00ff00ff00ff   // pairs of digits
			x = (x*100 + x>>16) & 0x0000ffff0000ffff // groups of four
			x = (x*10000 + x>>32) & 0xffffffff
			return m*uint64Pow10[n] + x, i + n
		}
		x -= 0x3030303030303030
		x = (x*10 + x>>8) & 0x00ff00ff00ff00ff
		x = (x*100 + x>>16) & 0x0000ffff0000ffff
		x = (x*10000 + x>>32) & 0xffffffff
		m = m*100000000 + x
		i += 8
	}
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		m = m*10 + uint64(c)
	}
	return m, i
}

// divideRounded returns m/d rounded to the nearest float64, ties to even,
// for 2^53 < m < 2^64 and 1 <= d <= 10^19, where the quotient is a normal
// number.
func divideRounded(m, d uint64) float64 {
	// q = floor(m·2^s / d) with 2^62 <= q < 2^64: m·2^s < 2^(63+len(d)),
	// which is below d·2^64, so the division cannot overflow.
	s := 63 - bits.Len64(m) + bits.Len64(d) // 0 <= s <= 63+64
	var hi, lo uint64
	switch {
	case s >= 64:
		hi = m << (s - 64)
	case s > 0:
		hi, lo = m>>(64-s), m<<s
	default:
		lo = m
	}
	q, r := bits.Div64(hi, lo, d)
	k := bits.Len64(q) - 53 // bits to drop, 10 or 11
	mant := q >> k
	low, half := q&(1<<k-1), uint64(1)<<(k-1)
	if low > half || low == half && (r != 0 || mant&1 == 1) {
		mant++ // at most 2^53, still exact
	}
	// mant·2^(k-s), with k-s between -127 and 11: the power of two is a
	// normal float64 and the product is exact.
	return float64(mant) * math.Float64frombits(uint64(1023+k-s)<<52)
}

// float64Pow10 holds the powers of ten that are exact float64 values and
// that exactFloat64 needs.
var float64Pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// uint64Pow10 holds the powers of ten up to 10^19, the largest in a uint64.
var uint64Pow10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// specialFloat recognizes the strings that stand for the IEEE 754 values
// JSON numbers cannot express.
func specialFloat(b []byte) (float64, bool) {
	switch string(b) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	return 0, false
}

// Binary16 constants.
const (
	f16Inf    = 0x7c00
	f16NaN    = 0x7e00
	f16Sign   = 0x8000
	f16MaxExp = 15 // largest unbiased exponent of a finite value
	f16MinExp = -14
)

// parseFloat16 converts a JSON number literal (or "NaN", "Infinity",
// "-Infinity") to IEEE 754 binary16 bits, rounding to nearest, ties to
// even, from the exact decimal value. A finite literal that rounds beyond
// the largest finite binary16 (65504) is an error, not infinity.
func parseFloat16(b []byte) (uint16, error) {
	if v, ok := specialFloat(b); ok {
		switch {
		case math.IsNaN(v):
			return f16NaN, nil
		case v > 0:
			return f16Inf, nil
		}
		return f16Sign | f16Inf, nil
	}
	d, ok := parseDecimalLiteral(b)
	if !ok {
		return 0, errNotNumber
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, errRange
	}
	var sign uint16
	if d.neg {
		sign = f16Sign
	}
	a := math.Abs(v)
	if a == 0 {
		return sign, nil
	}
	_, e := math.Frexp(a) // a = f × 2^e, f in [0.5, 1)
	e--                   // a = f' × 2^e, f' in [1, 2)
	if e < f16MinExp {
		e = f16MinExp // subnormal: the spacing is that of the smallest exponent
	}
	// m is a scaled so that one unit is one binary16 ulp; exact in float64.
	m := math.Ldexp(a, 10-e)
	r := math.RoundToEven(m)
	if m-math.Floor(m) == 0.5 {
		// a sits exactly between two binary16 values, but the decimal may
		// not: float64 rounding can have moved it onto the midpoint.
		r = roundMidpoint(b, a, m)
	}
	mant := uint64(r)
	if mant >= 2048 { // rounding carried into the next binade
		mant >>= 1
		e++
	}
	if e > f16MaxExp {
		return 0, errRange
	}
	if mant < 1024 { // subnormal (or zero after rounding down)
		return sign | uint16(mant), nil
	}
	return sign | uint16(e+15)<<10 | uint16(mant-1024), nil
}

// roundMidpoint decides the rounding of a value whose float64 image a is a
// binary16 midpoint (m is a in ulps, ending in .5), comparing the exact
// decimal literal with a. Rare, so it may allocate.
func roundMidpoint(b []byte, a, m float64) float64 {
	exact, ok := new(big.Rat).SetString(string(b))
	if !ok {
		return math.RoundToEven(m)
	}
	exact.Abs(exact)
	switch exact.Cmp(new(big.Rat).SetFloat64(a)) {
	case 1:
		return math.Ceil(m)
	case -1:
		return math.Floor(m)
	}
	return math.RoundToEven(m)
}
