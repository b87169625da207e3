package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/table"
)

// The Protobuf format with a registry (format.type: protobuf with
// format.registry). Each record value is in Confluent's wire format: magic
// byte 0, the 4-byte id of its schema in the Schema Registry, the message
// indexes that name its message type in that schema, then the message.
// The files' schema follows the records: a file holds the records of one
// (schema id, message), and a record of another rotates the file (reason
// schema), as Avro does with schema_compatibility: none.

// Footer entries of a file of registry Protobuf records: the schema id
// and the message indexes its records were written with, so that replay
// can write their Confluent header again.
const (
	protobufSchemaIDKey = "pqsink.protobuf.schema_id"
	protobufIndexesKey  = "pqsink.protobuf.message_indexes"
)

// protoSchema is a (schema id, message) seen by a partition, with its
// Parquet schema (or why there is none).
type protoSchema struct {
	id      uint32
	indexes []int
	message protoreflect.MessageDescriptor
	parquet *schema.Schema
	err     error // the message cannot be the files' schema
	// part computes the values of the table's partition fields over
	// payload columns for records of this message; nil without them.
	part *payloadPart
	// path computes the path's {field} values and time_field of records
	// of this message, without a table; nil without them.
	path *payloadPath
}

// indexText is the message indexes as the footer writes them: "0" or
// "1,3".
func indexText(indexes []int) string {
	var b strings.Builder
	for i, x := range indexes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// protobufRegistryFormat is a partition's side of the Protobuf format with
// a registry: the schemas its records were written with.
type protobufRegistryFormat struct {
	f       *format
	log     *slog.Logger
	schemas map[string]*protoSchema // by id and indexes: "7/0"
	last    *protoSchema            // of the last record, looked up without a key
	idx     []int                   // scratch for SplitWire
	fit     fitFunc                 // with a table: the files' schemas take its field ids
	// table is the committer of the partition's table, when its partition
	// fields over payload columns take their values from the records
	// (payloadPart); nil otherwise.
	table *tableCommitter
	// path is what the path's {field} parts and time_field read, without
	// a table (payloadPath); nil without them.
	path *pathSpec
}

func newProtobufRegistryFormat(f *format, log *slog.Logger) *protobufRegistryFormat {
	return &protobufRegistryFormat{f: f, log: log, schemas: map[string]*protoSchema{}}
}

func (a *protobufRegistryFormat) sampling() bool              { return false }
func (a *protobufRegistryFormat) sample(*record) bool         { return true }
func (a *protobufRegistryFormat) learn(context.Context) error { return nil }

// reason is decode for a record that its builder refused, unless the
// envelope did: wire bytes that are not a message of their type.
func (a *protobufRegistryFormat) reason(err error) string {
	if r := classify(err); r == rejectEnvelope {
		return r
	}
	return rejectDecode
}

// decode splits r's value and finds its message type. A value not in the
// wire format, of a schema id the registry does not know or of message
// indexes the schema lacks is a rejection (decode); a schema that cannot
// be used (not PROTOBUF, not compiling, a recursive message) is a
// rejection (schema); a registry that cannot be reached is an error
// (errRestart after a pause): the record is read again, never rejected
// for it.
func (a *protobufRegistryFormat) decode(ctx context.Context, r *record) (decoded, *rejection, error) {
	id, idx, body, err := protobuf.SplitWire(r.value, a.idx[:0])
	a.idx = idx
	if err != nil {
		return decoded{}, &rejection{rejectDecode, err}, nil
	}
	s := a.last
	if s == nil || s.id != id || !slices.Equal(s.indexes, idx) {
		key := strconv.FormatUint(uint64(id), 10) + "/" + indexText(idx)
		if s = a.schemas[key]; s == nil {
			var rej *rejection
			if s, rej, err = a.lookup(ctx, id, idx, r.offset); s == nil {
				return decoded{}, rej, err
			}
			a.schemas[key] = s
		}
		a.last = s
	}
	if s.err != nil {
		return decoded{}, &rejection{rejectSchema, s.err}, nil
	}
	return decoded{payload: body, proto: s}, nil, nil
}

// lookup reads schema id from the registry and finds the message at idx.
func (a *protobufRegistryFormat) lookup(ctx context.Context, id uint32, idx []int, offset int64) (*protoSchema, *rejection, error) {
	fd, err := a.f.protoRegistry.FileByID(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, avro.ErrNotFound):
		return nil, &rejection{rejectDecode, fmt.Errorf("protobuf schema id %d: %w", id, err)}, nil
	case errors.Is(err, avro.ErrUnusable):
		s := &protoSchema{id: id, indexes: slices.Clone(idx), err: fmt.Errorf("protobuf schema id %d: %w", id, err)}
		a.log.Warn("protobuf schema unusable", "schema_id", id, "error", err)
		return s, nil, nil
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	default:
		a.log.Error("schema registry unreachable; consuming again from the committed offset after a pause",
			"schema_id", id, "offset", offset, "pause", registryPause, "error", err)
		if !sleep(ctx, registryPause) {
			return nil, nil, ctx.Err()
		}
		return nil, nil, errRestart
	}
	md, err := protobuf.MessageAt(fd, idx)
	if err != nil {
		// Indexes the schema lacks: the value's header is wrong, not the
		// schema; other records of the id may be fine.
		return nil, &rejection{rejectDecode, fmt.Errorf("protobuf schema id %d: %w", id, err)}, nil
	}
	s := &protoSchema{id: id, indexes: slices.Clone(idx), message: md}
	if s.parquet, err = a.f.protobufSchema(md); err != nil {
		s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
	}
	if s.err == nil && a.fit != nil {
		fitted, err := a.fit(ctx, s.parquet)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
		case err != nil:
			// Not remembered: fitted again when the record is read again.
			return nil, nil, catalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		default:
			s.parquet = fitted
		}
	}
	if s.err == nil && a.table != nil && len(a.table.computed) > 0 {
		part, schemaErr, err := a.table.newProtoPart(ctx, md, s.parquet)
		switch {
		case schemaErr != nil:
			s.err = fmt.Errorf("protobuf schema id %d: partition fields: %w", id, schemaErr)
		case err != nil:
			return nil, nil, catalogUnreachable(ctx, a.log, err, "schema_id", id, "offset", offset)
		default:
			s.part = part
		}
	}
	if s.err == nil && a.path != nil {
		if s.path, err = a.path.proto(md); err != nil {
			s.err = fmt.Errorf("protobuf schema id %d: %w", id, err)
		}
	}
	attrs := []any{"schema_id", id, "message", md.FullName(), "indexes", indexText(idx), "usable", s.err == nil}
	if a.f.protoMicros {
		// table.timestamp_precision: micros, said at startup; here, the
		// fields it applies to.
		attrs = append(attrs, "timestamps_in_micros", timestampFields(md))
	}
	a.log.Info("protobuf schema", attrs...)
	return s, nil, nil
}

// fits returns the builder of fb when its records have d's schema id and
// message, else nil: the file must be finished first.
func (a *protobufRegistryFormat) fits(fb *fileBuffers, d decoded) *rowgroup.Builder {
	if fb.pb == d.proto {
		return fb.b
	}
	a.log.Info("schema changed: finishing the file", "file_schema_id", fb.pb.id, "record_schema_id", d.proto.id,
		"file_message", fb.pb.message.FullName(), "record_message", d.proto.message.FullName())
	return nil
}

// buffers takes idle buffers of d's schema, or makes them.
func (a *protobufRegistryFormat) buffers(d decoded, spare *[]*fileBuffers) (*fileBuffers, error) {
	sp := *spare
	for i := len(sp) - 1; i >= 0; i-- {
		if fb := sp[i]; fb.pb == d.proto {
			*spare = append(sp[:i], sp[i+1:]...)
			return fb, nil
		}
	}
	if n := len(sp); n >= maxAvroSpares {
		// Buffers of other schemas: let the oldest go.
		*spare = append(sp[:0], sp[n-maxAvroSpares+1:]...)
	}
	s := d.proto
	g := rowgroup.New(s.parquet)
	dec, err := protorow.NewDecoder(g, s.message, a.f.protoOptions()...)
	if err != nil {
		return nil, err
	}
	b, err := rowgroup.NewBuilder(g, dec)
	if err != nil {
		return nil, err
	}
	return &fileBuffers{schema: s.parquet, g: g, b: b, pb: s, keyValues: [][2]string{
		{protobuf.MessageKey, string(s.message.FullName())},
		{protobufSchemaIDKey, strconv.FormatUint(uint64(s.id), 10)},
		{protobufIndexesKey, indexText(s.indexes)},
	}}, nil
}
