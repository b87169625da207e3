package connector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// The Protobuf format (format.type: protobuf). With format.proto_file,
// each record value is one plain serialized message of format.message: the
// files have one schema, the message's Parquet schema and the envelope,
// and the format is a fixedFormat whose payload is a compiled decoder.
// With format.registry, each value is in Confluent's wire format and the
// files' schema follows the records (see protobufRegistryFormat).

// newProtobuf readies f for format.type protobuf.
func (f *format) newProtobuf(cfg *config.Config) error {
	p := cfg.Format.Protobuf
	if cfg.Format.Registry != nil {
		reg, err := schemaregistry.New(cfg.Format.Registry)
		if err != nil {
			return err
		}
		f.protoRegistry = protobuf.NewRegistry(reg, cfg.Format.Registry.CacheSize)
		return nil
	}
	if p == nil || p.ProtoFile == "" {
		return errors.New("format.type protobuf: needs format.registry or format.proto_file")
	}
	md, err := protobuf.LoadFile(context.Background(), p.ProtoFile, p.ImportPaths, p.Message)
	if err != nil {
		return fmt.Errorf("format.proto_file: %w", err)
	}
	if _, err := protobuf.Parquet(md); err != nil {
		return fmt.Errorf("format.message %s: %w", p.Message, err)
	}
	f.protoMessage = md
	return nil
}

// protobufSchema is the files' schema of messages of md: with
// table.timestamp_precision micros, its Timestamps in microseconds
// (schema.NarrowNanos), which the decoder follows.
func (f *format) protobufSchema(md protoreflect.MessageDescriptor) (*schema.Schema, error) {
	var extra []*schema.Node
	if f.envelope {
		extra = append(extra, rowgroup.EnvelopeNodeIn(f.timeUnit))
	}
	s, err := protobuf.Parquet(md, extra...)
	if err != nil || !f.protoMicros {
		return s, err
	}
	s, _, err = schema.NarrowNanos(s)
	if err != nil {
		return nil, fmt.Errorf("protobuf: message %s: %w", md.FullName(), err)
	}
	return s, nil
}

// countTruncated makes the format's decoders count into c the Timestamps
// whose nanoseconds they cut (table.timestamp_precision: micros), and
// says at startup that they will, naming the Timestamp fields of
// format.message (a registry's messages are known as their records come).
func (f *format) countTruncated(c *atomic.Int64, log *slog.Logger) {
	f.truncated = c
	if !f.protoMicros {
		return
	}
	if f.kind == "json" {
		f.countJSONTruncated(log)
		return
	}
	if f.registry != nil {
		log.Info("table.timestamp_precision is micros: Avro timestamp-nanos and local-timestamp-nanos fields are written as TIMESTAMP(MICROS), "+
			"their digits below the microsecond cut and counted (each schema's log line names them)", "metric", "pqsink_table_timestamps_truncated_total")
		return
	}
	attrs := []any{"metric", "pqsink_table_timestamps_truncated_total"}
	if f.protoMessage != nil {
		attrs = append(attrs, "message", f.protoMessage.FullName(), "fields", timestampFields(f.protoMessage))
	}
	log.Info("table.timestamp_precision is micros: google.protobuf.Timestamp fields are written as TIMESTAMP(MICROS), "+
		"their digits below the microsecond cut and counted", attrs...)
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

// protoOptions are the options of the format's protorow decoders.
func (f *format) protoOptions() []protorow.Option {
	if f.truncated == nil {
		return nil
	}
	return []protorow.Option{protorow.CountTruncated(f.truncated)}
}

// lookupOptions are the options of the format's protorow lookups: their
// Timestamps as the files' columns hold them.
func (f *format) lookupOptions() []protorow.Option {
	if f.protoMicros {
		return []protorow.Option{protorow.MicrosTimestamps()}
	}
	return nil
}

// protobufFileFormat is format.proto_file: a fixedFormat whose payload
// is the message's compiled decoder, whose rejections are decode errors
// (wire bytes that are not a message of the type), and whose files name
// the message in their footers.
type protobufFileFormat struct {
	fixedFormat
}

func (x *protobufFileFormat) reason(err error) string {
	if r := classify(err); r == rejectEnvelope {
		return r
	}
	return rejectDecode
}

func (x *protobufFileFormat) buffers(d decoded, spare *[]*fileBuffers) (*fileBuffers, error) {
	fb, err := x.fixedFormat.buffers(d, spare)
	if err != nil {
		return nil, err
	}
	fb.keyValues = [][2]string{{protobuf.MessageKey, string(x.f.protoMessage.FullName())}}
	return fb, nil
}

// newProtobufPayload is the payload of a file of plain messages.
func (f *format) newProtobufPayload(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
	return protorow.NewDecoder(g, f.protoMessage, f.protoOptions()...)
}
