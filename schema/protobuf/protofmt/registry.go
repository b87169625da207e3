package protofmt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/table"
)

// The Protobuf format with a registry (format.registry). Each record
// value is in Confluent's wire format: magic byte 0, the 4-byte id of its
// schema in the Schema Registry, the message indexes that name its message
// type in that schema, then the message. The files' schema follows the
// records: a file holds the records of one (schema id, message), and a
// record of another rotates the file (reason schema), as Avro does with
// schema_compatibility: none.

// Footer entries of a file of registry Protobuf records: the schema id
// and the message indexes its records were written with, so that replay
// can write their Confluent header again. They are declared once, in
// archive, whose readers (envelope, merge, compact) import no format.
const (
	SchemaIDKey = archive.ProtobufSchemaIDKey
	IndexesKey  = archive.ProtobufIndexesKey
)

// messageSchema is a (schema id, message) seen by a partition, with its
// Parquet schema (or why there is none).
type messageSchema struct {
	id      uint32
	indexes []int
	message protoreflect.MessageDescriptor
	err     error // the message cannot be the files' schema
	shared  format.Schema
	// event is where a Debezium envelope's members are, when the
	// partition reads events: message is then the envelope's row.
	event *eventFields
}

// IndexText is the message indexes as the footer writes them: "0" or
// "1,3".
func IndexText(indexes []int) string {
	var b strings.Builder
	for i, x := range indexes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// registryDecoder is a partition's side of the Protobuf format with a
// registry: the schemas its records were written with.
type registryDecoder struct {
	f       *protoFormat
	p       format.Partition
	log     *slog.Logger
	schemas map[string]*messageSchema // by id and indexes: "7/0"
	last    *messageSchema            // of the last record, looked up without a key
	idx     []int                     // scratch for SplitWire
	// debezium: values are Debezium events, and the files' rows are
	// their after's (debezium.go).
	debezium bool
}

func newRegistryDecoder(f *protoFormat, p format.Partition) *registryDecoder {
	return &registryDecoder{f: f, p: p, log: p.Log, schemas: map[string]*messageSchema{}}
}

func (a *registryDecoder) Sampling() bool              { return false }
func (a *registryDecoder) Sample([]byte) bool          { return true }
func (a *registryDecoder) Learn(context.Context) error { return nil }

// Reason is decode for a record that its builder refused, unless the
// envelope did: wire bytes that are not a message of their type.
func (a *registryDecoder) Reason(err error) string { return format.DecodeReason(err) }

// Decode splits the value and finds its message type. A value not in the
// wire format, of a schema id the registry does not know or of message
// indexes the schema lacks is a rejection (decode); a schema that cannot
// be used (not PROTOBUF, not compiling, a recursive message) is a
// rejection (schema); a registry that cannot be reached is an error
// (ErrRestart after a pause): the record is read again, never rejected
// for it.
func (a *registryDecoder) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	id, idx, body, err := protobuf.SplitWire(value, a.idx[:0])
	a.idx = idx
	if err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: err}, nil
	}
	s := a.last
	if s == nil || s.id != id || !slices.Equal(s.indexes, idx) {
		key := strconv.FormatUint(uint64(id), 10) + "/" + IndexText(idx)
		if s = a.schemas[key]; s == nil {
			var rej *format.Rejection
			if s, rej, err = a.lookup(ctx, id, idx, offset); s == nil {
				return format.Decoded{}, rej, err
			}
			a.schemas[key] = s
		}
		a.last = s
	}
	if s.err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
	}
	return format.Decoded{Payload: body, Schema: &s.shared}, nil, nil
}

// lookup reads schema id from the registry and finds the message at idx.
func (a *registryDecoder) lookup(ctx context.Context, id uint32, idx []int, offset int64) (*messageSchema, *format.Rejection, error) {
	fd, err := a.f.registry.FileByID(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, schemaregistry.ErrNotFound):
		return nil, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("protobuf schema id %d: %w", id, err)}, nil
	case errors.Is(err, schemaregistry.ErrUnusable):
		s := &messageSchema{id: id, indexes: slices.Clone(idx), err: fmt.Errorf("protobuf schema id %d: %w", id, err)}
		a.log.Warn("protobuf schema unusable", "schema_id", id, "error", err)
		return s, nil, nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	default:
		return nil, nil, format.RegistryUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
	}
	md, err := protobuf.MessageAt(fd, idx)
	if err != nil {
		// Indexes the schema lacks: the value's header is wrong, not the
		// schema; other records of the id may be fine.
		return nil, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("protobuf schema id %d: %w", id, err)}, nil
	}
	s := &messageSchema{id: id, indexes: slices.Clone(idx), message: md}
	if a.debezium {
		row, ev, err := debeziumRow(md)
		if err != nil {
			s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
			a.log.Warn("protobuf schema unusable", "schema_id", id, "error", s.err)
			return s, nil, nil
		}
		s.message, s.event, md = row, ev, row
	}
	s.shared = format.Schema{Name: fmt.Sprintf("protobuf schema id %d", id), Own: s, NewLookup: a.f.newLookup(md)}
	if s.shared.Parquet, err = a.f.schema(md); err != nil {
		s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
	}
	if s.err == nil && a.p.Fit != nil {
		fitted, err := a.p.Fit(ctx, s.shared.Parquet)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
		case err != nil:
			// Not remembered: fitted again when the record is read again.
			return nil, nil, format.CatalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		default:
			s.shared.Parquet = fitted
		}
	}
	if s.err == nil && a.p.Compile != nil {
		schemaErr, err := a.p.Compile(ctx, &s.shared)
		switch {
		case schemaErr != nil:
			s.err = fmt.Errorf("protobuf schema id %d: %w", id, schemaErr)
		case err != nil:
			return nil, nil, format.CatalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		}
	}
	attrs := []any{"schema_id", id, "message", md.FullName(), "indexes", IndexText(idx), "usable", s.err == nil}
	if a.f.micros {
		// table.timestamp_precision: micros, said at startup; here, the
		// fields it applies to.
		attrs = append(attrs, "timestamps_in_micros", timestampFields(md))
	}
	a.log.Info("protobuf schema", attrs...)
	return s, nil, nil
}

// Fits returns the builder of fb when its records have d's schema id and
// message, else nil: the file must be finished first.
func (a *registryDecoder) Fits(fb *format.Buffers, d format.Decoded) *rowgroup.Builder {
	if fb.Own == d.Schema.Own {
		return fb.Builder
	}
	fs, ds := fb.Own.(*messageSchema), d.Schema.Own.(*messageSchema)
	a.log.Info("schema changed: finishing the file", "file_schema_id", fs.id, "record_schema_id", ds.id,
		"file_message", fs.message.FullName(), "record_message", ds.message.FullName())
	return nil
}

// BuffersKey is d's schema: buffers of its schema id and message.
func (a *registryDecoder) BuffersKey(d format.Decoded) any { return d.Schema.Own }

// NewBuffers makes buffers of d's schema.
func (a *registryDecoder) NewBuffers(d format.Decoded) (*format.Buffers, error) {
	s := d.Schema.Own.(*messageSchema)
	fb, err := format.NewBuffers(s.shared.Parquet, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return protorow.NewDecoder(g, s.message, a.f.decoderOptions()...)
	})
	if err != nil {
		return nil, err
	}
	fb.Own = s
	fb.KeyValues = [][2]string{
		{protobuf.MessageKey, string(s.message.FullName())},
		{SchemaIDKey, strconv.FormatUint(uint64(s.id), 10)},
		{IndexesKey, IndexText(s.indexes)},
	}
	return fb, nil
}
