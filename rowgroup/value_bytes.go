package rowgroup

import (
	"bytes"
	"encoding/base64"
	"errors"
)

var (
	errBase64 = errors.New("not standard padded base64")
	errUUID   = errors.New("not a canonical 8-4-4-4-12 hex UUID")
)

// appendBase64 decodes standard, padded base64 (RFC 4648 section 4) from
// src and appends the bytes to dst. Line breaks, which the decoder of
// encoding/base64 would skip, and non-zero padding bits are rejected so
// that each value has exactly one accepted spelling.
func appendBase64(dst, src []byte) ([]byte, error) {
	if len(src)%4 != 0 || bytes.ContainsAny(src, "\r\n") {
		return dst, errBase64
	}
	enc := base64.StdEncoding.Strict()
	start := len(dst)
	dst = append(dst, make([]byte, enc.DecodedLen(len(src)))...)
	n, err := enc.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], errBase64
	}
	return dst[:start+n], nil
}

// appendUUID parses a canonical UUID string and appends its 16 bytes.
func appendUUID(dst, src []byte) ([]byte, error) {
	if len(src) != 36 || src[8] != '-' || src[13] != '-' || src[18] != '-' || src[23] != '-' {
		return dst, errUUID
	}
	start := len(dst)
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
			continue
		}
		hi, ok1 := unhex(src[i])
		lo, ok2 := unhex(src[i+1])
		if !ok1 || !ok2 {
			return dst[:start], errUUID
		}
		dst = append(dst, hi<<4|lo)
		i += 2
	}
	return dst, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// stringEnd returns the offset just past the closing quote of the JSON
// string that opens at data[start]. The scanner has already validated it.
func stringEnd(data []byte, start int) int {
	for i := start + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// appendCompactJSON appends the valid JSON text src without the whitespace
// between its tokens.
func appendCompactJSON(dst, src []byte) []byte {
	inString := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case inString:
			dst = append(dst, c)
			if c == '\\' && i+1 < len(src) {
				i++
				dst = append(dst, src[i])
			} else if c == '"' {
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if c == '"' {
				inString = true
			}
			dst = append(dst, c)
		}
	}
	return dst
}
