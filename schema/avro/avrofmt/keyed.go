package avrofmt

import (
	"context"
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup/avrorow"
)

// keyed is the Avro format read as changes to an upsert table's rows
// (format.Keyer). The key is read from each value's Avro binary with a
// Lookup of its writer schema (avrorow.Lookup, the decoder the files'
// columns are written with, projected onto the key fields), not from the
// row group the decoder fills, where one record's values are not at hand
// as a record's; it reads a record only as far as its last key field.
type keyed struct {
	*avroFormat
	opts format.KeyOptions
}

// Keyed implements format.Keyer. Each writer schema is checked when its
// first record comes: the records of a schema whose key fields are
// missing, optional (a union with null) or not primitive are rejections
// (reason key). With the Debezium envelope, the registry's schemas are
// the events' and the files' are their rows' (debezium.go).
func (f *avroFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name, format.EnvelopeDebezium); err != nil {
		return nil, err
	}
	return &keyed{avroFormat: f, opts: opts}, nil
}

func (k *keyed) NewDecoder(p format.Partition) format.Decoder { return k.NewChangeDecoder(p) }

func (k *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	a := k.avroFormat.NewDecoder(p).(*decoder)
	r := &avroKeys{a: a, fields: k.opts.Fields, paths: format.KeyPaths(k.opts.Fields),
		bySchema: map[*format.Schema]*format.LookupKey{}, byID: map[uint32]*format.LookupKey{}}
	c := &format.ChangeReader{Decoder: a, ValueKey: r.valueKey, KafkaKey: r.kafkaKey}
	if k.opts.Envelope != format.EnvelopeDebezium {
		return c
	}
	a.debezium = true
	return &avroChanges{ChangeReader: c, a: a}
}

// avroChanges is the ChangeDecoder of Debezium events in Avro.
type avroChanges struct {
	*format.ChangeReader
	a       *decoder
	payload []byte
}

// Decode reads an event that must write a row; a delete is a rejection
// (reason change).
func (c *avroChanges) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	return format.RowOf(c.DecodeChange(ctx, nil, value, offset))
}

// DecodeChange reads a Debezium event: c, r and u write after with the
// _cdc record appended, d deletes the key of before (or of the Kafka key),
// a tombstone the key of its Kafka key; a truncate, an unknown op and a
// c, r or u without after are rejections (reason change).
func (c *avroChanges) DecodeChange(ctx context.Context, key, value []byte, offset int64) (format.Change, *format.Rejection, error) {
	if value == nil {
		return c.ChangeReader.DecodeChange(ctx, key, nil, offset)
	}
	id, body, err := schemaregistry.SplitWire(value)
	if err != nil {
		return format.Change{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("avro: %w", err)}, nil
	}
	s, rej, err := c.a.writer(ctx, id, offset)
	if s == nil {
		return format.Change{}, rej, err
	}
	ev, err := readEvent(s.envelope.Root, body)
	if err != nil {
		return format.Change{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("avro schema id %d: %w", id, err)}, nil
	}
	if rej := format.EventRejection(ev.op, ev.after != nil); rej != nil {
		return format.Change{}, rej, nil
	}
	if ev.op == "d" {
		if ev.before == nil {
			return c.DeleteChange(ctx, key, nil, offset)
		}
		return c.DeleteChange(ctx, key, &format.Decoded{Payload: ev.before, Schema: &s.shared}, offset)
	}
	c.payload = appendCDC(append(c.payload[:0], ev.after...), ev)
	return c.RowChange(c.a.decoded(c.payload, s), ev.op[0])
}

// avroKeys reads the keys of a partition's records: of a value with its
// writer schema; of a Kafka key in the wire format with the key's
// schema; of another Kafka key (one key field, its plain bytes) with the
// type of the field in the partition's newest writer schema.
type avroKeys struct {
	a        *decoder
	fields   []string
	paths    [][]string
	bySchema map[*format.Schema]*format.LookupKey
	byID     map[uint32]*format.LookupKey // Kafka keys' schemas
}

func (r *avroKeys) valueKey(dst []byte, d format.Decoded) ([]byte, error) {
	k := r.bySchema[d.Schema]
	if k == nil {
		l, err := d.Schema.NewLookup(r.paths, true)
		k = format.NewLookupKey(l, err, r.fields, d.Schema.Name)
		r.bySchema[d.Schema] = k
	}
	return k.Append(dst, d.Payload, r.fields)
}

func (r *avroKeys) kafkaKey(ctx context.Context, dst, key []byte, offset int64) ([]byte, error, error) {
	if len(key) == 0 {
		return dst, errors.New("the record has no Kafka key"), nil
	}
	id, body, err := schemaregistry.SplitWire(key)
	if err != nil {
		return r.plainKey(dst, key)
	}
	k := r.byID[id]
	if k == nil {
		as, err := r.a.f.registry.SchemaByID(ctx, id)
		switch {
		case err == nil:
			l, err := avrorow.NewLookup(as, r.paths, r.a.f.lookupOptions()...)
			k = format.NewLookupKey(l, err, r.fields, fmt.Sprintf("the Kafka key's avro schema id %d", id))
		case errors.Is(err, schemaregistry.ErrNotFound), errors.Is(err, schemaregistry.ErrUnusable):
			return dst, fmt.Errorf("the Kafka key's avro schema id %d: %w", id, err), nil
		case ctx.Err() != nil:
			return dst, nil, ctx.Err()
		default:
			return dst, nil, format.RegistryUnreachable(ctx, r.a.log, err, "key_schema_id", id, "offset", offset)
		}
		r.byID[id] = k
	}
	if k.Err != nil {
		return dst, k.Err, nil
	}
	out, err := format.AppendLookupKey(dst, k.Lookup, body, r.fields)
	if err != nil {
		return dst, fmt.Errorf("the Kafka key's avro schema id %d: %w", id, err), nil
	}
	return out, nil, nil
}

// plainKey reads a Kafka key not in the wire format as the plain bytes of
// a one-field key, of the field's type in the newest writer schema of the
// partition's values.
func (r *avroKeys) plainKey(dst, key []byte) ([]byte, error, error) {
	if len(r.fields) != 1 {
		return dst, fmt.Errorf("the Kafka key is not in the Confluent wire format, as a key of fields %v must be", r.fields), nil
	}
	for i := len(r.a.ids) - 1; i >= 0; i-- {
		s := r.a.schemas[r.a.ids[i]]
		if s.err != nil {
			continue
		}
		k := r.bySchema[&s.shared]
		if k == nil {
			l, err := s.shared.NewLookup(r.paths, true)
			k = format.NewLookupKey(l, err, r.fields, s.shared.Name)
			r.bySchema[&s.shared] = k
		}
		if k.Err != nil {
			return dst, k.Err, nil
		}
		out, err := format.AppendPlainKey(dst, k.Lookup.Leaf(0), key)
		return out, err, nil
	}
	return dst, errors.New("a Kafka key not in the Confluent wire format before any value of the partition: the key field's type is that of the values' schema"), nil
}
