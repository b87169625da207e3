package protofmt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry/registryconfig"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
	"github.com/pqsink/pqsink/variant"
)

// Replay is the format's replay side (format.ReplayDriver): the records
// of a file whose footer names a Protobuf message (protobuf.MessageKey)
// are that message again, with their Confluent header (the schema id and
// message indexes the footer records: SchemaIDKey, IndexesKey) when they
// had one. The schema comes from the registry by its id
// (format.registry), or from the config's format.proto_file.
func Replay(cfg *config.Config, env format.ReplayEnv) format.Replayer {
	return &replayer{cfg: cfg, log: env.Log, encoders: map[string]*encoder{}}
}

// replayer is the format's replay side for one replay.
type replayer struct {
	cfg *config.Config
	log *slog.Logger
	// mu guards the encoders by footer, and the registry their schemas
	// come from (made when a file needs it).
	mu       sync.Mutex
	encoders map[string]*encoder
	registry *protobuf.Registry
}

func (r *replayer) Label() string { return "Protobuf" }

func (r *replayer) Claims(kv []meta.KeyValue) string {
	if footer(kv) == nil {
		return ""
	}
	return protobuf.MessageKey
}

// encoder writes the records of files that came from Protobuf: the
// message the footer names, and for records that had one, their Confluent
// header.
//
// A record is written again as Go's protobuf library writes a message
// deterministically: fields in number order, repeated scalars packed as
// their schema says, map entries in key order, default values of fields
// without presence left out. That is the original's bytes when its
// producer wrote the canonical encoding (Go's and Java's serializers for
// messages without maps, Go's deterministic one with maps); a producer
// that ordered map entries otherwise, wrote fields out of order or
// unpacked, wrote a default value out, or wrote fields the schema lacks
// (dropped by the sink) gets the same message in other bytes.
type encoder struct {
	message protoreflect.MessageDescriptor
	header  []byte // Confluent's; nil for plain messages
}

// Encoder returns the encoder of the files whose footer entries are
// f.KV, reading the schema from the registry by the schema id the footer
// records, or from the config's format.proto_file.
func (r *replayer) Encoder(ctx context.Context, f format.ReplayFile) (format.RecordEncoder, error) {
	kv := footer(f.KV)
	if kv == nil {
		return nil, errors.New("protobuf: the footer names no message")
	}
	name := kv[protobuf.MessageKey]
	key := name + "\x00" + kv[SchemaIDKey] + "\x00" + kv[IndexesKey]
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.encoders[key]; ok {
		return v, nil
	}
	var v *encoder
	var err error
	if idText, ok := kv[SchemaIDKey]; ok {
		v, err = r.fromRegistry(ctx, name, idText, kv[IndexesKey])
	} else {
		v, err = r.fromFile(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	r.encoders[key] = v
	return v, nil
}

func (r *replayer) fromRegistry(ctx context.Context, name, idText, idxText string) (*encoder, error) {
	id, err := strconv.ParseUint(idText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("footer %s: %q is not a schema id", SchemaIDKey, idText)
	}
	var idx []int
	for part := range strings.SplitSeq(idxText, ",") {
		i, err := strconv.Atoi(part)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("footer %s: %q is not a list of message indexes", IndexesKey, idxText)
		}
		idx = append(idx, i)
	}
	if r.registry == nil {
		if r.cfg.Format.Registry == nil || r.cfg.Format.Registry.URL == "" {
			return nil, errors.New("files of Protobuf records with a schema id: replay needs format.registry in the config, to read the schema")
		}
		reg, err := registryconfig.New(r.cfg.Format.Registry)
		if err != nil {
			return nil, err
		}
		r.registry = protobuf.NewRegistry(reg, r.cfg.Format.Registry.CacheSize)
	}
	fd, err := r.registry.FileByID(ctx, uint32(id))
	if err != nil {
		return nil, err
	}
	md, err := protobuf.MessageAt(fd, idx)
	if err != nil {
		return nil, err
	}
	if string(md.FullName()) != name {
		return nil, fmt.Errorf("schema id %d, message indexes %s: message %s, the footer says %s", id, idxText, md.FullName(), name)
	}
	r.log.Info("protobuf schema", "id", id, "message", name)
	return &encoder{message: md, header: protobuf.AppendWire(nil, uint32(id), idx)}, nil
}

func (r *replayer) fromFile(ctx context.Context, name string) (*encoder, error) {
	p := r.cfg.Format.Protobuf
	if p == nil || p.ProtoFile == "" {
		return nil, fmt.Errorf("files of plain Protobuf messages (%s): replay needs format.proto_file (and format.import_paths) in the config, to read the schema", name)
	}
	md, err := protobuf.LoadFile(ctx, p.ProtoFile, p.ImportPaths, name)
	if err != nil {
		return nil, err
	}
	return &encoder{message: md}, nil
}

// AppendRecord writes rec's payload fields as a message, after the header.
func (p *encoder) AppendRecord(dst []byte, rec reader.Value) ([]byte, error) {
	m := dynamicpb.NewMessage(p.message)
	if err := fillMessage(m, rec, ""); err != nil {
		return dst, err
	}
	dst = append(dst, p.header...)
	out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, m)
	if err != nil {
		return dst, fmt.Errorf("protobuf message %s: %w", p.message.FullName(), err)
	}
	return out, nil
}

// fillMessage sets the fields of m from the group v, as schema/protobuf's
// mapping wrote them: a NULL is an unset field.
func fillMessage(m *dynamicpb.Message, v reader.Value, path string) error {
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		fp := fieldPath(join(path, string(fd.Name())))
		fv, ok := v.Field(string(fd.Name()))
		if !ok || fv.IsNull() {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for k, val := range fv.Entries() {
				key, err := protoValueOf(fd.MapKey(), k, fp+".key")
				if err != nil {
					return err
				}
				var pv protoreflect.Value
				if val.IsNull() { // a message value the entry did not have
					pv = protoreflect.ValueOfMessage(dynamicpb.NewMessage(fd.MapValue().Message()))
				} else if pv, err = protoValueOf(fd.MapValue(), val, fp+".value"); err != nil {
					return err
				}
				mp.Set(key.MapKey(), pv)
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for _, e := range fv.List() {
				pv, err := protoValueOf(fd, e, fp)
				if err != nil {
					return err
				}
				l.Append(pv)
			}
		default:
			pv, err := protoValueOf(fd, fv, fp)
			if err != nil {
				return err
			}
			m.Set(fd, pv)
		}
	}
	return nil
}

// fieldPath names the field at path in errors.
func fieldPath(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// protoValueOf is the value of fd's type that column value v holds.
func protoValueOf(fd protoreflect.FieldDescriptor, v reader.Value, path string) (protoreflect.Value, error) {
	bad := func() (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("protobuf field %s: a %s value for a %s field", path, v.Kind(), fd.Kind())
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		if v.Kind() != reader.KindBool {
			return bad()
		}
		return protoreflect.ValueOfBool(v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if v.Kind() != reader.KindInt32 {
			return bad()
		}
		return protoreflect.ValueOfInt32(v.Int32()), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if v.Kind() != reader.KindInt32 {
			return bad()
		}
		return protoreflect.ValueOfUint32(uint32(v.Int32())), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if v.Kind() != reader.KindInt64 {
			return bad()
		}
		return protoreflect.ValueOfInt64(v.Int64()), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if v.Kind() != reader.KindInt64 {
			return bad()
		}
		return protoreflect.ValueOfUint64(uint64(v.Int64())), nil
	case protoreflect.FloatKind:
		if v.Kind() != reader.KindFloat {
			return bad()
		}
		return protoreflect.ValueOfFloat32(v.Float()), nil
	case protoreflect.DoubleKind:
		if v.Kind() != reader.KindDouble {
			return bad()
		}
		return protoreflect.ValueOfFloat64(v.Double()), nil
	case protoreflect.StringKind:
		if v.Kind() != reader.KindBytes {
			return bad()
		}
		return protoreflect.ValueOfString(string(v.Bytes())), nil
	case protoreflect.BytesKind:
		if v.Kind() != reader.KindBytes {
			return bad()
		}
		return protoreflect.ValueOfBytes(append([]byte{}, v.Bytes()...)), nil
	case protoreflect.EnumKind:
		if v.Kind() != reader.KindBytes {
			return bad()
		}
		name := string(v.Bytes())
		if ev := fd.Enum().Values().ByName(protoreflect.Name(name)); ev != nil {
			return protoreflect.ValueOfEnum(ev.Number()), nil
		}
		n, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("protobuf field %s: %q is no value of enum %s", path, name, fd.Enum().FullName())
		}
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(n)), nil
	case protoreflect.MessageKind:
	default:
		return bad()
	}
	md := fd.Message()
	m := dynamicpb.NewMessage(md)
	set := func(n protoreflect.FieldNumber, pv protoreflect.Value) { m.Set(md.Fields().ByNumber(n), pv) }
	switch protobuf.SpecialOf(md) {
	case protobuf.Timestamp, protobuf.Duration:
		if v.Kind() != reader.KindInt64 {
			return bad()
		}
		ns, perSec := v.Int64(), int64(1e9)
		if timestampMicros(md, v) {
			// A table's file of table.timestamp_precision: micros.
			perSec = 1e6
		}
		secs, nanos := ns/perSec, ns%perSec
		if md.FullName() == "google.protobuf.Timestamp" && nanos < 0 {
			secs, nanos = secs-1, nanos+perSec
		}
		nanos *= 1e9 / perSec
		set(1, protoreflect.ValueOfInt64(secs))
		set(2, protoreflect.ValueOfInt32(int32(nanos)))
	case protobuf.Wrapper:
		pv, err := protoValueOf(md.Fields().ByNumber(1), v, path)
		if err != nil {
			return protoreflect.Value{}, err
		}
		set(1, pv)
	case protobuf.AsVariant:
		if v.Kind() != reader.KindVariant {
			return bad()
		}
		meta, val := v.VariantBytes()
		js, err := variant.AppendJSON(nil, meta, val)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("protobuf field %s: %w", path, err)
		}
		if err := fromVariantJSON(m, js); err != nil {
			return protoreflect.Value{}, fmt.Errorf("protobuf field %s: %w", path, err)
		}
	default:
		if v.Kind() != reader.KindGroup {
			return bad()
		}
		if err := fillMessage(m, v, path); err != nil {
			return protoreflect.Value{}, err
		}
	}
	return protoreflect.ValueOfMessage(m), nil
}

// timestampMicros reports whether v, a google.protobuf.Timestamp of type
// md, is in a TIMESTAMP(MICROS) column: a table's file that the sink wrote
// with table.timestamp_precision micros (schema.NarrowNanos), whose values
// are seconds*1e6 + nanos/1000.
func timestampMicros(md protoreflect.MessageDescriptor, v reader.Value) bool {
	n := v.Node()
	return md.FullName() == "google.protobuf.Timestamp" && n != nil &&
		n.Logical.Kind == schema.Timestamp && n.Logical.Unit == schema.Micros
}

// fromVariantJSON sets m, a Struct, Value, ListValue, Any or field-less
// message, from the JSON of the VARIANT the mapping wrote. A number_value
// that is NaN or infinite is "NaN" or "Infinity" in that JSON, and comes
// back as a string_value: the one value of these types that replay does
// not restore.
func fromVariantJSON(m *dynamicpb.Message, js []byte) error {
	md := m.Descriptor()
	switch md.FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return protojson.Unmarshal(js, m)
	case "google.protobuf.Any":
		var a struct {
			Type  string `json:"@type"`
			Value string `json:"value"`
		}
		if err := json.Unmarshal(js, &a); err != nil {
			return err
		}
		b, err := base64.StdEncoding.DecodeString(a.Value)
		if err != nil {
			return err
		}
		if a.Type != "" {
			m.Set(md.Fields().ByNumber(1), protoreflect.ValueOfString(a.Type))
		}
		if len(b) > 0 {
			m.Set(md.Fields().ByNumber(2), protoreflect.ValueOfBytes(b))
		}
	}
	return nil // a message without fields
}

// footer returns the footer entries that say a file came from Protobuf,
// by key, or nil.
func footer(kv []meta.KeyValue) map[string]string {
	var out map[string]string
	for _, e := range kv {
		if e.Value != nil && strings.HasPrefix(e.Key, archive.ProtobufSchemaPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[e.Key] = *e.Value
		}
	}
	if out[protobuf.MessageKey] == "" {
		return nil
	}
	return out
}
