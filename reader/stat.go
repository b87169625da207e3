package reader

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// StatValue decodes one PLAIN-encoded value of leaf, as Statistics and the
// ColumnIndex store min and max (byte arrays without their length prefix),
// into a Value whose AppendJSON renders it by the leaf's logical type.
func StatValue(leaf *schema.Node, plain []byte) (Value, error) {
	vals := Values{Type: leaf.Physical, Size: int(leaf.Length)}
	var err error
	switch leaf.Physical {
	case meta.TypeBoolean:
		vals.Bool, err = encoding.Plain{}.DecodeBoolean(nil, plain, 1)
	case meta.TypeInt32:
		vals.Int32, err = encoding.Plain{}.DecodeInt32(nil, plain, 1)
	case meta.TypeInt64:
		vals.Int64, err = encoding.Plain{}.DecodeInt64(nil, plain, 1)
	case meta.TypeInt96:
		vals.Int96, err = encoding.Plain{}.DecodeInt96(nil, plain, 1)
	case meta.TypeFloat:
		vals.Float, err = encoding.Plain{}.DecodeFloat(nil, plain, 1)
	case meta.TypeDouble:
		vals.Double, err = encoding.Plain{}.DecodeDouble(nil, plain, 1)
	case meta.TypeByteArray:
		// A statistic is the bare bytes; a truncated one may be shorter than
		// any value, which is fine for display.
		vals.Data, vals.Offsets = plain, []uint32{0, uint32(len(plain))}
	case meta.TypeFixedLenByteArray:
		if len(plain) != int(leaf.Length) {
			// Truncated or malformed: show the bytes rather than guess.
			vals.Type, vals.Data, vals.Offsets = meta.TypeByteArray, plain, []uint32{0, uint32(len(plain))}
			return leafValue(&schema.Node{Name: leaf.Name, Physical: meta.TypeByteArray}, &vals, 0), nil
		}
		vals.Data = plain
	default:
		return Value{}, fmt.Errorf("column %s: unknown physical type %v", leaf.PathString(), leaf.Physical)
	}
	if err != nil {
		return Value{}, fmt.Errorf("column %s: statistic %x: %w", leaf.PathString(), plain, err)
	}
	return leafValue(leaf, &vals, 0), nil
}
