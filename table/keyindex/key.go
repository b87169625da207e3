package keyindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The canonical key encoding. A row key is the values of the table's key
// fields, in the order table.key lists them, each appended by one of the
// Append functions below. Each value is a tag byte followed by a body:
//
//	tagBool   0x01  one byte, 0 or 1
//	tagInt    0x02  8 bytes, big-endian, sign bit flipped
//	tagFloat  0x03  8 bytes: the IEEE 754 bits, all flipped for a negative
//	                number, the sign bit alone flipped otherwise; -0 is
//	                written as +0 and every NaN as one NaN
//	tagString 0x04  the UTF-8 bytes with each 0x00 written 0x00 0xFF, then
//	                0x00 0x01
//	tagBytes  0x05  as tagString
//	tagUUID   0x06  the 16 bytes
//
// The encoding is canonical (one value has one encoding, and equal keys
// are equal bytes), self-delimiting (a sequence of values decodes without
// knowing the fields), and it orders keys as their values order, field by
// field. Values are encoded by Iceberg type family, not by width, so a key
// stays the same across Iceberg's type promotions: int and long (and date,
// as days, time and timestamps, in their unit) are AppendInt; float and
// double are AppendFloat.

const (
	tagBool   = 0x01
	tagInt    = 0x02
	tagFloat  = 0x03
	tagString = 0x04
	tagBytes  = 0x05
	tagUUID   = 0x06
)

// AppendBool appends the canonical encoding of a boolean key field to dst.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, tagBool, 1)
	}
	return append(dst, tagBool, 0)
}

// AppendInt appends the canonical encoding of an integer key field (Iceberg
// int, long, date, time, timestamp) to dst.
func AppendInt(dst []byte, v int64) []byte {
	dst = append(dst, tagInt)
	return binary.BigEndian.AppendUint64(dst, uint64(v)^(1<<63))
}

// AppendFloat appends the canonical encoding of a floating-point key field
// (Iceberg float, double) to dst. A float32 is widened first, so that
// float and double keys of one value agree.
func AppendFloat(dst []byte, v float64) []byte {
	if v == 0 {
		v = 0 // -0 and +0 are one key
	}
	bits := math.Float64bits(v)
	if math.IsNaN(v) {
		bits = 0x7ff8000000000001
	}
	if bits&(1<<63) != 0 {
		bits = ^bits
	} else {
		bits |= 1 << 63
	}
	dst = append(dst, tagFloat)
	return binary.BigEndian.AppendUint64(dst, bits)
}

// AppendString appends the canonical encoding of a string key field to dst.
func AppendString(dst []byte, v string) []byte {
	dst = append(dst, tagString)
	return appendEscaped(dst, v)
}

// AppendBytes appends the canonical encoding of a binary or fixed key field
// to dst.
func AppendBytes(dst []byte, v []byte) []byte {
	dst = append(dst, tagBytes)
	return appendEscaped(dst, v)
}

// AppendUUID appends the canonical encoding of a UUID key field to dst.
func AppendUUID(dst []byte, v [16]byte) []byte {
	dst = append(dst, tagUUID)
	return append(dst, v[:]...)
}

func appendEscaped[S string | []byte](dst []byte, v S) []byte {
	for i := 0; i < len(v); i++ {
		if v[i] == 0 {
			dst = append(dst, 0, 0xFF)
		} else {
			dst = append(dst, v[i])
		}
	}
	return append(dst, 0, 1)
}

// UUID is a decoded UUID key field.
type UUID [16]byte

// DecodeKey returns the field values of a key in canonical encoding, as
// bool, int64, float64, string, []byte or UUID, for messages and tools. It
// returns an error, never panics, on bytes that are not such a key.
func DecodeKey(key []byte) ([]any, error) {
	var vals []any
	for pos := 0; pos < len(key); {
		tag := key[pos]
		body := key[pos+1:]
		switch tag {
		case tagBool:
			if len(body) < 1 || body[0] > 1 {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: a bool is one byte, 0 or 1", len(vals), pos)
			}
			vals = append(vals, body[0] == 1)
			pos += 2
		case tagInt:
			if len(body) < 8 {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: an int needs 8 bytes, %d left", len(vals), pos, len(body))
			}
			vals = append(vals, int64(binary.BigEndian.Uint64(body)^(1<<63)))
			pos += 9
		case tagFloat:
			if len(body) < 8 {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: a float needs 8 bytes, %d left", len(vals), pos, len(body))
			}
			bits := binary.BigEndian.Uint64(body)
			if bits&(1<<63) != 0 {
				bits &^= 1 << 63
			} else {
				bits = ^bits
			}
			v := math.Float64frombits(bits)
			if !bytesEqual(AppendFloat(nil, v)[1:], body[:8]) {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: a float not in canonical form", len(vals), pos)
			}
			vals = append(vals, v)
			pos += 9
		case tagString, tagBytes:
			raw, n, err := unescape(body)
			if err != nil {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: %w", len(vals), pos, err)
			}
			if tag == tagString {
				vals = append(vals, string(raw))
			} else {
				vals = append(vals, raw)
			}
			pos += 1 + n
		case tagUUID:
			if len(body) < 16 {
				return nil, fmt.Errorf("keyindex: key field %d at byte %d: a UUID needs 16 bytes, %d left", len(vals), pos, len(body))
			}
			vals = append(vals, UUID(body[:16]))
			pos += 17
		default:
			return nil, fmt.Errorf("keyindex: key field %d at byte %d: unknown tag 0x%02x", len(vals), pos, tag)
		}
	}
	if len(vals) == 0 {
		return nil, errors.New("keyindex: empty key")
	}
	return vals, nil
}

// unescape reads an escaped string body and returns it and the bytes it
// took, terminator included.
func unescape(b []byte) ([]byte, int, error) {
	out := []byte{}
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			out = append(out, b[i])
			continue
		}
		if i+1 >= len(b) {
			return nil, 0, errors.New("a string ends without its terminator")
		}
		switch b[i+1] {
		case 0xFF:
			out = append(out, 0)
			i++
		case 1:
			return out, i + 2, nil
		default:
			return nil, 0, fmt.Errorf("a string has 0x00 0x%02x, neither an escaped 0x00 nor its end", b[i+1])
		}
	}
	return nil, 0, errors.New("a string ends without its terminator")
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
