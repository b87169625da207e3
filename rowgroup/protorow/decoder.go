// Package protorow shreds Protobuf messages into the column buffers of a
// rowgroup.RowGroup: a Decoder is compiled once per message type (per
// schema id and message, in the sink) into a tree of typed steps that
// read the wire bytes straight into the columns, with the mapping of
// schema/protobuf. It is a rowgroup.Payload, so a rowgroup.Builder
// composes its rows with the Kafka envelope. It lives apart from rowgroup
// so that the column buffers, and the writer that encodes them, depend on
// no Protobuf package.
package protorow

import (
	"fmt"
	"sync/atomic"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/variant"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Decoder appends Protobuf messages of one type, in their binary wire
// encoding, to a row group. No message becomes a dynamic message or a
// map, and no value is boxed. It is a rowgroup.Payload (and a
// rowgroup.Filler). A Decoder is not safe for concurrent use.
//
// A Timestamp goes into its column in nanoseconds, or in microseconds
// when the row group's column is TIMESTAMP(MICROS) (schema.NarrowNanos,
// a table's files): seconds*1e6 + nanos/1000, the nanoseconds below the
// microsecond cut and counted (CountTruncated). A Duration is always in
// nanoseconds.
//
// Bytes that are not a message of the type are errors of the record,
// never panics: a message cut short, a varint longer than ten bytes, a
// length beyond the bytes left, a field of the schema with another wire
// type, a string that is not UTF-8, a Timestamp or Duration out of its
// range or of INT64 nanoseconds', a missing proto2 required field. Two
// more are refused although protobuf's parsers accept them, since a
// decoder that writes each value once cannot honour them: a non-repeated
// field that occurs twice (protobuf merges or keeps the last), and two
// members of one oneof (protobuf keeps the last). Canonical encoders
// write neither; a concatenation of two messages has them.
type Decoder struct {
	g    *rowgroup.RowGroup
	root *msgOp
	undo *rowgroup.Undo

	full    []byte   // the value being read, for offsets in errors
	counts  []uint32 // occurrences of each field of the messages being read, a frame per message
	scratch []byte   // an unknown enum number's text
	vb      variant.Builder
	vmeta   []byte
	vval    []byte

	truncated int64         // Timestamps of the message being read cut to microseconds
	counter   *atomic.Int64 // CountTruncated's, or nil
}

// Option configures a Decoder or a Lookup.
type Option func(*options)

type options struct {
	counter *atomic.Int64
	micros  bool
}

// CountTruncated makes a Decoder add to c, once per message it appends
// whole, the Timestamps of the message whose nanoseconds it cut to write
// them in a microsecond column (nanos not a multiple of 1000). A Lookup
// ignores it. Defaults to counting nothing.
func CountTruncated(c *atomic.Int64) Option { return func(o *options) { o.counter = c } }

// MicrosTimestamps makes a Lookup read Timestamps as a Decoder writes
// them into the microsecond columns of schema.NarrowNanos (a table's
// files): its Leaf is TIMESTAMP(MICROS) and its value microseconds. A
// Decoder ignores it: its row group's columns say the unit. Defaults to
// nanoseconds, protobuf.Parquet's.
func MicrosTimestamps() Option { return func(o *options) { o.micros = true } }

var _ rowgroup.Filler = (*Decoder)(nil)

// NewDecoder compiles a decoder of messages of type m into g. g's schema
// must have, beside any other top-level fields such as the Kafka
// envelope, the fields of protobuf.Parquet(m), or those fields narrowed
// by schema.NarrowNanos, whose Timestamps the decoder writes in
// microseconds.
func NewDecoder(g *rowgroup.RowGroup, m protoreflect.MessageDescriptor, opts ...Option) (*Decoder, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	want, err := protobuf.Parquet(m)
	if err != nil {
		return nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	narrow, _, err := schema.NarrowNanos(want)
	if err != nil {
		return nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	top := g.Schema()
	for i, f := range want.Fields() {
		got := top.Lookup(f.Name)
		if got == nil {
			return nil, fmt.Errorf("protobuf decoder: the row group's schema has no field %s of message %s", f.Name, m.FullName())
		}
		if !f.SameShape(got) && !narrow.Fields()[i].SameShape(got) {
			return nil, fmt.Errorf("protobuf decoder: field %s of the row group's schema is not the Parquet field of message %s", f.Name, m.FullName())
		}
	}
	c := compiler{g: g}
	d := &Decoder{g: g, counter: o.counter}
	if d.root, err = c.message(m, func(name string) *schema.Node { return top.Lookup(name) }, ""); err != nil {
		return nil, fmt.Errorf("protobuf decoder: %w", err)
	}
	d.undo = rowgroup.NewUndo(g)
	return d, nil
}

// RowGroup returns the row group the decoder appends to.
func (d *Decoder) RowGroup() *rowgroup.RowGroup { return d.g }

// Append fills the payload part of a row from value, one message in the
// Protobuf binary encoding (for a Kafka value in the Confluent wire
// format, the bytes after the header: see protobuf.SplitWire). On error
// the row group is as before and the error is a *rowgroup.RecordError.
func (d *Decoder) Append(value []byte) error {
	d.undo.Begin()
	if err := d.Fill(value); err != nil {
		d.undo.Rollback()
		return err
	}
	return nil
}

// Fill does what Append does, but on error leaves undoing the record's
// columns to the caller: a rowgroup.Builder, which undoes the whole row
// once. The error is a *rowgroup.RecordError.
func (d *Decoder) Fill(value []byte) error {
	d.full = value
	d.counts = d.counts[:0]
	d.truncated = 0
	err := d.message(d.root, value, 0)
	d.full = nil
	if err == nil && d.truncated > 0 && d.counter != nil {
		d.counter.Add(d.truncated)
	}
	return err
}
