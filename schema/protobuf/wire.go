package protobuf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// MessageKey is the key-value metadata entry that names the Protobuf
// message type of a file's rows, by its full name (pqsink.test.AllTypes).
const MessageKey = "pqsink.protobuf.message"

// ErrWireFormat is wrapped by the errors of SplitWire and MessageAt: a
// value that is not in the Confluent wire format for Protobuf, or whose
// message indexes name no message of its schema.
var ErrWireFormat = errors.New("protobuf: not in the Confluent wire format")

// maxIndexes bounds the message index array: messages nested deeper than
// this are beyond any schema the registry would hold, and a count beyond
// it is a corrupt header.
const maxIndexes = 100

// SplitWire splits a Kafka value in Confluent's Protobuf wire format:
// the magic byte 0, the 4-byte big-endian schema id, the message index
// array (a zig-zag varint count, then that many zig-zag varint indexes;
// a count of 0 alone stands for the array [0], the schema's first
// message), then the message's bytes. The indexes are appended to idx
// (pass idx[:0] to reuse it); the body aliases value.
func SplitWire(value []byte, idx []int) (id uint32, indexes []int, body []byte, err error) {
	if len(value) < 6 {
		return 0, idx, nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrWireFormat, len(value))
	}
	if value[0] != 0 {
		return 0, idx, nil, fmt.Errorf("%w: magic byte is 0x%02x, want 0x00", ErrWireFormat, value[0])
	}
	id = binary.BigEndian.Uint32(value[1:5])
	b := value[5:]
	next := func() (int64, error) {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, fmt.Errorf("%w: message indexes: %v", ErrWireFormat, protowire.ParseError(n))
		}
		b = b[n:]
		return protowire.DecodeZigZag(v), nil
	}
	count, err := next()
	if err != nil {
		return id, idx, nil, err
	}
	if count == 0 {
		return id, append(idx, 0), b, nil
	}
	if count < 0 || count > maxIndexes {
		return id, idx, nil, fmt.Errorf("%w: %d message indexes", ErrWireFormat, count)
	}
	for range count {
		i, err := next()
		if err != nil {
			return id, idx, nil, err
		}
		if i < 0 || i > 1<<20 {
			return id, idx, nil, fmt.Errorf("%w: message index %d", ErrWireFormat, i)
		}
		idx = append(idx, int(i))
	}
	return id, idx, b, nil
}

// AppendWire appends the Confluent wire format's header for schema id and
// the message at indexes to dst: the message's bytes go after it. The
// array [0] (or none) is written as the single byte 0, as Confluent's
// serializer writes it.
func AppendWire(dst []byte, id uint32, indexes []int) []byte {
	dst = binary.BigEndian.AppendUint32(append(dst, 0), id)
	if len(indexes) == 0 || len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0)
	}
	dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(len(indexes))))
	for _, i := range indexes {
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(i)))
	}
	return dst
}
