package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// The functions below read single tokens of compact JSON straight from the
// input, without a Scanner. They serve decoders that expect a known shape,
// such as a schema-driven shredder, and that fall back to a Scanner over
// the whole document whenever they meet anything else: each one accepts
// only text that a Scanner accepts as the same token, and reports false
// for anything it does not handle, whether valid or not, leaving both the
// error and the unusual cases to the Scanner.

// Quoted returns the name in quotes as compact JSON spells it, or "" when
// JSON text can only spell it with escapes, which Match never matches.
func (n *MemberName) Quoted() string { return n.quoted }

// PlainString reads the string whose text starts at d[i], after its
// opening quote, and returns the index of its closing quote, when the
// string has no escapes: its bytes d[i:end] are then the string's value.
// It reports false for strings with escapes, control characters or
// invalid UTF-8 and for unterminated ones.
func PlainString(d []byte, i int) (end int, ok bool) {
	for {
		for i+8 <= len(d) {
			if m := stringStops(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto stop
			}
			i += 8
		}
		i = stringStop(d, i)
	stop:
		if i == len(d) {
			return 0, false
		}
		c := d[i]
		if c == '"' {
			return i, true
		}
		if c < utf8.RuneSelf { // '\\' or a control character
			return 0, false
		}
		// A run of non-ASCII bytes, checked as Scanner.validUTF8 does.
		for i < len(d) && d[i] >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, false
			}
			i += size
		}
	}
}

// NumberEnd returns the index after the number that begins at d[i], with
// the grammar of a Scanner, or false when d[i:] does not begin with one.
func NumberEnd(d []byte, i int) (int, bool) {
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && isDigit(d[i]):
		i = digitsEnd(d, i+1)
	default:
		return 0, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i == len(d) || !isDigit(d[i]) {
			return 0, false
		}
		i = digitsEnd(d, i+1)
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i == len(d) || !isDigit(d[i]) {
			return 0, false
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	return i, true
}

// StringStops flags, in the high bit of each byte, the bytes of the
// little-endian word x that end a run of plain string text: '"', '\\',
// control characters and non-ASCII bytes. The lowest flagged byte is
// exact; higher ones may be false positives. Callers that expect short
// strings use it to find the closing quote in the first word inline,
// before calling PlainString.
func StringStops(x uint64) uint64 { return stringStops(x) }

// IsSpace reports whether c is JSON whitespace.
func IsSpace(c byte) bool { return isSpace(c) }
