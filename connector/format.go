package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/variant"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// format is how record values become rows: the Parquet schema of the files
// and the payload filler of package rowgroup, the same one convert uses.
type format struct {
	kind     string // json | variant | avro | protobuf | json_schema
	envelope bool
	// timeUnit is the envelope timestamp's: microseconds in a table's
	// files (Iceberg's timestamptz), Kafka's milliseconds otherwise.
	timeUnit schema.TimeUnit

	// json
	message  *schema.Schema
	jsonOpts []rowgroup.JSONOption
	// jsonUnits is the footer entry of a table's files whose millisecond
	// columns are in microseconds (jsonmillis.go); nil otherwise.
	jsonUnits [][2]string

	// variant
	column      string
	shape       *variant.Shape // nil: inferred from each partition's first records
	sample      int            // records in the sample at most
	sampleBytes int64          // bytes of the sample at most: a row group's
	variantOpts []variant.Option

	// avro: writer schemas by the id in each record's header; the files'
	// schema follows the records (see avro.go)
	registry *avro.Registry
	backward bool // format.schema_compatibility: backward

	// protobuf with format.proto_file: the records' message (protobuf.go);
	// with format.registry, the schemas by id (protobuf_registry.go)
	protoMessage  protoreflect.MessageDescriptor
	protoRegistry *protobuf.Registry
	// protoMicros is table.timestamp_precision: micros: the Protobuf
	// Timestamps (protobuf.go) and Avro nanosecond timestamps
	// (avronanos.go) of a table's files in microseconds; truncated counts
	// those whose nanoseconds were cut.
	protoMicros bool
	truncated   *atomic.Int64
	// json_schema: the schemas (see jsonschema.go)
	js *jsonSchemaSink
}

func newFormat(cfg *config.Config) (*format, error) {
	f := &format{kind: cfg.Format.Type, envelope: cfg.Envelope, timeUnit: schema.Millis}
	if cfg.Table != nil {
		f.timeUnit = schema.Micros
		f.protoMicros = cfg.Table.TimestampMicros
	}
	switch f.kind {
	case "json":
		path := cfg.Format.SchemaFile
		if !filepath.IsAbs(path) && cfg.Dir != "" {
			path = filepath.Join(cfg.Dir, path)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("format.schema_file: %w", err)
		}
		if f.message, err = schema.Parse(string(text)); err != nil {
			return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
		}
		if f.envelope && f.message.Lookup(rowgroup.EnvelopeField) != nil {
			return nil, fmt.Errorf("format.schema_file %s: field %s is the Kafka envelope's; rename it or set envelope: false", path, rowgroup.EnvelopeField)
		}
		if cfg.Format.IgnoreUnknownFields {
			f.jsonOpts = append(f.jsonOpts, rowgroup.IgnoreUnknownFields())
		}
		if cfg.Format.LossyNumbers {
			f.jsonOpts = append(f.jsonOpts, rowgroup.LossyNumbers())
		}
		if cfg.Table != nil {
			if err := f.retimeJSON(cfg.Table.TimestampMicros); err != nil {
				return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
			}
		}
	case "variant":
		f.column, f.sample, f.sampleBytes = cfg.Format.Column, cfg.Format.ShredSample, cfg.Parquet.RowGroupBytes
		if cfg.Format.LossyNumbers {
			f.variantOpts = append(f.variantOpts, variant.LossyNumbers())
		}
		switch cfg.Format.Shred {
		case "auto":
		case "none":
			f.shape = &variant.Shape{}
		default:
			path := cfg.Format.Shred
			if !filepath.IsAbs(path) && cfg.Dir != "" {
				path = filepath.Join(cfg.Dir, path)
			}
			text, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("format.shred: want auto, none or a shape file: %w", err)
			}
			shape, err := rowgroup.ParseVariantShape(string(text))
			if err != nil {
				return nil, fmt.Errorf("format.shred %s: %w", path, err)
			}
			f.shape = &shape
		}
	case "avro":
		reg, err := schemaregistry.New(cfg.Format.Registry)
		if err != nil {
			return nil, err
		}
		f.registry, f.backward = reg, cfg.Format.SchemaCompatibility == "backward"
	case "protobuf":
		if err := f.newProtobuf(cfg); err != nil {
			return nil, err
		}
	case "json_schema":
		if err := f.newJSONSchema(cfg); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("format.type: %q is not one of json, variant, avro, protobuf, json_schema", f.kind)
	}
	return f, nil
}

// fixedSchema is the files' schema when it does not depend on the data:
// nil for a variant format whose shredding is inferred, and for avro.
func (f *format) fixedSchema() (*schema.Schema, error) {
	switch {
	case f.kind == "json":
		return f.withEnvelope(f.message.Name(), f.message.Fields()...)
	case f.protoMessage != nil:
		return f.protobufSchema(f.protoMessage)
	case f.js != nil && f.js.file != nil:
		return f.js.file.parquet, nil
	case f.shape != nil:
		return f.variantSchema(*f.shape)
	}
	return nil, nil
}

// variantSchema is the schema of a variant format shredded by shape.
func (f *format) variantSchema(shape variant.Shape) (*schema.Schema, error) {
	node, err := rowgroup.VariantNode(f.column, schema.Required, shape)
	if err != nil {
		return nil, err
	}
	return f.withEnvelope("schema", node)
}

func (f *format) withEnvelope(name string, fields ...*schema.Node) (*schema.Schema, error) {
	if f.envelope {
		fields = append(fields[:len(fields):len(fields)], rowgroup.EnvelopeNodeIn(f.timeUnit))
	}
	s, err := schema.New(name, fields...)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// newPayload returns the filler of g's payload columns.
func (f *format) newPayload(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
	if f.kind == "json" || f.kind == "json_schema" {
		return rowgroup.NewJSONShredder(g, f.jsonOpts...)
	}
	if f.protoMessage != nil {
		return f.newProtobufPayload(g)
	}
	return rowgroup.NewVariantShredder(g, rowgroup.VariantColumn(f.column), rowgroup.VariantEncoding(f.variantOpts...))
}

// forPartition returns the format's state for one partition: fixed is
// the sink's fixedSchema, log the partition's logger, and fit, when the
// files go to a table, gives each schema the format learns from the records
// the table's field ids (see table.Handle.Fit).
func (f *format) forPartition(fixed *schema.Schema, log *slog.Logger, fit fitFunc) recordFormat {
	switch {
	case f.js != nil:
		return newJSONSchemaFormat(f, fixed, log, fit)
	case f.registry != nil:
		a := newAvroFormat(f, log)
		a.fit = fit
		return a
	case f.protoMessage != nil:
		return &protobufFileFormat{fixedFormat{f: f, schema: fixed}}
	case f.protoRegistry != nil:
		pr := newProtobufRegistryFormat(f, log)
		pr.fit = fit
		return pr
	case fixed == nil:
		return &inferredFormat{fixedFormat: fixedFormat{f: f}, log: log, fit: fit}
	}
	return &fixedFormat{f: f, schema: fixed}
}

// fitFunc returns a schema the format learned with a table's field ids,
// evolving the table first when needed. Its error wraps
// table.ErrIncompatible when the table cannot take the schema; any other
// is a failure to reach the catalog.
type fitFunc func(ctx context.Context, s *schema.Schema) (*schema.Schema, error)

// catalogPause is how long a partition waits, after its table's catalog
// could not be reached to fit a schema, before it consumes again from its
// committed offset.
const catalogPause = 5 * time.Second

// catalogUnreachable logs err, a failure to reach the table's catalog for
// a schema, waits catalogPause and returns errRestart: the partition
// consumes again from its committed offset, and the schema is fitted again
// when its record is read again. It returns ctx's error when ctx is done
// first. attrs say which schema and record (schema_id, offset).
func catalogUnreachable(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	log.Error("table catalog unreachable; consuming again from the committed offset after a pause",
		append(attrs, "pause", catalogPause, "error", err)...)
	if !sleep(ctx, catalogPause) {
		return ctx.Err()
	}
	return errRestart
}

// recordFormat is a partition's side of its format: how a record becomes
// a row, and which open file can take it. Each partition has its own,
// since what a format learns from records (the Avro schemas they were
// written with, a Variant shape inferred from the first of them) is the
// partition's.
type recordFormat interface {
	// sampling reports whether the format learns from the first records
	// before any is written (a Variant shape is inferred from them): the
	// partition holds them back and shows each to sample.
	sampling() bool
	// sample shows the format a record held back, and reports whether
	// the sample is complete.
	sample(r *record) bool
	// learn ends the sample; the partition then writes the records it
	// held back. Its error is errRestart when what the format depends on
	// (a table's catalog) cannot be reached.
	learn(ctx context.Context) error
	// decode readies r for a builder. A record that cannot be read is a
	// *rejection; an error is a failure of what the format depends on (a
	// Schema Registry that cannot be reached), after which the partition
	// reads again from its committed offset.
	decode(ctx context.Context, r *record) (decoded, *rejection, error)
	// fits returns the builder of fb for d, or nil when fb cannot take d
	// (another schema): its file must be finished first.
	fits(fb *fileBuffers, d decoded) *rowgroup.Builder
	// buffers returns empty buffers for a file whose first record is d:
	// taken from *spare when one fits, else new.
	buffers(d decoded, spare *[]*fileBuffers) (*fileBuffers, error)
	// reason names the rejection of a record that its builder refused.
	reason(err error) string
}

// decoded is a record ready for a builder: the payload to shred and, for
// formats whose files' schema follows the records, the schema the record
// was written with.
type decoded struct {
	payload []byte
	writer  *avroSchema  // avro; nil for the others
	proto   *protoSchema // protobuf with a registry; nil for the others
	js      *jsSchema    // json_schema; nil for the others
	// jsonText is a json_schema record's JSON, after the wire format's
	// header and before any wrapping: what path fields are read from.
	jsonText []byte
	// tableVals computes a json_schema record's table partition values
	// with its schema's columns (with a registry); nil for the others.
	tableVals *tablePartValues
}

// fixedFormat is a format whose files all have one schema: JSON with a
// schema file, and VARIANT with a given shredding.
type fixedFormat struct {
	f      *format
	schema *schema.Schema
}

func (x *fixedFormat) sampling() bool              { return false }
func (x *fixedFormat) sample(*record) bool         { return true }
func (x *fixedFormat) learn(context.Context) error { return nil }
func (x *fixedFormat) reason(err error) string     { return classify(err) }

func (x *fixedFormat) decode(_ context.Context, r *record) (decoded, *rejection, error) {
	return decoded{payload: r.value}, nil, nil
}

func (x *fixedFormat) fits(fb *fileBuffers, _ decoded) *rowgroup.Builder { return fb.b }

func (x *fixedFormat) buffers(_ decoded, spare *[]*fileBuffers) (*fileBuffers, error) {
	if n := len(*spare); n > 0 {
		fb := (*spare)[n-1]
		*spare = (*spare)[:n-1]
		return fb, nil
	}
	return newFileBuffers(x.f, x.schema)
}

// inferredFormat is VARIANT with shred: auto. Its shredding is inferred
// from the partition's first records (at most format.shred_sample of them
// and a row group's bytes, or those that came within the sample wait),
// with convert's sampler; after that it is a fixedFormat.
type inferredFormat struct {
	fixedFormat
	log     *slog.Logger
	sampler *variant.Sampler
	fit     fitFunc // nil without a table
}

func (x *inferredFormat) sampling() bool { return x.schema == nil }

func (x *inferredFormat) sample(r *record) bool {
	if x.sampler == nil {
		x.sampler = variant.NewSampler(variant.SampleOptions{Count: x.f.sample, Bytes: x.f.sampleBytes, Encoding: x.f.variantOpts})
	}
	// A bad value is left out of the sample, and rejected when written.
	_ = x.sampler.Add(r.value)
	return x.sampler.Full()
}

func (x *inferredFormat) learn(ctx context.Context) error {
	if x.schema != nil {
		return nil
	}
	if x.sampler == nil { // no record came: the zero sample
		x.sampler = variant.NewSampler(variant.SampleOptions{})
	}
	n, shape := x.sampler.Len(), x.sampler.Shape()
	s, err := x.f.variantSchema(shape)
	if err != nil {
		return fmt.Errorf("inferred variant shape %s: %w", shape.String(), err)
	}
	if x.fit != nil {
		// The table has one VARIANT column whatever the shredding: this
		// fails only when its catalog cannot be reached, or when the table
		// was changed under the sink.
		fitted, err := x.fit(ctx, s)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			return err
		case err != nil:
			return catalogUnreachable(ctx, x.log, err)
		}
		s = fitted
	}
	x.sampler = nil
	x.schema = s
	x.log.Info("variant shredding inferred", "records", n, "shape", shape.String())
	return nil
}
