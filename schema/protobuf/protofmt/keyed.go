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
// The Debezium envelope is read with a registry (debezium.go), whose
// messages are the events'.
func (f *protoFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name, format.EnvelopeDebezium); err != nil {
		return nil, err
	}
	if opts.Envelope == format.EnvelopeDebezium && f.registry == nil {
		return nil, fmt.Errorf("format.envelope %s: the protobuf format reads Debezium events with format.registry (the schema of each event's id is its envelope's), not with format.proto_file", opts.Envelope)
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
	c := &format.ChangeReader{Decoder: dec, ValueKey: r.valueKey, KafkaKey: r.kafkaKey}
	if k.opts.Envelope != format.EnvelopeDebezium {
		return c
	}
	r.reg.debezium = true
	return &protoChanges{ChangeReader: c, reg: r.reg}
}

// protoChanges is the ChangeDecoder of Debezium events in Protobuf.
type protoChanges struct {
	*format.ChangeReader
	reg     *registryDecoder
	payload []byte
	scratch []byte
}

// Decode reads an event that must write a row; a delete is a rejection
// (reason change).
func (c *protoChanges) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	return format.RowOf(c.DecodeChange(ctx, nil, value, offset))
}

// DecodeChange reads a Debezium event: c, r and u write after with the
// _cdc field appended, d deletes the key of before (or of the Kafka key),
// a tombstone the key of its Kafka key; a truncate, an unknown op and a
// c, r or u without after are rejections (reason change).
func (c *protoChanges) DecodeChange(ctx context.Context, key, value []byte, offset int64) (format.Change, *format.Rejection, error) {
	if value == nil {
		return c.ChangeReader.DecodeChange(ctx, key, nil, offset)
	}
	d, rej, err := c.reg.Decode(ctx, value, offset)
	if rej != nil || err != nil {
		return format.Change{}, rej, err
	}
	s := d.Schema.Own.(*messageSchema)
	var ev protoEvent
	ev, c.scratch, err = readEvent(s.event, d.Payload, c.scratch)
	if err != nil {
		return format.Change{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("%s: %w", d.Schema.Name, err)}, nil
	}
	if rej := format.EventRejection(ev.op, ev.hasAfter); rej != nil {
		return format.Change{}, rej, nil
	}
	if ev.op == "d" {
		if !ev.hasBefore {
			return c.DeleteChange(ctx, key, nil, offset)
		}
		return c.DeleteChange(ctx, key, &format.Decoded{Payload: ev.before, Schema: d.Schema}, offset)
	}
	c.payload = appendCDC(append(c.payload[:0], ev.after...), s.event.cdc, ev)
	return c.RowChange(format.Decoded{Payload: c.payload, Schema: d.Schema}, ev.op[0])
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
