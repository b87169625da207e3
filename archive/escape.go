package archive

import (
	"fmt"
	"strings"
)

// HiveNull is the path value of a field that is absent, null or empty, as
// Hive and Spark write it, so that query engines read the partition as
// NULL.
const HiveNull = "__HIVE_DEFAULT_PARTITION__"

// escaped are the bytes, beside control bytes, that a path value holds
// percent-encoded.
const escaped = `/\%:=#?{}[]"'*^<>|` + "`"

// AppendEscaped appends s with every byte that could change the shape of
// a key percent-encoded, as Hive escapes partition values: separators,
// characters S3 and shells treat specially, control bytes, and a value of
// "." or ".." as a whole. An empty s is HiveNull.
func AppendEscaped(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, HiveNull...)
	}
	if s == "." || s == ".." {
		for range len(s) {
			dst = append(dst, "%2E"...)
		}
		return dst
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(escaped, c) >= 0 {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// Escape is AppendEscaped to a string: s as one safe key segment.
func Escape(s string) string { return string(AppendEscaped(nil, s)) }

// Unescape reverses Escape: it returns the value an escaped path value
// stands for, and null true for HiveNull (an absent, null or empty
// field). A '%' not followed by two hexadecimal digits is an error.
func Unescape(s string) (value string, null bool, err error) {
	if s == HiveNull {
		return "", true, nil
	}
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s, false, nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		var hi, lo byte
		ok := i+2 < len(s)
		if ok {
			var okLo bool
			hi, ok = unhex(s[i+1])
			lo, okLo = unhex(s[i+2])
			ok = ok && okLo
		}
		if !ok {
			return "", false, fmt.Errorf("path value %q: '%%' at %d is not followed by two hexadecimal digits", s, i)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), false, nil
}

// unhex is the value of a hexadecimal digit.
func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
