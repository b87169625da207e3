package meta

import (
	"encoding/binary"
	"math"
)

// Compact protocol type ids, as they appear in field and list headers.
// Booleans have two ids because a bool field stores its value in the
// field header itself.
const (
	ctStop   byte = 0
	ctTrue   byte = 1
	ctFalse  byte = 2
	ctI8     byte = 3
	ctI16    byte = 4
	ctI32    byte = 5
	ctI64    byte = 6
	ctDouble byte = 7
	ctBinary byte = 8
	ctList   byte = 9
	ctSet    byte = 10
	ctMap    byte = 11
	ctStruct byte = 12
	ctUUID   byte = 13
)

// appendUvarint appends v as a ULEB128 varint.
func appendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendVarint appends v zigzag-encoded. i16 and i32 values use it too:
// the zigzag encoding of a sign-extended smaller integer is the same.
func appendVarint(dst []byte, v int64) []byte {
	return appendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// appendFieldHeader appends the header of field id with compact type ct,
// given the id of the previous field of the struct (0 for the first). A
// small positive delta fits in the header byte; otherwise the id follows
// as a zigzag varint.
func appendFieldHeader(dst []byte, ct byte, id, last int16) []byte {
	if delta := int(id) - int(last); delta > 0 && delta <= 15 {
		return append(dst, byte(delta)<<4|ct)
	}
	return appendVarint(append(dst, ct), int64(id))
}

// appendBoolField appends a bool field, whose value is its header's type.
func appendBoolField(dst []byte, v bool, id, last int16) []byte {
	ct := ctFalse
	if v {
		ct = ctTrue
	}
	return appendFieldHeader(dst, ct, id, last)
}

// appendListHeader appends the header of a list of n elements of type elem.
func appendListHeader(dst []byte, elem byte, n int) []byte {
	if n < 15 {
		return append(dst, byte(n)<<4|elem)
	}
	return appendUvarint(append(dst, 0xf0|elem), uint64(n))
}

// appendBool appends a bool list element: one byte, 1 for true and 2 for
// false, as the reference implementations write it.
func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, ctTrue)
	}
	return append(dst, ctFalse)
}

func appendDouble(dst []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
}

func appendBinary(dst, v []byte) []byte {
	return append(appendUvarint(dst, uint64(len(v))), v...)
}

func appendString(dst []byte, v string) []byte {
	return append(appendUvarint(dst, uint64(len(v))), v...)
}
