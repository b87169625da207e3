package reader

import (
	"math"

	"github.com/pqsink/pqsink/internal/jsontext"
)

// appendDouble appends f as jsontext.AppendFloat(dst, f, 64) does, byte
// for byte, faster for the doubles that have a short decimal form with
// few decimals (prices, rates, measurements: 1546.72, 0.5, 3).
//
// jsontext writes the shortest decimal that reads back as f, in fixed
// notation for 1e-6 <= |f| < 1e21. When m / 10^k rounds to |f| for some
// integer m < 2^50 and k <= maxFastDecimals, with k the least such, that
// decimal is m·10^-k: the doubles near |f| are less than 10^-k/4 apart
// (|f| < 2^50·10^-k), so m·10^-k is the only multiple of 10^-k that
// rounds to |f|, and any other decimal that does has more decimals, so
// more digits. m and 10^k are exact doubles and IEEE division rounds
// correctly, so float64(m)/10^k == |f| is the exact test. Anything else
// takes jsontext's path.
func appendDouble(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	x := abs * fastScale
	if !(abs >= 1e-6 && x < 1<<50) { // NaN, infinities, zeros, tiny, large
		return jsontext.AppendFloat(dst, f, 64)
	}
	// If m·10^-k rounds to abs, with k <= maxFastDecimals the least, x
	// is within x·2^-52 of m·10^(maxFastDecimals-k), so that integer is
	// the nearest to x (x+0.5 is exact below 2^50), and m and k are it
	// without its trailing zeros. The division checks the candidate;
	// a double that fails it (a random fraction, say) takes the general
	// path, which is always right.
	u, k, p := uint64(x+0.5), maxFastDecimals, uint64(fastScale)
	for k > 0 && u%10 == 0 {
		u, k, p = u/10, k-1, p/10
	}
	if float64(u)/float64(p) != abs {
		return jsontext.AppendFloat(dst, f, 64)
	}
	if f < 0 {
		dst = append(dst, '-')
	}
	return appendFixed(dst, u, k, p)
}

// maxFastDecimals bounds the decimals of the doubles appendDouble writes
// itself.
const (
	maxFastDecimals = 4
	fastScale       = 1e4 // 10^maxFastDecimals
)

// appendFixed appends u·10^-k in fixed notation, p being 10^k: the
// integer part, and for k > 0 a point and k decimals.
func appendFixed(dst []byte, u uint64, k int, p uint64) []byte {
	if k == 0 {
		return appendUint(dst, u)
	}
	dst = appendUint(dst, u/p)
	// The decimals, zeros in front, as the digits of p+u%p but its 1.
	at := len(dst)
	dst = appendUint(dst, p+u%p)
	dst[at] = '.'
	return dst
}
