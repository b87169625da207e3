// Package avrofmt is the Avro format of the sink (format.type: avro).
// Each record value is in the Confluent wire format: magic byte 0, the
// 4-byte id of its writer schema in the Schema Registry, then the record
// in Avro binary. The files' schema depends on the data: each open file
// has a reader schema (the Parquet schema is that of the reader schema,
// plus the envelope), and the records of one path whose schema differs
// from their file's either rotate it (reason schema) or, with
// schema_compatibility: backward, are resolved onto it.
package avrofmt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/schemaregistry/registryconfig"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
)

// Name is the format's format.type.
const Name = "avro"

// avroFormat is the format opened for a sink.
type avroFormat struct {
	envelope bool
	timeUnit schema.TimeUnit
	// registry gives the writer schemas by the id in each record's header.
	registry *avro.Registry
	backward bool // format.schema_compatibility: backward
	// micros is table.timestamp_precision: micros: nanosecond timestamps
	// of a table's files in microseconds, truncated counting those whose
	// nanoseconds were cut.
	micros    bool
	truncated *atomic.Int64
}

// Open is the format's format.Driver.
func Open(cfg *config.Config, env format.Env) (format.Format, error) {
	client, err := registryconfig.New(cfg.Format.Registry)
	if err != nil {
		return nil, err
	}
	reg := avro.NewRegistry(client, registryconfig.CacheSize(cfg.Format.Registry))
	f := &avroFormat{envelope: cfg.Envelope, timeUnit: format.TimeUnit(cfg.Table != nil), registry: reg,
		backward: cfg.Format.SchemaCompatibility == "backward", truncated: env.Truncated}
	if cfg.Table != nil && cfg.Table.TimestampMicros {
		f.micros = true
		env.Log.Info("table.timestamp_precision is micros: Avro timestamp-nanos and local-timestamp-nanos fields are written as TIMESTAMP(MICROS), "+
			"their digits below the microsecond cut and counted (each schema's log line names them)", "metric", "pqsink_table_timestamps_truncated_total")
	}
	return f, nil
}

func (f *avroFormat) FixedSchema() (*schema.Schema, error) { return nil, nil }
func (f *avroFormat) TableSchema() (*schema.Schema, error) { return nil, nil }
func (f *avroFormat) SchemaPerRecord() bool                { return true }
func (f *avroFormat) Binary() bool                         { return true }
func (f *avroFormat) Fixed() *format.Schema                { return nil }
func (f *avroFormat) TextOptions() []rowgroup.JSONOption   { return nil }

func (f *avroFormat) NewDecoder(p format.Partition) format.Decoder {
	return &decoder{f: f, p: p, log: p.Log, schemas: map[uint32]*writerSchema{}, compat: map[[2]uint32]error{}}
}

// lookupOptions are the options of the format's avrorow lookups of a
// table's partition fields: their nanosecond timestamps and times of day
// in milliseconds as the files' columns hold them.
func (f *avroFormat) lookupOptions() []avrorow.Option {
	var opts []avrorow.Option
	if f.timeUnit == schema.Micros {
		opts = append(opts, avrorow.MicrosTimes())
	}
	if f.micros {
		opts = append(opts, avrorow.MicrosTimestamps())
	}
	return opts
}

// writerSchema is a writer schema seen by a partition, with its Parquet
// schema (or why there is none).
type writerSchema struct {
	id   uint32
	avro *avro.Schema
	// envelope is, with a Debezium envelope, the registry's schema of the
	// events, whose row's schema is avro.
	envelope *avro.Schema
	err      error // the schema cannot be the files' schema
	shared   format.Schema
}

func (w *writerSchema) parquet() *schema.Schema { return w.shared.Parquet }

// decoder is a partition's side of the Avro format: the writer schemas its
// records were written with, and which resolve onto which.
type decoder struct {
	f       *avroFormat
	p       format.Partition
	log     *slog.Logger
	schemas map[uint32]*writerSchema
	ids     []uint32            // of schemas, ascending: ids grow with registration
	compat  map[[2]uint32]error // avro.Resolve(writer, reader) by (writer id, reader id)
	// debezium: the registry's schemas are Debezium envelopes, and the
	// files' those of their rows (debezium.go).
	debezium bool
}

func (a *decoder) Sampling() bool              { return false }
func (a *decoder) Sample([]byte) bool          { return true }
func (a *decoder) Learn(context.Context) error { return nil }

// Reason is decode for a record that its builder refused, unless the
// envelope did: Avro binary that its writer schema does not read.
func (a *decoder) Reason(err error) string { return format.DecodeReason(err) }

// resolves reports whether records of w can be read as records of r, by
// Avro's resolution rules; computed once per pair.
func (a *decoder) resolves(w, r *writerSchema) error {
	if w.id == r.id {
		return nil
	}
	key := [2]uint32{w.id, r.id}
	err, ok := a.compat[key]
	if !ok {
		_, err = avro.Resolve(w.avro, r.avro)
		a.compat[key] = err
	}
	return err
}

// fileState is the Avro part of a file's buffers: its reader schema and a
// row builder per writer schema id, each with its compiled decoder. They
// are bound to the row group, so they live and die with it.
type fileState struct {
	reader   *writerSchema
	builders map[uint32]*rowgroup.Builder
	cut      *atomic.Int64 // the format's count of timestamps cut to microseconds
}

// builder returns the builder of records written with w, compiling its
// decoder (resolving onto the reader schema when w is another one) the
// first time.
func (st *fileState) builder(fb *format.Buffers, w *writerSchema) (*rowgroup.Builder, error) {
	if b := st.builders[w.id]; b != nil {
		return b, nil
	}
	var opts []avrorow.Option
	if w.id != st.reader.id {
		opts = append(opts, avrorow.ReaderSchema(st.reader.avro))
	}
	if st.cut != nil {
		opts = append(opts, avrorow.CountTruncated(st.cut))
	}
	dec, err := avrorow.NewDecoder(fb.Group, w.avro, opts...)
	if err != nil {
		return nil, err
	}
	b, err := rowgroup.NewBuilder(fb.Group, dec)
	if err != nil {
		return nil, err
	}
	st.builders[w.id] = b
	return b, nil
}

// newBuffers builds the buffers of files whose reader schema is r.
func newBuffers(r *writerSchema, cut *atomic.Int64) (*format.Buffers, error) {
	st := &fileState{reader: r, builders: map[uint32]*rowgroup.Builder{}, cut: cut}
	// As parquet-java does: the Avro schema the rows follow.
	fb := &format.Buffers{Schema: r.parquet(), Group: rowgroup.New(r.parquet()), Own: st,
		KeyValues: [][2]string{{avro.MetadataKey, r.avro.String()}}}
	b, err := st.builder(fb, r)
	if err != nil {
		return nil, err
	}
	fb.Builder = b
	return fb, nil
}

func (a *decoder) decoded(body []byte, s *writerSchema) format.Decoded {
	return format.Decoded{Payload: body, Schema: &s.shared}
}

// Decode splits the value and finds its writer schema. A value not in the
// wire format, or of a schema id the registry does not know, is a
// rejection; a registry that cannot be reached is an error (ErrRestart
// after a pause): the record is read again, never rejected for it.
func (a *decoder) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	id, body, err := schemaregistry.SplitWire(value)
	if err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("avro: %w", err)}, nil
	}
	s, rej, err := a.writer(ctx, id, offset)
	if s == nil {
		return format.Decoded{}, rej, err
	}
	return a.decoded(body, s), nil, nil
}

// writer returns the writer schema of id, from the partition's or the
// registry: nil with a rejection for a schema its records cannot be
// written with, or with an error as Decode returns it.
func (a *decoder) writer(ctx context.Context, id uint32, offset int64) (*writerSchema, *format.Rejection, error) {
	if s := a.schemas[id]; s != nil {
		if s.err != nil {
			return nil, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
		}
		return s, nil, nil
	}
	as, err := a.f.registry.SchemaByID(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, schemaregistry.ErrNotFound):
		return nil, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("avro schema id %d: %w", id, err)}, nil
	case errors.Is(err, schemaregistry.ErrUnusable):
		s := &writerSchema{id: id, err: fmt.Errorf("avro schema id %d: %w", id, err)}
		a.schemas[id] = s
		return nil, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	default:
		return nil, nil, format.RegistryUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
	}
	s := &writerSchema{id: id, avro: as}
	if a.debezium {
		// The registry's schema is the event's; the files' is its row's.
		s.envelope = as
		if s.avro, err = debeziumRow(as); err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
			a.schemas[id] = s
			return nil, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
		}
		as = s.avro
	}
	s.shared = format.Schema{Name: fmt.Sprintf("avro schema id %d", id), Own: s,
		NewLookup: func(paths [][]string, forTable bool) (format.Lookup, error) {
			if forTable {
				return avrorow.NewLookup(as, paths, a.f.lookupOptions()...)
			}
			return avrorow.NewLookup(as, paths)
		}}
	var extra []*schema.Node
	if a.f.envelope {
		extra = append(extra, rowgroup.EnvelopeNodeIn(a.f.timeUnit))
	}
	var ps *schema.Schema
	if ps, err = as.Parquet(extra...); err != nil {
		s.err = fmt.Errorf("avro schema id %d: %w", id, err)
	}
	if s.err == nil && a.f.timeUnit == schema.Micros {
		// A table's file: Iceberg's timestamps are microseconds in
		// Parquet, and engines that read a millisecond column of one
		// misread or refuse it. The decoder multiplies. Likewise a
		// time-millis (INT32 TIME(MILLIS)), which Iceberg's time,
		// microseconds in an INT64, cannot take.
		if ps, _, err = schema.WidenMillis(ps); err == nil {
			ps, _, err = schema.WidenTimeMillis(ps)
		}
		if err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		}
	}
	if s.err == nil && a.f.micros {
		if ps, err = a.narrowNanos(id, ps); err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		}
	}
	if s.err == nil && a.p.Fit != nil {
		fitted, err := a.p.Fit(ctx, ps)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		case err != nil:
			// Not remembered: the schema is fitted again when the
			// record is read again.
			return nil, nil, format.CatalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		default:
			ps = fitted
		}
	}
	s.shared.Parquet = ps
	if s.err == nil && a.p.Compile != nil {
		schemaErr, err := a.p.Compile(ctx, &s.shared)
		switch {
		case schemaErr != nil:
			s.err = fmt.Errorf("avro schema id %d: %w", id, schemaErr)
		case err != nil:
			return nil, nil, format.CatalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		}
	}
	a.schemas[id] = s
	i := sort.Search(len(a.ids), func(i int) bool { return a.ids[i] >= id })
	a.ids = append(a.ids, 0)
	copy(a.ids[i+1:], a.ids[i:])
	a.ids[i] = id
	a.log.Info("avro schema", "schema_id", id, "usable", s.err == nil)
	if s.err != nil {
		return nil, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
	}
	return s, nil, nil
}

// Fits returns the builder of fb for records of d's writer schema, or nil
// when fb's file must be finished first: its schema is another, and with
// backward, the writer schema is newer than the file's or does not
// resolve onto it.
func (a *decoder) Fits(fb *format.Buffers, d format.Decoded) *rowgroup.Builder {
	w := d.Schema.Own.(*writerSchema)
	st := fb.Own.(*fileState)
	if b := st.builders[w.id]; b != nil {
		return b
	}
	rd := st.reader
	if !a.f.backward {
		a.log.Info("schema changed: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id)
		return nil
	}
	if w.id > rd.id {
		if err := a.resolves(rd, w); err != nil {
			a.log.Warn("incompatible schema change: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		} else {
			a.log.Info("newer schema: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id)
		}
		return nil
	}
	if err := a.resolves(w, rd); err != nil {
		a.log.Warn("incompatible schema: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		return nil
	}
	if !KeepsPaths(w.avro.Root, rd.avro.Root, a.p.Paths) {
		a.log.Info("the file's schema would change the record's partition fields: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id)
		return nil
	}
	b, err := st.builder(fb, w)
	if err != nil {
		a.log.Warn("incompatible schema: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		return nil
	}
	return b
}

// reader picks the reader schema of a new file whose first record was
// written with w: w itself, or with backward the newest schema seen that
// w resolves onto.
func (a *decoder) reader(w *writerSchema) *writerSchema {
	if !a.f.backward {
		return w
	}
	for i := len(a.ids) - 1; i >= 0 && a.ids[i] > w.id; i-- {
		r := a.schemas[a.ids[i]]
		if r.err == nil && a.resolves(w, r) == nil && KeepsPaths(w.avro.Root, r.avro.Root, a.p.Paths) {
			return r
		}
	}
	return w
}

// BuffersKey is the id of the reader schema of a file whose first record
// is d.
func (a *decoder) BuffersKey(d format.Decoded) any {
	return a.reader(d.Schema.Own.(*writerSchema)).id
}

// NewBuffers makes the buffers of the reader schema of d.
func (a *decoder) NewBuffers(d format.Decoded) (*format.Buffers, error) {
	return newBuffers(a.reader(d.Schema.Own.(*writerSchema)), a.f.truncated)
}

// narrowNanos makes the nanosecond timestamps (timestamp-nanos,
// local-timestamp-nanos) of writer schema id's Parquet schema s
// microseconds, with table.timestamp_precision micros: Iceberg's
// nanosecond types are format version 3's, and most engines read
// version 2 only. The decoders floor the values and count the cut ones;
// the schema's log line names the fields.
func (a *decoder) narrowNanos(id uint32, s *schema.Schema) (*schema.Schema, error) {
	var fields []string
	for _, l := range s.Leaves() {
		if l.Logical.Kind == schema.Timestamp && l.Logical.Unit == schema.Nanos {
			fields = append(fields, l.PathString())
		}
	}
	if len(fields) == 0 {
		return s, nil
	}
	n, _, err := schema.NarrowNanos(s)
	if err != nil {
		return nil, err
	}
	a.log.Info("avro schema: nanosecond timestamps written in microseconds, the digits below cut and counted (table.timestamp_precision: micros)",
		"schema_id", id, "fields", fields, "metric", "pqsink_table_timestamps_truncated_total")
	return n, nil
}
