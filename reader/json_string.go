package reader

import (
	"encoding/binary"

	"github.com/pqsink/pqsink/internal/jsontext"
)

// appendJSONString appends s as jsontext.AppendStringBytes does, byte for
// byte. The strings of records are mostly printable ASCII with nothing to
// escape (names, codes, ids): those are told eight bytes at a time and
// copied whole; any other goes to jsontext.
func appendJSONString(dst, s []byte) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if needsEscape(binary.LittleEndian.Uint64(s[i:])) {
			return jsontext.AppendStringBytes(dst, s)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return jsontext.AppendStringBytes(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// needsEscape reports that one of the eight bytes of x is below 0x20, 0x7f
// or above, '"' or '\\': a byte jsontext does not copy as it is.
func needsEscape(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// The classic tests, exact for each byte: hasless(x, n) finds a
	// byte below n, hasmore(x, n) one above n (n < 128), and haszero(y)
	// a zero byte of y.
	below := (x - ones*0x20) & ^x & highs
	above := ((x + ones*(127-0x7e)) | x) & highs
	q := x ^ (ones * '"')
	quote := (q - ones) & ^q & highs
	b := x ^ (ones * '\\')
	backslash := (b - ones) & ^b & highs
	return below|above|quote|backslash != 0
}
