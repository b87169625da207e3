// Package jsontext renders JSON text: strings and floats, the same way
// wherever pqsink writes JSON (a Parquet value read back, a Variant
// decoded, a record replayed), so that the same value prints the same
// whatever column type held it.
package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. Quotes, backslashes and control
// characters (DEL included) are escaped, \n, \r and \t by name and the
// others as \u00XX; a byte that is not part of valid UTF-8 becomes
// \ufffd, so the text is valid JSON whatever s holds.
func AppendString(dst []byte, s string) []byte {
	// The bytes of s are only read: one escaper serves both forms.
	return AppendStringBytes(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// AppendStringBytes is AppendString of a byte slice, without converting
// it: runs of bytes that need no escaping are copied at once.
func AppendStringBytes(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c >= utf8.RuneSelf:
			dst = append(dst, `\ufffd`...)
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f, of bitSize 32 or 64, as the shortest JSON number
// that reads back to the same value: in decimal notation, or with an
// exponent below 1e-6 and from 1e21 on (1e-7, 1e+21), as JavaScript and
// encoding/json write them. Negative zero is -0.0: -0 reads back as the
// integer 0 in a reader that tells integers from doubles (the Variant
// encoder, DuckDB). NaN and the infinities, which JSON lacks, are the
// strings "NaN", "Infinity" and "-Infinity".
func AppendFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	case f == 0 && math.Signbit(f):
		return append(dst, "-0.0"...)
	}
	abs := math.Abs(f)
	if abs == 0 || abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, bitSize)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, bitSize)
	// Shorten e-07 to e-7, as encoding/json does.
	if n := len(dst); n-start >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}
