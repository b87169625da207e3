package connector

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
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
}

// avroState is a partition's view of the Avro schemas: those its records
// were written with, and which resolve onto which.
type avroState struct {
	schemas map[uint32]*avroSchema
	ids     []uint32            // of schemas, ascending: ids grow with registration
	compat  map[[2]uint32]error // avro.Resolve(writer, reader) by (writer id, reader id)
}

func newAvroState() *avroState {
	return &avroState{schemas: map[uint32]*avroSchema{}, compat: map[[2]uint32]error{}}
}

// resolves reports whether records of w can be read as records of r, by
// Avro's resolution rules; computed once per pair.
func (a *avroState) resolves(w, r *avroSchema) error {
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
func newAvroBuffers(r *avroSchema) (*fileBuffers, error) {
	fb := &fileBuffers{schema: r.parquet, g: rowgroup.New(r.parquet), av: &avroBuffers{reader: r, builders: map[uint32]*rowgroup.Builder{}}}
	b, err := fb.builder(r)
	if err != nil {
		return nil, err
	}
	fb.b = b
	return fb, nil
}

// avroWriter splits r's value and finds its writer schema. A value not in
// the wire format, or of a schema id the registry does not know, is a
// rejection; a registry that cannot be reached is an error (errRestart
// after a pause): the record is read again, never rejected for it.
func (p *partition) avroWriter(ctx context.Context, r *record) (*avroSchema, []byte, *rejection, error) {
	id, body, err := avro.SplitWire(r.value)
	if err != nil {
		return nil, nil, &rejection{rejectDecode, err}, nil
	}
	if s := p.av.schemas[id]; s != nil {
		if s.err != nil {
			return nil, nil, &rejection{rejectSchema, s.err}, nil
		}
		return s, body, nil, nil
	}
	as, err := p.s.format.registry.SchemaByID(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, avro.ErrNotFound):
		return nil, nil, &rejection{rejectDecode, fmt.Errorf("avro schema id %d: %w", id, err)}, nil
	case errors.Is(err, avro.ErrUnusable):
		s := &avroSchema{id: id, err: fmt.Errorf("avro schema id %d: %w", id, err)}
		p.av.schemas[id] = s
		return nil, nil, &rejection{rejectSchema, s.err}, nil
	case ctx.Err() != nil:
		return nil, nil, nil, ctx.Err()
	default:
		p.log.Error("schema registry unreachable; consuming again from the committed offset after a pause",
			"schema_id", id, "offset", r.offset, "committed", p.committed, "pause", registryPause, "error", err)
		if !sleep(ctx, registryPause) {
			return nil, nil, nil, ctx.Err()
		}
		return nil, nil, nil, errRestart
	}
	s := &avroSchema{id: id, avro: as}
	var extra []*schema.Node
	if p.s.format.envelope {
		extra = append(extra, rowgroup.EnvelopeNode())
	}
	if s.parquet, err = as.Parquet(extra...); err != nil {
		s.err = fmt.Errorf("avro schema id %d: %w", id, err)
	}
	p.av.schemas[id] = s
	i := sort.Search(len(p.av.ids), func(i int) bool { return p.av.ids[i] >= id })
	p.av.ids = append(p.av.ids, 0)
	copy(p.av.ids[i+1:], p.av.ids[i:])
	p.av.ids[i] = id
	p.log.Info("avro schema", "schema_id", id, "usable", s.err == nil)
	if s.err != nil {
		return nil, nil, &rejection{rejectSchema, s.err}, nil
	}
	return s, body, nil, nil
}

// avroFits returns the builder of f for records of w, or nil when f must
// be finished first: its schema is another, and with backward, w is
// newer than f's schema or does not resolve onto it.
func (p *partition) avroFits(f *openFile, w *avroSchema) *rowgroup.Builder {
	if b := f.buf.av.builders[w.id]; b != nil {
		return b
	}
	rd := f.buf.av.reader
	if !p.s.format.backward {
		p.log.Info("schema changed: finishing the file", "key", f.key, "file_schema_id", rd.id, "record_schema_id", w.id)
		return nil
	}
	if w.id > rd.id {
		if err := p.av.resolves(rd, w); err != nil {
			p.log.Warn("incompatible schema change: finishing the file", "key", f.key, "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		} else {
			p.log.Info("newer schema: finishing the file", "key", f.key, "file_schema_id", rd.id, "record_schema_id", w.id)
		}
		return nil
	}
	if err := p.av.resolves(w, rd); err != nil {
		p.log.Warn("incompatible schema: finishing the file", "key", f.key, "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		return nil
	}
	b, err := f.buf.builder(w)
	if err != nil {
		p.log.Warn("incompatible schema: finishing the file", "key", f.key, "file_schema_id", rd.id, "record_schema_id", w.id, "error", err)
		return nil
	}
	return b
}

// avroReader picks the reader schema of a new file whose first record was
// written with w: w itself, or with backward the newest schema seen that
// w resolves onto.
func (p *partition) avroReader(w *avroSchema) *avroSchema {
	if !p.s.format.backward {
		return w
	}
	for i := len(p.av.ids) - 1; i >= 0 && p.av.ids[i] > w.id; i-- {
		r := p.av.schemas[p.av.ids[i]]
		if r.err == nil && p.av.resolves(w, r) == nil {
			return r
		}
	}
	return w
}

// avroBuffersFor takes idle buffers of reader schema r, or makes them.
func (p *partition) avroBuffersFor(r *avroSchema) (*fileBuffers, error) {
	for i := len(p.spare) - 1; i >= 0; i-- {
		if fb := p.spare[i]; fb.av != nil && fb.av.reader.id == r.id {
			p.spare = append(p.spare[:i], p.spare[i+1:]...)
			return fb, nil
		}
	}
	if n := len(p.spare); n >= maxAvroSpares {
		// Buffers of other schemas: let the oldest go.
		p.spare = append(p.spare[:0], p.spare[n-maxAvroSpares+1:]...)
	}
	return newAvroBuffers(r)
}
