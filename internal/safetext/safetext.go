// Package safetext renders untrusted text (field names, values, whole
// lines of input, names read from a file) for error messages and logs:
// control characters and invalid UTF-8 escaped, so that an ESC sequence
// in a record never reaches a terminal, and long text cut short, so that a
// 10 MB key does not make a 10 MB line of stderr.
package safetext

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxQuoted is how many bytes of a name or value Quote keeps: enough for
// any real field name, short enough for one line of a terminal.
const MaxQuoted = 200

// MaxMessage is how many bytes of an error message Clean keeps.
const MaxMessage = 4096

// Quote returns s in double quotes as Go would quote it, printable UTF-8
// kept as it is (so "ü" stays ü), everything else escaped, and cut to
// MaxQuoted bytes of s with the total length noted.
func Quote(s string) string {
	return QuoteN(s, MaxQuoted)
}

// QuoteN is Quote keeping at most max bytes of s.
func QuoteN(s string, max int) string {
	cut, rest := truncate(s, max)
	q := strconv.Quote(cut)
	if rest > 0 {
		q += "… (" + strconv.Itoa(len(s)) + " bytes)"
	}
	return q
}

// Clean returns an error message with its control characters (but tabs)
// and invalid UTF-8 escaped as in Go strings, cut to MaxMessage bytes.
// Messages are text meant for a person; Clean keeps them readable while
// making sure that what they echo of the input is inert.
func Clean(s string) string {
	cut, rest := truncate(s, MaxMessage)
	if rest == 0 && isClean(s) {
		return s
	}
	b := make([]byte, 0, len(cut)+16)
	for i := 0; i < len(cut); {
		r, size := utf8.DecodeRuneInString(cut[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\x`...)
			b = append(b, "0123456789abcdef"[cut[i]>>4], "0123456789abcdef"[cut[i]&0xf])
		case r == '\t' || unicode.IsPrint(r) || r == ' ':
			b = append(b, cut[i:i+size]...)
		default:
			q := strconv.QuoteRune(r)
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	if rest > 0 {
		b = append(b, "… ("...)
		b = strconv.AppendInt(b, int64(rest), 10)
		b = append(b, " more bytes)"...)
	}
	return string(b)
}

func isClean(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || (r != '\t' && r != ' ' && !unicode.IsPrint(r)) {
			return false
		}
	}
	return true
}

// truncate cuts s to at most max bytes on a rune boundary, returning the
// bytes left out.
func truncate(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := max
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s) - n
}

// Error wraps err so that its message is Clean. errors.Is and errors.As see
// through it.
func Error(err error) error {
	if err == nil {
		return nil
	}
	return cleanError{err}
}

type cleanError struct{ err error }

func (e cleanError) Error() string { return Clean(e.err.Error()) }
func (e cleanError) Unwrap() error { return e.err }
