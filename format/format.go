// Package format is the seam between the sink and the record formats: the
// interface a format implements, and a registry of formats by name, as
// database/sql holds its drivers. A format turns the value of a Kafka
// record into the rows of rowgroup buffers; the sink opens, fills, rotates
// and uploads the files, and names no format.
//
// A format lives in its own folder and registers its Driver under the name
// that format.type takes (format/all lists them). It is opened once per
// sink (Driver, giving a Format) and once per Kafka partition
// (Format.NewDecoder, giving a Decoder): what a format learns from the
// records, the schemas they were written with or a shredding inferred
// from the first of them, is the Kafka partition's. docs/formats.md
// describes the contract method by method.
//
// This package imports no format.
package format

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// Driver opens a format for a sink: it checks the format's keys of cfg
// (format.*), loads what they name (a schema file, a registry's client)
// and returns the sink's side of the format.
type Driver func(cfg *config.Config, env Env) (Format, error)

// Env is what a sink gives the formats it opens.
type Env struct {
	// Log is the sink's logger.
	Log *slog.Logger
	// Truncated counts the timestamps whose digits below the microsecond
	// a format cut (table.timestamp_precision: micros); never nil.
	Truncated *atomic.Int64
}

// Format is a format opened for one sink, shared by its Kafka partitions.
type Format interface {
	// FixedSchema is the files' schema when it does not depend on the
	// records (a schema file, a given shredding): nil when it does.
	FixedSchema() (*schema.Schema, error)
	// TableSchema is the schema a table is created with when FixedSchema
	// is nil: nil when the first records' schema creates it.
	TableSchema() (*schema.Schema, error)
	// SchemaPerRecord reports whether each record names its schema (a
	// Schema Registry's id): the files' schema, and the columns of a
	// table's partition fields, follow each record's.
	SchemaPerRecord() bool
	// Binary reports whether path and partition values are read from a
	// record's payload with a Lookup (Schema.NewLookup) rather than from
	// its JSON text.
	Binary() bool
	// Fixed is the files' one schema of a Binary format whose schema does
	// not depend on the records, with its Lookup; nil otherwise.
	Fixed() *Schema
	// TextOptions are the options that read the JSON text of a record's
	// partition values as the format's shredder reads its columns.
	TextOptions() []rowgroup.JSONOption
	// NewDecoder returns the format's side of one Kafka partition.
	NewDecoder(p Partition) Decoder
}

// Partition is what a Kafka partition gives its Decoder.
type Partition struct {
	// Log is the Kafka partition's logger.
	Log *slog.Logger
	// Schema is the files' schema when it is fixed: the sink's
	// FixedSchema, or its table's, which carries the table's field ids.
	Schema *schema.Schema
	// Fit, when the files go to a table, gives each schema the format
	// learns from the records the table's field ids; nil otherwise.
	Fit FitFunc
	// Compile, when not nil, is called once for each schema the format
	// learns from the records, after Fit: the sink compiles the schema's
	// path and partition values (kept in Schema.Values). A schemaErr
	// makes the schema unusable (its records are rejected with reason
	// schema); err is a failure to reach the table's catalog.
	Compile func(ctx context.Context, s *Schema) (schemaErr, err error)
	// Paths are the payload columns whose values decide a record's path:
	// a record read with another schema than its own (Avro's resolution)
	// must keep them.
	Paths [][]string
}

// FitFunc returns a schema the format learned with a table's field ids,
// evolving the table first when needed. Its error wraps
// table.ErrIncompatible when the table cannot take the schema; any other
// is a failure to reach the catalog.
type FitFunc func(ctx context.Context, s *schema.Schema) (*schema.Schema, error)

// Decoder is one Kafka partition's side of its format: how a record value
// becomes a row, and which open file can take it. Only the partition's
// goroutine calls it.
type Decoder interface {
	// Sampling reports whether the format learns from the first records
	// before any is written (a Variant shape is inferred from them): the
	// partition holds them back and shows each to Sample.
	Sampling() bool
	// Sample shows the format a record value held back, and reports
	// whether the sample is complete.
	Sample(value []byte) bool
	// Learn ends the sample; the partition then writes the records it
	// held back. Its error is ErrRestart when what the format depends on
	// (a table's catalog) cannot be reached.
	Learn(ctx context.Context) error
	// Decode readies the value of the record at offset for a builder. A
	// value that cannot be read is a *Rejection; an error is a failure of
	// what the format depends on (ErrRestart after a pause when a Schema
	// Registry cannot be reached), after which the partition reads again
	// from its committed offset.
	Decode(ctx context.Context, value []byte, offset int64) (Decoded, *Rejection, error)
	// Fits returns the builder of b for d, or nil when b cannot take d
	// (another schema): its file must be finished first.
	Fits(b *Buffers, d Decoded) *rowgroup.Builder
	// BuffersKey says which idle buffers a file whose first record is d
	// can reuse: those of an equal key.
	BuffersKey(d Decoded) any
	// NewBuffers returns new buffers for a file whose first record is d.
	NewBuffers(d Decoded) (*Buffers, error)
	// Reason names the rejection of a record that its builder refused.
	Reason(err error) string
}

// Decoded is a record ready for a builder.
type Decoded struct {
	// Payload is what the builder shreds.
	Payload []byte
	// Schema is the schema the record was written with, for formats whose
	// files' schema follows the records; nil for the others.
	Schema *Schema
	// Text is the JSON text path fields are read from, when it is not the
	// record's value (after a wire format's header); nil otherwise.
	Text []byte
}

// Schema is a schema a format learned from records (or its one schema,
// Format.Fixed), as the sink sees it.
type Schema struct {
	// Name says which schema in errors: "avro schema id 7".
	Name string
	// Parquet is the files' schema of its records, fitted to the table.
	Parquet *schema.Schema
	// NewLookup compiles a lookup of the columns at paths in the records'
	// payload; forTable reads them as a table's files hold them (times in
	// microseconds). Nil for a format that is not Binary.
	NewLookup func(paths [][]string, forTable bool) (Lookup, error)
	// Own is the format's record of the schema.
	Own any
	// Values is the sink's: what Partition.Compile made of the schema.
	Values any
}

// Lookup reads the values of some columns from a record's payload, as the
// format's shredder writes them.
type Lookup interface {
	// Read decodes a payload as far as the columns.
	Read(payload []byte) error
	// Value is the plain value of path i in the payload read last: nil
	// when null or absent.
	Value(i int) []byte
	// Leaf is the column of path i; nil when the schema lacks it.
	Leaf(i int) *schema.Node
}

// Buffers are what an open file holds of its format: the row group being
// filled and the row builder over it. They outlive a file: the next file
// of the same key (Decoder.BuffersKey) reuses them, buffers already grown.
type Buffers struct {
	Schema  *schema.Schema
	Group   *rowgroup.RowGroup
	Builder *rowgroup.Builder
	// KeyValues go into the footer of each file of these buffers (the
	// schema its rows follow, as the format names it).
	KeyValues [][2]string
	// Own is the format's state of the buffers.
	Own any
}

// NewBuffers builds the buffers of schema s whose payload newPayload fills.
func NewBuffers(s *schema.Schema, newPayload func(*rowgroup.RowGroup) (rowgroup.Payload, error)) (*Buffers, error) {
	g := rowgroup.New(s)
	payload, err := newPayload(g)
	if err != nil {
		return nil, err
	}
	b, err := rowgroup.NewBuilder(g, payload)
	if err != nil {
		return nil, err
	}
	return &Buffers{Schema: s, Group: g, Builder: b}, nil
}

// Registry holds formats by name.
type Registry struct {
	names     []string
	drivers   map[string]Driver
	replayers []replayer
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{drivers: map[string]Driver{}} }

// Register adds the format d under name; a name registered twice panics,
// as a program error.
func (r *Registry) Register(name string, d Driver) {
	if _, ok := r.drivers[name]; ok || d == nil {
		panic("format: Register of " + name + " twice or nil")
	}
	r.names = append(r.names, name)
	r.drivers[name] = d
}

// Names are the registered names, in the order of registration.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Open opens the format that cfg's format.type names.
func (r *Registry) Open(cfg *config.Config, env Env) (Format, error) {
	d := r.drivers[cfg.Format.Type]
	if d == nil {
		return nil, fmt.Errorf("format.type: %q is not one of %s", cfg.Format.Type, strings.Join(r.names, ", "))
	}
	if env.Truncated == nil {
		env.Truncated = new(atomic.Int64)
	}
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	return d(cfg, env)
}
