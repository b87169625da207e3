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
// (reason key). The Debezium envelope is not read yet.
func (f *avroFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name); err != nil {
		return nil, err
	}
	return &keyed{avroFormat: f, opts: opts}, nil
}

func (k *keyed) NewDecoder(p format.Partition) format.Decoder { return k.NewChangeDecoder(p) }

func (k *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	a := k.avroFormat.NewDecoder(p).(*decoder)
	r := &avroKeys{a: a, fields: k.opts.Fields, paths: format.KeyPaths(k.opts.Fields),
		bySchema: map[*format.Schema]*lookupKey{}, byID: map[uint32]*lookupKey{}}
	return &format.ChangeReader{Decoder: a, ValueKey: r.valueKey, KafkaKey: r.kafkaKey}
}

// lookupKey is the lookup of the key fields in records of one schema, or
// why they have no key.
type lookupKey struct {
	l   format.Lookup
	err error
}

// avroKeys reads the keys of a partition's records: of a value with its
// writer schema; of a Kafka key in the wire format with the key's
// schema; of another Kafka key (one key field, its plain bytes) with the
// type of the field in the partition's newest writer schema.
type avroKeys struct {
	a        *decoder
	fields   []string
	paths    [][]string
	bySchema map[*format.Schema]*lookupKey
	byID     map[uint32]*lookupKey // Kafka keys' schemas
}

func newLookupKey(l format.Lookup, err error, fields []string, name string) *lookupKey {
	if err == nil {
		err = format.CheckLookupKey(l, fields)
	}
	if err != nil {
		return &lookupKey{err: fmt.Errorf("%s: %w", name, err)}
	}
	return &lookupKey{l: l}
}

func (r *avroKeys) valueKey(dst []byte, d format.Decoded) ([]byte, error) {
	k := r.bySchema[d.Schema]
	if k == nil {
		l, err := d.Schema.NewLookup(r.paths, true)
		k = newLookupKey(l, err, r.fields, d.Schema.Name)
		r.bySchema[d.Schema] = k
	}
	if k.err != nil {
		return dst, k.err
	}
	return format.AppendLookupKey(dst, k.l, d.Payload, r.fields)
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
			k = newLookupKey(l, err, r.fields, fmt.Sprintf("the Kafka key's avro schema id %d", id))
		case errors.Is(err, schemaregistry.ErrNotFound), errors.Is(err, schemaregistry.ErrUnusable):
			return dst, fmt.Errorf("the Kafka key's avro schema id %d: %w", id, err), nil
		case ctx.Err() != nil:
			return dst, nil, ctx.Err()
		default:
			return dst, nil, format.RegistryUnreachable(ctx, r.a.log, err, "key_schema_id", id, "offset", offset)
		}
		r.byID[id] = k
	}
	if k.err != nil {
		return dst, k.err, nil
	}
	out, err := format.AppendLookupKey(dst, k.l, body, r.fields)
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
			k = newLookupKey(l, err, r.fields, s.shared.Name)
			r.bySchema[&s.shared] = k
		}
		if k.err != nil {
			return dst, k.err, nil
		}
		out, err := format.AppendPlainKey(dst, k.l.Leaf(0), key)
		return out, err, nil
	}
	return dst, errors.New("a Kafka key not in the Confluent wire format before any value of the partition: the key field's type is that of the values' schema"), nil
}
