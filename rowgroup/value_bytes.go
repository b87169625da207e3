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

// uuidHex holds the offsets of the 16 hex digit pairs of a canonical UUID.
const uuidHex = "\x00\x02\x04\x06\x09\x0b\x0e\x10\x13\x15\x18\x1a\x1c\x1e\x20\x22"

// appendUUID parses a canonical UUID string and appends its 16 bytes.
func appendUUID(dst, src []byte) ([]byte, error) {
	if len(src) != 36 || src[8] != '-' || src[13] != '-' || src[18] != '-' || src[23] != '-' {
		return dst, errUUID
	}
	var u [16]byte
	ok := true
	for i := range u {
		j := uuidHex[i]
		hi, ok1 := unhex(src[j])
		lo, ok2 := unhex(src[j+1])
		ok = ok && ok1 && ok2
		u[i] = hi<<4 | lo
	}
	if !ok {
		return dst, errUUID
	}
	return append(dst, u[:]...), nil
}

// unhex decodes a hex digit. Random hex mixes digits and letters, so it
// selects rather than branches on which one c is.
func unhex(c byte) (byte, bool) {
	d := c - '0'
	l := (c | 0x20) - 'a' // either case
	v := l + 10
	if d <= 9 {
		v = d
	}
	return v, d <= 9 || l <= 5
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
