package schemaregistry

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// WireHeaderSize is the length of the Confluent wire format's header: the
// magic byte 0 and a 4-byte big-endian schema id. Avro and JSON Schema
// values follow it directly; Protobuf values put their message indexes
// first.
const WireHeaderSize = 5

// ErrWireFormat is wrapped by the errors of SplitWire: a value that does
// not start with the Confluent wire format's header.
var ErrWireFormat = errors.New("not in the Confluent wire format")

// SplitWire splits a Kafka value in the Confluent wire format into the
// schema id and the body that follows the header. The body aliases value.
func SplitWire(value []byte) (id uint32, body []byte, err error) {
	if len(value) < WireHeaderSize {
		return 0, nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrWireFormat, len(value), WireHeaderSize)
	}
	if value[0] != 0 {
		return 0, nil, fmt.Errorf("%w: magic byte is 0x%02x, want 0x00", ErrWireFormat, value[0])
	}
	return binary.BigEndian.Uint32(value[1:5]), value[WireHeaderSize:], nil
}

// AppendWire appends the Confluent wire format's header for schema id to
// dst; the body goes after it.
func AppendWire(dst []byte, id uint32) []byte {
	return binary.BigEndian.AppendUint32(append(dst, 0), id)
}
