package jsonscan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// refString is the byte-at-a-time definition of a JSON string that the
// word-at-a-time scanner must agree with: it scans the string opening at
// d[0] and returns its unescaped bytes and the offset after the closing
// quote, or the offset and message of the error.
func refString(d []byte) (str []byte, end int, errOff int, errMsg string) {
	fail := func(off int, format string, args ...any) ([]byte, int, int, string) {
		return nil, 0, off, fmt.Sprintf(format, args...)
	}
	var buf []byte
	for i := 1; i < len(d); {
		c := d[i]
		switch {
		case c == '"':
			return buf, i + 1, -1, ""
		case c == '\\':
			if i+1 == len(d) {
				return fail(len(d), "unexpected end of input in escape sequence")
			}
			e := d[i+1]
			if j := strings.IndexByte(`"\/bfnrt`, e); j >= 0 {
				buf = append(buf, "\"\\/\b\f\n\r\t"[j])
				i += 2
				continue
			}
			if e != 'u' {
				return fail(i, "invalid escape sequence %q in string", d[i:i+2])
			}
			r, ok := hex4(d, i+2)
			if !ok {
				return fail(i, "invalid \\u escape in string, expected 4 hex digits")
			}
			n := 6
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return fail(i, "lone low surrogate \\u%04X in string", r)
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := rune(0), i+7 < len(d) && d[i+6] == '\\' && d[i+7] == 'u'
				if ok {
					if lo, ok = hex4(d, i+8); !ok {
						return fail(i+6, "invalid \\u escape in string, expected 4 hex digits")
					}
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return fail(i, "high surrogate \\u%04X not followed by a low surrogate in string", r)
				}
				r, n = 0x10000+(r-0xD800)<<10+(lo-0xDC00), 12
			}
			buf = utf8.AppendRune(buf, r)
			i += n
		case c < 0x20:
			return fail(i, "invalid control character %#02x in string", c)
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size <= 1 {
				return fail(i, "invalid UTF-8 in string")
			}
			buf = append(buf, d[i:i+size]...)
			i += size
		}
	}
	return fail(0, "unterminated string")
}

// checkString scans the string at the start of doc with a Scanner and
// compares the outcome with refString.
func checkString(t *testing.T, doc []byte) {
	t.Helper()
	if len(doc) == 0 || doc[0] != '"' {
		return
	}
	wantStr, wantEnd, wantOff, wantMsg := refString(doc)
	var s Scanner
	s.Reset(doc)
	k, err := s.Next()
	if wantOff >= 0 {
		var se *SyntaxError
		// The scanner names the offset before what it expected.
		what, expected, found := strings.Cut(wantMsg, ", expected")
		wantMsg = fmt.Sprintf("%s at byte %d", what, wantOff)
		if found {
			wantMsg += ", expected" + expected
		}
		if !errors.As(err, &se) || se.Offset != wantOff || se.Msg != wantMsg {
			t.Fatalf("%q: got %v, %v; want error %q at byte %d", doc, k, err, wantMsg, wantOff)
		}
		return
	}
	if err != nil || k != String || !bytes.Equal(s.Bytes(), wantStr) {
		t.Fatalf("%q: got %v %q, %v; want String %q", doc, k, s.Bytes(), err, wantStr)
	}
	// The scan goes on right after the closing quote.
	_, err = s.Next()
	rest := bytes.TrimLeft(doc[wantEnd:], " \t\r\n")
	var se *SyntaxError
	switch {
	case len(rest) == 0 && err != io.EOF:
		t.Fatalf("%q: after the string: %v, want io.EOF", doc, err)
	case len(rest) > 0 && (!errors.As(err, &se) || se.Offset != len(doc)-len(rest)):
		t.Fatalf("%q: after the string: %v, want an error at byte %d", doc, err, len(doc)-len(rest))
	}
}

// TestStringWordBoundaries puts every kind of byte that ends a run of
// plain text at every position of strings around the 8-byte words, with
// and without bytes after the string, so that the word-at-a-time scan is
// checked at each boundary against refString.
func TestStringWordBoundaries(t *testing.T) {
	specials := []string{`"`, `\`, `\n`, `\u00e9`, `\ud83d\udc22`, `\ud83d`, `\x`, "\x00", "\x1f", "\x7f",
		"é", "\U0001F422", "\xff", "\xc3", "\xed\xa0\x80", "\xe2\x82"}
	for n := 0; n <= 20; n++ {
		for at := 0; at <= n; at++ {
			for _, sp := range specials {
				body := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				for _, tail := range []string{``, `"`, `" `, `"xyzxyzxyz`, `"          `} {
					checkString(t, []byte(`"`+body+tail))
				}
			}
		}
	}
}

func FuzzString(f *testing.F) {
	for _, seed := range []string{`"abc"`, `"a\"b"`, `"\u00e9\ud83d\udc22"`, "\"ab\xffcd\"", `"0123456789abcdef\n"`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkString(t, append([]byte{'"'}, data...))
	})
}
