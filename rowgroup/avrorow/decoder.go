// Package avrorow shreds Avro binary records into the column buffers of a
// rowgroup.RowGroup: a Decoder is compiled once per writer schema (and
// reader schema, when resolving) and is a rowgroup.Payload, so a
// rowgroup.Builder composes its rows with the Kafka envelope. It lives
// apart from rowgroup so that the column buffers, and the writer that
// encodes them, do not depend on the Avro schema package.
package avrorow

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/avro"
)

// Option configures a Decoder.
type Option func(*options) error

type options struct {
	reader  *avro.Schema
	partial bool
	counter *atomic.Int64 // CountTruncated
	micros  bool          // MicrosTimestamps
	times   bool          // MicrosTimes
}

// AvroReaderSchema makes the decoder read records written with the writer
// schema as records of reader, by Avro's schema resolution rules
// (avro.Resolve): defaults for the reader's added fields, writer fields the
// reader lacks skipped, promotions int→long→float→double and
// string↔bytes, enum symbols and union branches matched by name. The row
// group's schema is then reader's Parquet schema. Defaults to no
// resolution: the row group has the writer schema's Parquet schema.
func ReaderSchema(reader *avro.Schema) Option {
	return func(o *options) error {
		if reader == nil {
			return errors.New("avro decoder: nil reader schema")
		}
		o.reader = reader
		return nil
	}
}

// Prefix makes Append read one record from the start of its value and
// leave the rest, instead of rejecting bytes after the record; Consumed
// tells how many bytes the record took. Container file blocks hold
// records back to back without lengths, and are read this way. Defaults
// to off: a value is exactly one record, as in a Kafka message.
func Prefix() Option {
	return func(o *options) error {
		o.partial = true
		return nil
	}
}

// Decoder appends Avro binary records to a row group. It is compiled
// once from a writer schema, and a reader schema when resolving, into a
// tree of typed steps that read the binary encoding straight into the
// column buffers: no record becomes a map, and no value is boxed. It is
// a rowgroup.Payload (and a rowgroup.Filler); a rowgroup.Builder over the
// row group composes its rows with the Kafka envelope. A Decoder is not
// safe for concurrent use.
//
// Values that the encoding cannot hold are errors of the record, never
// panics: a record cut short, a union branch or enum symbol out of range,
// a length beyond the bytes left, a varint longer than ten bytes, a
// string that is not UTF-8 or a uuid that is not one.
type Decoder struct {
	g    *rowgroup.RowGroup
	root *avroOp
	opts options
	undo *rowgroup.Undo
	r    avroReader
	n    int // bytes the last record took
}

// A Decoder is a Filler, so that a Builder undoes a failed row once.
var _ rowgroup.Filler = (*Decoder)(nil)

// NewDecoder compiles a decoder of records written with writer into
// g. g's schema must have, beside any other top-level fields such as the
// Kafka envelope, the fields of the Parquet schema of the reader schema
// (writer's without ReaderSchema), as avro.Schema.Parquet makes them.
// A writer schema that cannot be resolved onto the reader is an error
// that wraps an *avro.ResolutionError.
func NewDecoder(g *rowgroup.RowGroup, writer *avro.Schema, opts ...Option) (*Decoder, error) {
	d := &Decoder{g: g}
	for _, o := range opts {
		if err := o(&d.opts); err != nil {
			return nil, err
		}
	}
	reader := d.opts.reader
	if reader == nil {
		reader = writer
	}
	res, err := avro.Resolve(writer, reader)
	if err != nil {
		return nil, fmt.Errorf("avro decoder: %w", err)
	}
	c := avroCompiler{g: g}
	if d.root, err = c.compileRoot(res); err != nil {
		return nil, fmt.Errorf("avro decoder: %w", err)
	}
	d.undo = rowgroup.NewUndo(g)
	return d, nil
}

// RowGroup returns the row group the decoder appends to.
func (d *Decoder) RowGroup() *rowgroup.RowGroup { return d.g }

// Append fills the payload part of a row from value, one record in Avro
// binary (for a Kafka value in the Confluent wire format, the bytes after
// the header: see internal/schemaregistry's SplitWire). On error the row
// group is as before and the error is a *rowgroup.RecordError.
func (d *Decoder) Append(value []byte) error {
	d.undo.Begin()
	if err := d.Fill(value); err != nil {
		d.undo.Rollback()
		return err
	}
	return nil
}

// Consumed returns the bytes the last successful Append read: the whole
// value, or with Prefix the record at its start.
func (d *Decoder) Consumed() int { return d.n }

// Fill does what Append does, but on error leaves undoing the record's
// columns to the caller: a rowgroup.Builder, which undoes the whole row
// once. The error is a *rowgroup.RecordError.
func (d *Decoder) Fill(value []byte) error {
	d.r = avroReader{buf: value}
	if err := d.r.decode(d.root, 0); err != nil {
		return err
	}
	if !d.opts.partial && d.r.pos != len(value) {
		return avroError("", d.r.pos, fmt.Errorf("%d bytes after the end of the record", len(value)-d.r.pos))
	}
	d.n = d.r.pos
	if d.r.cut > 0 && d.opts.counter != nil {
		d.opts.counter.Add(d.r.cut)
	}
	return nil
}

// avroError is a RecordError with Avro's wording.
func avroError(path string, off int, err error) *rowgroup.RecordError {
	if path == "" {
		err = fmt.Errorf("avro record: %w (at byte %d)", err, off)
	} else {
		err = fmt.Errorf("avro record: %s: %w (at byte %d)", path, err, off)
	}
	return rowgroup.NewRecordError(path, off, err)
}
