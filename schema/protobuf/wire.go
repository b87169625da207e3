package protobuf

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// MessageKey is the key-value metadata entry that names the Protobuf
// message type of a file's rows, by its full name (pqsink.test.AllTypes).
const MessageKey = "pqsink.protobuf.message"

// ErrWireFormat is wrapped by the errors of SplitWire and MessageAt: a
// value that is not in the Confluent wire format for Protobuf, or whose
// message indexes name no message of its schema. It is the registry
// client's error (schemaregistry.ErrWireFormat), which the header's
// errors wrap for every format.
var ErrWireFormat = schemaregistry.ErrWireFormat

// maxIndexes bounds the message index array: messages nested deeper than
// this are beyond any schema the registry would hold, and a count beyond
// it is a corrupt header.
const maxIndexes = 100

// SplitWire splits a Kafka value in Confluent's Protobuf wire format:
// the header that every format shares (the magic byte 0, the 4-byte
// big-endian schema id: schemaregistry.SplitWire), the message index
// array (a zig-zag varint count, then that many zig-zag varint indexes;
// a count of 0 alone stands for the array [0], the schema's first
// message), then the message's bytes. The indexes are appended to idx
// (pass idx[:0] to reuse it); the body aliases value.
func SplitWire(value []byte, idx []int) (id uint32, indexes []int, body []byte, err error) {
	if len(value) <= schemaregistry.WireHeaderSize {
		return 0, idx, nil, fmt.Errorf("protobuf: %w: %d bytes, shorter than the header", ErrWireFormat, len(value))
	}
	id, b, err := schemaregistry.SplitWire(value)
	if err != nil {
		return 0, idx, nil, fmt.Errorf("protobuf: %w", err)
	}
	next := func() (int64, error) {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, fmt.Errorf("protobuf: %w: message indexes: %v", ErrWireFormat, protowire.ParseError(n))
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
		return id, idx, nil, fmt.Errorf("protobuf: %w: %d message indexes", ErrWireFormat, count)
	}
	for range count {
		i, err := next()
		if err != nil {
			return id, idx, nil, err
		}
		if i < 0 || i > 1<<20 {
			return id, idx, nil, fmt.Errorf("protobuf: %w: message index %d", ErrWireFormat, i)
		}
		idx = append(idx, int(i))
	}
	return id, idx, b, nil
}

// AppendWire appends the Confluent wire format's header for schema id
// (schemaregistry.AppendWire) and the message at indexes to dst: the
// message's bytes go after it. The
// array [0] (or none) is written as the single byte 0, as Confluent's
// serializer writes it.
func AppendWire(dst []byte, id uint32, indexes []int) []byte {
	dst = schemaregistry.AppendWire(dst, id)
	if len(indexes) == 0 || len(indexes) == 1 && indexes[0] == 0 {
		return append(dst, 0)
	}
	dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(len(indexes))))
	for _, i := range indexes {
		dst = protowire.AppendVarint(dst, protowire.EncodeZigZag(int64(i)))
	}
	return dst
}
