package format

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// Fixed is the Decoder of a format whose files all have one schema (JSON
// with a schema file, VARIANT with a given shredding, Protobuf with a
// .proto file): the record's value is the payload, and every file's
// buffers are alike.
type Fixed struct {
	// Schema is the files' schema.
	Schema *schema.Schema
	// NewPayload returns the filler of a row group's payload columns.
	NewPayload func(g *rowgroup.RowGroup) (rowgroup.Payload, error)
	// KeyValues go into the footer of each file.
	KeyValues [][2]string
	// Rejects names the rejection of a value its builder refused; nil is
	// Classify.
	Rejects func(err error) string
}

// Sampling is false: nothing is learned from the records.
func (x *Fixed) Sampling() bool { return false }

// Sample reports the sample complete.
func (x *Fixed) Sample([]byte) bool { return true }

// Learn does nothing.
func (x *Fixed) Learn(context.Context) error { return nil }

// Decode returns the value as the payload.
func (x *Fixed) Decode(_ context.Context, value []byte, _ int64) (Decoded, *Rejection, error) {
	return Decoded{Payload: value}, nil, nil
}

// Fits returns b's builder: every file has the one schema.
func (x *Fixed) Fits(b *Buffers, _ Decoded) *rowgroup.Builder { return b.Builder }

// BuffersKey is nil: any idle buffers fit.
func (x *Fixed) BuffersKey(Decoded) any { return nil }

// NewBuffers builds buffers of the schema.
func (x *Fixed) NewBuffers(Decoded) (*Buffers, error) {
	if x.Schema == nil {
		return nil, fmt.Errorf("format: no schema for the files")
	}
	b, err := NewBuffers(x.Schema, x.NewPayload)
	if err != nil {
		return nil, err
	}
	b.KeyValues = x.KeyValues
	return b, nil
}

// Reason names a builder's refusal: Rejects, or Classify.
func (x *Fixed) Reason(err error) string {
	if x.Rejects != nil {
		return x.Rejects(err)
	}
	return Classify(err)
}

// WithEnvelope is the schema name of fields, followed by the Kafka
// envelope's column (in unit) when envelope is set.
func WithEnvelope(envelope bool, unit schema.TimeUnit, name string, fields ...*schema.Node) (*schema.Schema, error) {
	if envelope {
		fields = append(fields[:len(fields):len(fields)], rowgroup.EnvelopeNodeIn(unit))
	}
	s, err := schema.New(name, fields...)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// TimeUnit is the envelope timestamp's unit of cfg's files: microseconds
// in a table's (Iceberg's timestamptz), Kafka's milliseconds otherwise.
func TimeUnit(tableFiles bool) schema.TimeUnit {
	if tableFiles {
		return schema.Micros
	}
	return schema.Millis
}

// Resolve returns path relative to dir when it is not absolute and dir is
// set: the config file's folder.
func Resolve(dir, path string) string {
	if !filepath.IsAbs(path) && dir != "" {
		return filepath.Join(dir, path)
	}
	return path
}
