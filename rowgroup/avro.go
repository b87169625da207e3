package rowgroup

import (
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// AvroOption configures an AvroDecoder.
type AvroOption func(*avroOptions) error

type avroOptions struct {
	reader  *avro.Schema
	partial bool
}

// AvroReaderSchema makes the decoder read records written with the writer
// schema as records of reader, by Avro's schema resolution rules
// (avro.Resolve): defaults for the reader's added fields, writer fields the
// reader lacks skipped, promotions int→long→float→double and
// string↔bytes, enum symbols and union branches matched by name. The row
// group's schema is then reader's Parquet schema. Defaults to no
// resolution: the row group has the writer schema's Parquet schema.
func AvroReaderSchema(reader *avro.Schema) AvroOption {
	return func(o *avroOptions) error {
		if reader == nil {
			return errors.New("avro decoder: nil reader schema")
		}
		o.reader = reader
		return nil
	}
}

// AvroPrefix makes Append read one record from the start of its value and
// leave the rest, instead of rejecting bytes after the record; Consumed
// tells how many bytes the record took. Container file blocks hold
// records back to back without lengths, and are read this way. Defaults
// to off: a value is exactly one record, as in a Kafka message.
func AvroPrefix() AvroOption {
	return func(o *avroOptions) error {
		o.partial = true
		return nil
	}
}

// AvroDecoder appends Avro binary records to a row group. It is compiled
// once from a writer schema, and a reader schema when resolving, into a
// tree of typed steps that read the binary encoding straight into the
// column buffers: no record becomes a map, and no value is boxed. It is
// a Payload; a Builder over the row group composes its rows with the
// Kafka envelope. An AvroDecoder is not safe for concurrent use.
//
// Values that the encoding cannot hold are errors of the record, never
// panics: a record cut short, a union branch or enum symbol out of range,
// a length beyond the bytes left, a varint longer than ten bytes, a
// string that is not UTF-8 or a uuid that is not one.
type AvroDecoder struct {
	g    *RowGroup
	root *avroOp
	opts avroOptions
	undo recordUndo
	r    avroReader
	n    int // bytes the last record took
}

// NewAvroDecoder compiles a decoder of records written with writer into
// g. g's schema must have, beside any other top-level fields such as the
// Kafka envelope, the fields of the Parquet schema of the reader schema
// (writer's without AvroReaderSchema), as avro.Schema.Parquet makes them.
// A writer schema that cannot be resolved onto the reader is an error
// that wraps an *avro.ResolutionError.
func NewAvroDecoder(g *RowGroup, writer *avro.Schema, opts ...AvroOption) (*AvroDecoder, error) {
	d := &AvroDecoder{g: g}
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
	d.undo.init(g)
	return d, nil
}

func (d *AvroDecoder) rowGroup() *RowGroup { return d.g }

func (d *AvroDecoder) fillsEnvelope() bool { return false }

// Append fills the payload part of a row from value, one record in Avro
// binary (for a Kafka value in the Confluent wire format, the bytes after
// the header: see avro.SplitWire). On error the row group is as before
// and the error is a *RecordError.
func (d *AvroDecoder) Append(value []byte) error {
	d.undo.begin(d.g)
	if err := d.fill(value); err != nil {
		d.undo.rollback(d.g)
		return err
	}
	return nil
}

// Consumed returns the bytes the last successful Append read: the whole
// value, or with AvroPrefix the record at its start.
func (d *AvroDecoder) Consumed() int { return d.n }

func (d *AvroDecoder) fill(value []byte) error {
	d.r = avroReader{buf: value}
	if err := d.r.decode(d.root, 0); err != nil {
		return err
	}
	if !d.opts.partial && d.r.pos != len(value) {
		return avroError("", d.r.pos, fmt.Errorf("%d bytes after the end of the record", len(value)-d.r.pos))
	}
	d.n = d.r.pos
	return nil
}

// avroError is a RecordError with Avro's wording.
func avroError(path string, off int, err error) *RecordError {
	e := &RecordError{Path: path, Offset: off, Err: err, bare: true}
	if path == "" {
		e.Err = fmt.Errorf("avro record: %w (at byte %d)", err, off)
	} else {
		e.Err = fmt.Errorf("avro record: %s: %w (at byte %d)", path, err, off)
	}
	return e
}

// sameShape reports whether a and b are the same Parquet field: names,
// repetition, types and annotations.
func sameShape(a, b *schema.Node) bool {
	if a.Name != b.Name || a.Repetition != b.Repetition || a.IsLeaf() != b.IsLeaf() || a.Logical != b.Logical || len(a.Fields) != len(b.Fields) {
		return false
	}
	if a.IsLeaf() && (a.Physical != b.Physical || a.Length != b.Length) {
		return false
	}
	for i := range a.Fields {
		if !sameShape(a.Fields[i], b.Fields[i]) {
			return false
		}
	}
	return true
}
