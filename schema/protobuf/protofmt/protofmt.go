// Package protofmt is the Protobuf format of the sink (format.type:
// protobuf). With format.proto_file, each record value is one plain
// serialized message of format.message: the files have one schema, the
// message's Parquet schema and the envelope. With format.registry, each
// value is in Confluent's wire format and the files' schema follows the
// records (registry.go).
package protofmt

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry/registryconfig"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// Name is the format's format.type.
const Name = "protobuf"

// protoFormat is the format opened for a sink.
type protoFormat struct {
	envelope bool
	timeUnit schema.TimeUnit
	// message is format.message of format.proto_file; registry, with
	// format.registry, gives the schemas by id.
	message  protoreflect.MessageDescriptor
	registry *protobuf.Registry
	// micros is table.timestamp_precision: micros: the Timestamps of a
	// table's files in microseconds; truncated counts those whose
	// nanoseconds were cut.
	micros    bool
	truncated *atomic.Int64
	fixed     *format.Schema // with format.proto_file
}

// Open is the format's format.Driver.
func Open(cfg *config.Config, env format.Env) (format.Format, error) {
	f := &protoFormat{envelope: cfg.Envelope, timeUnit: format.TimeUnit(cfg.Table != nil), truncated: env.Truncated}
	if cfg.Table != nil {
		f.micros = cfg.Table.TimestampMicros
	}
	p := cfg.Format.Protobuf
	if cfg.Format.Registry != nil {
		reg, err := registryconfig.New(cfg.Format.Registry)
		if err != nil {
			return nil, err
		}
		f.registry = protobuf.NewRegistry(reg, cfg.Format.Registry.CacheSize)
	} else {
		if p == nil || p.ProtoFile == "" {
			return nil, errors.New("format.type protobuf: needs format.registry or format.proto_file")
		}
		md, err := protobuf.LoadFile(context.Background(), p.ProtoFile, p.ImportPaths, p.Message)
		if err != nil {
			return nil, fmt.Errorf("format.proto_file: %w", err)
		}
		if _, err := protobuf.Parquet(md); err != nil {
			return nil, fmt.Errorf("format.message %s: %w", p.Message, err)
		}
		f.message = md
		f.fixed = &format.Schema{Name: "format.message " + string(md.FullName()), NewLookup: f.newLookup(md)}
	}
	if f.micros {
		attrs := []any{"metric", "pqsink_table_timestamps_truncated_total"}
		if f.message != nil {
			attrs = append(attrs, "message", f.message.FullName(), "fields", timestampFields(f.message))
		}
		env.Log.Info("table.timestamp_precision is micros: google.protobuf.Timestamp fields are written as TIMESTAMP(MICROS), "+
			"their digits below the microsecond cut and counted", attrs...)
	}
	return f, nil
}

// FixedSchema is format.message's with format.proto_file.
func (f *protoFormat) FixedSchema() (*schema.Schema, error) {
	if f.message == nil {
		return nil, nil
	}
	return f.schema(f.message)
}

func (f *protoFormat) TableSchema() (*schema.Schema, error) { return nil, nil }
func (f *protoFormat) SchemaPerRecord() bool                { return f.registry != nil }
func (f *protoFormat) Binary() bool                         { return true }
func (f *protoFormat) Fixed() *format.Schema                { return f.fixed }
func (f *protoFormat) TextOptions() []rowgroup.JSONOption   { return nil }

func (f *protoFormat) NewDecoder(p format.Partition) format.Decoder {
	if f.registry != nil {
		return newRegistryDecoder(f, p)
	}
	md := f.message
	return &format.Fixed{Schema: p.Schema, Rejects: format.DecodeReason,
		KeyValues: [][2]string{{protobuf.MessageKey, string(md.FullName())}},
		NewPayload: func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
			return protorow.NewDecoder(g, md, f.decoderOptions()...)
		}}
}

// schema is the files' schema of messages of md: with
// table.timestamp_precision micros, its Timestamps in microseconds
// (schema.NarrowNanos), which the decoder follows.
func (f *protoFormat) schema(md protoreflect.MessageDescriptor) (*schema.Schema, error) {
	var extra []*schema.Node
	if f.envelope {
		extra = append(extra, rowgroup.EnvelopeNodeIn(f.timeUnit))
	}
	s, err := protobuf.Parquet(md, extra...)
	if err != nil || !f.micros {
		return s, err
	}
	s, _, err = schema.NarrowNanos(s)
	if err != nil {
		return nil, fmt.Errorf("protobuf: message %s: %w", md.FullName(), err)
	}
	return s, nil
}

// timestampFields are the dotted paths of the Timestamp columns of md.
func timestampFields(md protoreflect.MessageDescriptor) []string {
	s, err := protobuf.Parquet(md)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range s.Leaves() {
		if l.Logical.Kind == schema.Timestamp {
			out = append(out, l.PathString())
		}
	}
	return out
}

// decoderOptions are the options of the format's protorow decoders.
func (f *protoFormat) decoderOptions() []protorow.Option {
	if f.truncated == nil {
		return nil
	}
	return []protorow.Option{protorow.CountTruncated(f.truncated)}
}

// newLookup compiles lookups of messages of md: with a table, their
// Timestamps as the files' columns hold them.
func (f *protoFormat) newLookup(md protoreflect.MessageDescriptor) func(paths [][]string, forTable bool) (format.Lookup, error) {
	return func(paths [][]string, forTable bool) (format.Lookup, error) {
		if forTable && f.micros {
			return protorow.NewLookup(md, paths, protorow.MicrosTimestamps())
		}
		return protorow.NewLookup(md, paths)
	}
}
