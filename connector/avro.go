package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
)

// The Avro format (format.type: avro). Each record value is in the
// Confluent wire format: magic byte 0, the 4-byte id of its writer schema
// in the Schema Registry, then the record in Avro binary. The files'
// schema depends on the data: each open file has a reader schema (the
// Parquet schema is that of the reader schema, plus the envelope), and
// the records of one path whose schema differs from their file's either
// rotate it (reason schema) or, with schema_compatibility: backward, are
// resolved onto it.

// registryPause is how long a partition waits, after the registry's own
// retries failed, before it consumes again from its committed offset.
var registryPause = 5 * time.Second

// maxAvroSpares bounds the idle file buffers a partition keeps: with
// several schemas, buffers of another schema cannot be reused.
const maxAvroSpares = 4

// avroSchema is a writer schema seen by a partition, with its Parquet
// schema (or why there is none).
type avroSchema struct {
	id      uint32
	avro    *avro.Schema
	parquet *schema.Schema
	err     error // the schema cannot be the files' schema
	// part computes the values of the table's partition fields over
	// payload columns for records of this schema; nil without them.
	part *payloadPart
	// path computes the path's {field} values and time_field of records
	// of this schema, without a table; nil without them.
	path *payloadPath
}

// avroFormat is a partition's side of the Avro format: the writer schemas
// its records were written with, and which resolve onto which.
type avroFormat struct {
	f       *format
	log     *slog.Logger
	schemas map[uint32]*avroSchema
	ids     []uint32            // of schemas, ascending: ids grow with registration
	compat  map[[2]uint32]error // avro.Resolve(writer, reader) by (writer id, reader id)
	fit     fitFunc             // with a table: the files' schemas take its field ids
	// table is the committer of the partition's table, when its partition
	// fields over payload columns take their values from the records
	// (payloadPart); nil otherwise.
	table *tableCommitter
	// path is what the path's {field} parts and time_field read, without
	// a table (payloadPath); nil without them.
	path *pathSpec
}

func newAvroFormat(f *format, log *slog.Logger) *avroFormat {
	return &avroFormat{f: f, log: log, schemas: map[uint32]*avroSchema{}, compat: map[[2]uint32]error{}}
}

func (a *avroFormat) sampling() bool              { return false }
func (a *avroFormat) sample(*record) bool         { return true }
func (a *avroFormat) learn(context.Context) error { return nil }

// reason is decode for a record that its builder refused, unless the
// envelope did: Avro binary that its writer schema does not read.
func (a *avroFormat) reason(err error) string {
	if r := classify(err); r == rejectEnvelope {
		return r
	}
	return rejectDecode
}

// resolves reports whether records of w can be read as records of r, by
// Avro's resolution rules; computed once per pair.
func (a *avroFormat) resolves(w, r *avroSchema) error {
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

// avroBuffers are the Avro part of a file's buffers: its reader schema and
// a row builder per writer schema id, each with its compiled decoder.
// They are bound to the row group, so they live and die with it.
type avroBuffers struct {
	reader   *avroSchema
	builders map[uint32]*rowgroup.Builder
	cut      *atomic.Int64 // the format's count of timestamps cut to microseconds
}

// builder returns the builder of records written with w, compiling its
// decoder (resolving onto the reader schema when w is another one) the
// first time.
func (fb *fileBuffers) builder(w *avroSchema) (*rowgroup.Builder, error) {
	if b := fb.av.builders[w.id]; b != nil {
		return b, nil
	}
	var opts []avrorow.Option
	if w.id != fb.av.reader.id {
		opts = append(opts, avrorow.ReaderSchema(fb.av.reader.avro))
	}
	if fb.av.cut != nil {
		opts = append(opts, avrorow.CountTruncated(fb.av.cut))
	}
	dec, err := avrorow.NewDecoder(fb.g, w.avro, opts...)
	if err != nil {
		return nil, err
	}
	b, err := rowgroup.NewBuilder(fb.g, dec)
	if err != nil {
		return nil, err
	}
	fb.av.builders[w.id] = b
	return b, nil
}

// newAvroBuffers builds the buffers of files whose reader schema is r.
func newAvroBuffers(r *avroSchema, cut *atomic.Int64) (*fileBuffers, error) {
	fb := &fileBuffers{schema: r.parquet, g: rowgroup.New(r.parquet), av: &avroBuffers{reader: r, builders: map[uint32]*rowgroup.Builder{}, cut: cut}}
	b, err := fb.builder(r)
	if err != nil {
		return nil, err
	}
	fb.b = b
	return fb, nil
}

// decode splits r's value and finds its writer schema. A value not in the
// wire format, or of a schema id the registry does not know, is a
// rejection; a registry that cannot be reached is an error (errRestart
// after a pause): the record is read again, never rejected for it.
func (a *avroFormat) decode(ctx context.Context, r *record) (decoded, *rejection, error) {
	id, body, err := avro.SplitWire(r.value)
	if err != nil {
		return decoded{}, &rejection{rejectDecode, err}, nil
	}
	if s := a.schemas[id]; s != nil {
		if s.err != nil {
			return decoded{}, &rejection{rejectSchema, s.err}, nil
		}
		return decoded{payload: body, writer: s}, nil, nil
	}
	as, err := a.f.registry.SchemaByID(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, avro.ErrNotFound):
		return decoded{}, &rejection{rejectDecode, fmt.Errorf("avro schema id %d: %w", id, err)}, nil
	case errors.Is(err, avro.ErrUnusable):
		s := &avroSchema{id: id, err: fmt.Errorf("avro schema id %d: %w", id, err)}
		a.schemas[id] = s
		return decoded{}, &rejection{rejectSchema, s.err}, nil
	case ctx.Err() != nil:
		return decoded{}, nil, ctx.Err()
	default:
		a.log.Error("schema registry unreachable; consuming again from the committed offset after a pause",
			"schema_id", id, "offset", r.offset, "pause", registryPause, "error", err)
		if !sleep(ctx, registryPause) {
			return decoded{}, nil, ctx.Err()
		}
		return decoded{}, nil, errRestart
	}
	s := &avroSchema{id: id, avro: as}
	var extra []*schema.Node
	if a.f.envelope {
		extra = append(extra, rowgroup.EnvelopeNodeIn(a.f.timeUnit))
	}
	if s.parquet, err = as.Parquet(extra...); err != nil {
		s.err = fmt.Errorf("avro schema id %d: %w", id, err)
	}
	if s.err == nil && a.f.timeUnit == schema.Micros {
		// A table's file: Iceberg's timestamps are microseconds in
		// Parquet, and engines that read a millisecond column of one
		// misread or refuse it. The decoder multiplies. Likewise a
		// time-millis (INT32 TIME(MILLIS)), which Iceberg's time,
		// microseconds in an INT64, cannot take.
		if s.parquet, _, err = schema.WidenMillis(s.parquet); err == nil {
			s.parquet, _, err = schema.WidenTimeMillis(s.parquet)
		}
		if err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		}
	}
	if s.err == nil && a.f.protoMicros {
		if s.parquet, err = a.narrowNanos(id, s.parquet); err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		}
	}
	if s.err == nil && a.fit != nil {
		fitted, err := a.fit(ctx, s.parquet)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		case err != nil:
			// Not remembered: the schema is fitted again when the
			// record is read again.
			return decoded{}, nil, catalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", r.offset)
		default:
			s.parquet = fitted
		}
	}
	if s.err == nil && a.table != nil && len(a.table.computed) > 0 {
		part, schemaErr, err := a.table.newAvroPart(ctx, as, s.parquet)
		switch {
		case schemaErr != nil:
			s.err = fmt.Errorf("avro schema id %d: partition fields: %w", id, schemaErr)
		case err != nil:
			return decoded{}, nil, catalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", r.offset)
		default:
			s.part = part
		}
	}
	if s.err == nil && a.path != nil {
		if s.path, err = a.path.avro(as); err != nil {
			s.err = fmt.Errorf("avro schema id %d: %w", id, err)
		}
	}
	a.schemas[id] = s
	i := sort.Search(len(a.ids), func(i int) bool { return a.ids[i] >= id })
	a.ids = append(a.ids, 0)
	copy(a.ids[i+1:], a.ids[i:])
	a.ids[i] = id
	a.log.Info("avro schema", "schema_id", id, "usable", s.err == nil)
	if s.err != nil {
		return decoded{}, &rejection{rejectSchema, s.err}, nil
	}
	return decoded{payload: body, writer: s}, nil, nil
}

// fits returns the builder of fb for records of d's writer schema, or nil
// when fb's file must be finished first: its schema is another, and with
// backward, the writer schema is newer than the file's or does not
// resolve onto it.
func (a *avroFormat) fits(fb *fileBuffers, d decoded) *rowgroup.Builder {
	w := d.writer
	if b := fb.av.builders[w.id]; b != nil {
		return b
	}
	rd := fb.av.reader
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
	if !a.keepsPartition(w, rd) {
		a.log.Info("the file's schema would change the record's partition fields: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id)
		return nil
	}
	b, err := fb.builder(w)
	if err != nil {
		a.log.Warn("incompatible schema: finishing the file", "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		return nil
	}
	return b
}

// keepsPartition reports whether records of w, read as r, keep the values
// of the table's partition fields that their path follows (keepsPaths).
func (a *avroFormat) keepsPartition(w, r *avroSchema) bool {
	if a.path != nil {
		return keepsPaths(w.avro.Root, r.avro.Root, a.path.paths)
	}
	return a.table == nil || len(a.table.computed) == 0 || keepsPaths(w.avro.Root, r.avro.Root, a.table.lookupPaths)
}

// reader picks the reader schema of a new file whose first record was
// written with w: w itself, or with backward the newest schema seen that
// w resolves onto.
func (a *avroFormat) reader(w *avroSchema) *avroSchema {
	if !a.f.backward {
		return w
	}
	for i := len(a.ids) - 1; i >= 0 && a.ids[i] > w.id; i-- {
		r := a.schemas[a.ids[i]]
		if r.err == nil && a.resolves(w, r) == nil && a.keepsPartition(w, r) {
			return r
		}
	}
	return w
}

// buffers takes idle buffers of the reader schema of d, or makes them.
func (a *avroFormat) buffers(d decoded, spare *[]*fileBuffers) (*fileBuffers, error) {
	r := a.reader(d.writer)
	sp := *spare
	for i := len(sp) - 1; i >= 0; i-- {
		if fb := sp[i]; fb.av != nil && fb.av.reader.id == r.id {
			*spare = append(sp[:i], sp[i+1:]...)
			return fb, nil
		}
	}
	if n := len(sp); n >= maxAvroSpares {
		// Buffers of other schemas: let the oldest go.
		*spare = append(sp[:0], sp[n-maxAvroSpares+1:]...)
	}
	return newAvroBuffers(r, a.f.truncated)
}
