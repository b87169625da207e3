package jsonscan

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// Underflows reports whether the JSON number literal lit, whose nearest
// float of bitSize 32 or 64 is f, lost its value below the smallest
// normal float: lit is not zero, and f is zero or a subnormal that is not
// lit's own shortest spelling. A subnormal written as Go and JavaScript
// print it (5e-324) loses nothing its producer had; 1e-400 becomes 0 and
// loses everything. The Variant encoder and the typed shredders refuse
// such a number alike unless asked for lossy numbers.
func Underflows(lit []byte, f float64, bitSize int) bool {
	minNormal := 0x1p-1022
	if bitSize == 32 {
		minNormal = 0x1p-126
	}
	digits, _, _ := normalizeLiteral(lit)
	if len(digits) == 0 || math.Abs(f) >= minNormal {
		return false
	}
	return f == 0 || !sameLiteral(lit, strconv.AppendFloat(nil, f, 'e', -1, bitSize))
}

// sameLiteral reports whether two JSON number literals denote the same
// value, comparing their significant digits and decimal exponents.
func sameLiteral(a, b []byte) bool {
	da, ea, na := normalizeLiteral(a)
	db, eb, nb := normalizeLiteral(b)
	return na == nb && ea == eb && bytes.Equal(da, db)
}

// normalizeLiteral returns the significant digits of a number literal without
// leading or trailing zeros, the decimal exponent of its first digit, and
// its sign.
func normalizeLiteral(lit []byte) (digits []byte, exp int, neg bool) {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		neg = true
		i++
	}
	point := -1
	for ; i < len(lit) && lit[i] != 'e' && lit[i] != 'E'; i++ {
		if lit[i] == '.' {
			point = len(digits)
			continue
		}
		digits = append(digits, lit[i])
	}
	if point < 0 {
		point = len(digits)
	}
	if i < len(lit) {
		e, _ := strconv.Atoi(strings.TrimPrefix(string(lit[i+1:]), "+"))
		point += e
	}
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits = bytes.TrimRight(digits[lead:], "0")
	return digits, point - lead, neg
}
