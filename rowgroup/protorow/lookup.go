package protorow

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// Lookup reads the values of a few scalar fields of Protobuf messages of
// one type, each converted exactly as a Decoder of the type writes the
// field's column: it is such a Decoder, into a row group of one row, so
// that the values (a proto3 field without presence that the message
// omits has its default, as in the files), and the errors of a message
// that does not decode, are the shredder's own. It decodes the whole
// message: fields may come in any order, and a field that occurs twice is
// an error only the whole message shows. A Lookup is not safe for
// concurrent use.
type Lookup struct {
	leaves []*schema.Node // nil: the message has no such field
	cols   []*rowgroup.Column
	g      *rowgroup.RowGroup
	dec    *Decoder
	vals   [][]byte
	buf    [][8]byte
	before []int // each column's values before the message being read
	reads  int   // messages read since the row group was emptied
	bytes  int   // and their bytes
}

// The row group takes resetEvery messages, or resetBytes of them, before
// it is emptied: emptying its columns after each message would cost more
// than the decode, and the bytes bound what the columns hold.
const (
	resetEvery = 1024
	resetBytes = 1 << 20
)

// NewLookup compiles a lookup of the dotted paths (each a path of the
// Parquet field names of protobuf.Parquet(m) from the root, e.g.
// ["payload", "nested", "level"]) in messages of type m. A path that the
// type lacks is always null. A path to a field that is not a scalar
// column (a message, a repeated field, a map) is an error. With
// MicrosTimestamps, the schema is protobuf.Parquet(m) narrowed by
// schema.NarrowNanos, as a table's files have it.
func NewLookup(m protoreflect.MessageDescriptor, paths [][]string, opts ...Option) (*Lookup, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ps, err := protobuf.Parquet(m)
	if err != nil {
		return nil, fmt.Errorf("protobuf lookup: %w", err)
	}
	if o.micros {
		if ps, _, err = schema.NarrowNanos(ps); err != nil {
			return nil, fmt.Errorf("protobuf lookup: %w", err)
		}
	}
	l := &Lookup{leaves: make([]*schema.Node, len(paths)), cols: make([]*rowgroup.Column, len(paths)),
		vals: make([][]byte, len(paths)), buf: make([][8]byte, len(paths)), before: make([]int, len(paths)), g: rowgroup.New(ps)}
	for i, p := range paths {
		n := ps.Lookup(p...)
		if n == nil {
			continue
		}
		if !n.IsLeaf() || n.MaxRep > 0 {
			return nil, fmt.Errorf("protobuf lookup: field %s is not a value a column holds outside lists and maps", strings.Join(p, "."))
		}
		l.leaves[i] = n
		l.cols[i] = l.g.Column(n.Column)
	}
	if l.dec, err = NewDecoder(l.g, m); err != nil {
		return nil, fmt.Errorf("protobuf lookup: %w", err)
	}
	return l, nil
}

// Leaf returns the column of protobuf.Parquet(m) (narrowed with
// MicrosTimestamps) that path i names, or
// nil when the message type has no such field.
func (l *Lookup) Leaf(i int) *schema.Node { return l.leaves[i] }

// Read decodes value, one message in the Protobuf binary encoding (for a
// Kafka value in the Confluent wire format, the bytes after the header).
// A message that does not decode is an error, a *rowgroup.RecordError
// worded as the Decoder words it.
func (l *Lookup) Read(value []byte) error {
	for i := range l.vals {
		l.vals[i] = nil
	}
	if l.reads >= resetEvery || l.bytes >= resetBytes {
		l.g.Reset()
		l.reads, l.bytes = 0, 0
	}
	l.reads++
	l.bytes += len(value)
	for i, c := range l.cols {
		if c != nil {
			l.before[i] = c.NumValues()
		}
	}
	if err := l.dec.Fill(value); err != nil {
		return err
	}
	for i, c := range l.cols {
		if c == nil || c.NumValues() == l.before[i] {
			continue
		}
		at := l.before[i] // the message's value: each column takes one at most
		b := l.buf[i][:0]
		switch l.leaves[i].Physical {
		case meta.TypeBoolean:
			v := byte(0)
			if c.Bool[at] {
				v = 1
			}
			b = append(b, v)
		case meta.TypeInt32:
			b = binary.LittleEndian.AppendUint32(b, uint32(c.Int32[at]))
		case meta.TypeInt64:
			b = binary.LittleEndian.AppendUint64(b, uint64(c.Int64[at]))
		case meta.TypeFloat:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Float[at]))
		case meta.TypeDouble:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Double[at]))
		case meta.TypeByteArray:
			b = c.ByteArray(at)
		default: // FIXED_LEN_BYTE_ARRAY
			n := int(l.leaves[i].Length)
			b = c.Bytes[at*n : (at+1)*n]
		}
		l.vals[i] = b
	}
	return nil
}

// Value returns the value of path i in the message Read last, in
// Parquet's PLAIN encoding of its Leaf's physical type (a BYTE_ARRAY
// without its length), or nil when it is null or absent. It is valid
// until the next Read.
func (l *Lookup) Value(i int) []byte { return l.vals[i] }
