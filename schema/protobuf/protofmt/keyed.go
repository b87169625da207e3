package protofmt

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// keyed is the Protobuf format read as changes to an upsert table's rows
// (format.Keyer). The key is read from each value's wire bytes with a
// Lookup of its message (protorow.Lookup, the decoder the files' columns
// are written with, projected onto the key fields), not from the row
// group the decoder fills, where one record's values are not at hand as
// a record's. A proto3 field without presence that a message leaves out
// is its default value (0, ""), as in the files' column, and so in the
// key.
type keyed struct {
	*protoFormat
	opts format.KeyOptions
}

// Keyed implements format.Keyer. With format.proto_file, the key fields
// must be fields of format.message without presence (proto3's plain
// scalars, proto2's required ones) of a primitive type. With a registry,
// each message is checked when its first record comes, and the records
// of a message whose key fields are not so are rejections (reason key).
// The Debezium envelope is not read yet.
func (f *protoFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name); err != nil {
		return nil, err
	}
	if f.fixed != nil {
		s, err := f.FixedSchema()
		if err != nil {
			return nil, err
		}
		if _, err := format.KeyLeaves(s, opts.Fields); err != nil {
			return nil, fmt.Errorf("format.message %s: %w", f.message.FullName(), err)
		}
	}
	return &keyed{protoFormat: f, opts: opts}, nil
}

func (k *keyed) NewDecoder(p format.Partition) format.Decoder { return k.NewChangeDecoder(p) }

func (k *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	r := &protoKeys{f: k.protoFormat, fields: k.opts.Fields, paths: format.KeyPaths(k.opts.Fields),
		bySchema: map[*format.Schema]*format.LookupKey{}, byID: map[string]*format.LookupKey{}}
	dec := k.protoFormat.NewDecoder(p)
	if rd, ok := dec.(*registryDecoder); ok {
		r.reg = rd
	}
	return &format.ChangeReader{Decoder: dec, ValueKey: r.valueKey, KafkaKey: r.kafkaKey}
}

// protoKeys reads the keys of a partition's records: of a value with its
// message; of a Kafka key in the wire format (with a registry) with the
// key's message; with several key fields and format.proto_file, of a
// Kafka key that is a plain format.message; of another Kafka key (one
// key field, its plain bytes) with the field's type in the values'
// message (the last one read, with a registry).
type protoKeys struct {
	f        *protoFormat
	reg      *registryDecoder // nil with format.proto_file
	fields   []string
	paths    [][]string
	bySchema map[*format.Schema]*format.LookupKey
	byID     map[string]*format.LookupKey // Kafka keys' messages, by id and indexes
	idx      []int
}

// schemaKey is the lookup of messages of s.
func (r *protoKeys) schemaKey(s *format.Schema) *format.LookupKey {
	k := r.bySchema[s]
	if k == nil {
		l, err := s.NewLookup(r.paths, true)
		k = format.NewLookupKey(l, err, r.fields, s.Name)
		r.bySchema[s] = k
	}
	return k
}

func (r *protoKeys) valueKey(dst []byte, d format.Decoded) ([]byte, error) {
	s := d.Schema
	if s == nil {
		s = r.f.fixed
	}
	k := r.schemaKey(s)
	return k.Append(dst, d.Payload, r.fields)
}

func (r *protoKeys) kafkaKey(ctx context.Context, dst, key []byte, offset int64) ([]byte, error, error) {
	if len(key) == 0 {
		return dst, errors.New("the record has no Kafka key"), nil
	}
	if r.reg != nil {
		if id, idx, body, err := protobuf.SplitWire(key, r.idx[:0]); err == nil {
			r.idx = idx
			return r.wireKey(ctx, dst, id, idx, body, offset)
		}
	} else if len(r.fields) > 1 {
		k := r.schemaKey(r.f.fixed)
		if k.Err != nil {
			return dst, k.Err, nil
		}
		out, err := format.AppendLookupKey(dst, k.Lookup, key, r.fields)
		if err != nil {
			return dst, fmt.Errorf("the Kafka key as a %s: %w", r.f.message.FullName(), err), nil
		}
		return out, nil, nil
	}
	if len(r.fields) != 1 {
		return dst, fmt.Errorf("the Kafka key is not in the Confluent wire format, as a key of fields %v must be", r.fields), nil
	}
	s := r.f.fixed
	if r.reg != nil {
		if r.reg.last == nil || r.reg.last.err != nil {
			return dst, errors.New("a Kafka key not in the Confluent wire format before any value of the partition: the key field's type is that of the values' message"), nil
		}
		s = &r.reg.last.shared
	}
	k := r.schemaKey(s)
	if k.Err != nil {
		return dst, k.Err, nil
	}
	out, err := format.AppendPlainKey(dst, k.Lookup.Leaf(0), key)
	return out, err, nil
}

// wireKey reads a Kafka key in the wire format with its message from the
// registry.
func (r *protoKeys) wireKey(ctx context.Context, dst []byte, id uint32, idx []int, body []byte, offset int64) ([]byte, error, error) {
	name := strconv.FormatUint(uint64(id), 10) + "/" + IndexText(idx)
	k := r.byID[name]
	if k == nil {
		fd, err := r.f.registry.FileByID(ctx, id)
		switch {
		case err == nil:
			md, err := protobuf.MessageAt(fd, idx)
			if err != nil {
				return dst, fmt.Errorf("the Kafka key's protobuf schema id %d: %w", id, err), nil
			}
			l, err := r.f.newLookup(md)(r.paths, true)
			k = format.NewLookupKey(l, err, r.fields, fmt.Sprintf("the Kafka key's protobuf schema id %d (%s)", id, md.FullName()))
		case errors.Is(err, schemaregistry.ErrNotFound), errors.Is(err, schemaregistry.ErrUnusable):
			return dst, fmt.Errorf("the Kafka key's protobuf schema id %d: %w", id, err), nil
		case ctx.Err() != nil:
			return dst, nil, ctx.Err()
		default:
			return dst, nil, format.RegistryUnreachable(ctx, r.reg.log, err, "key_schema_id", id, "offset", offset)
		}
		r.byID[name] = k
	}
	if k.Err != nil {
		return dst, k.Err, nil
	}
	out, err := format.AppendLookupKey(dst, k.Lookup, body, r.fields)
	if err != nil {
		return dst, fmt.Errorf("the Kafka key's protobuf schema id %d: %w", id, err), nil
	}
	return out, nil, nil
}
