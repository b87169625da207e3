package jsonschemafmt

import (
	"context"
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// keyed is the JSON Schema format read as changes to an upsert table's
// rows (format.Keyer). As for the json format, the key is read from each
// value's JSON text with the shredder's scalar conversion, not from the
// row group the shredder fills, where one record's values are not at
// hand; the columns are those of the value's schema (the schema file's,
// or the registry's schema of its id).
type keyed struct {
	*jsFormat
	opts format.KeyOptions
	// keys is the format Kafka keys' schemas are read with: not the
	// envelope's, under a Debezium envelope.
	keys *jsFormat
	// file is the schema file's, with the change column under a Debezium
	// envelope; nil with a registry.
	file *jsSchema
}

// Keyed implements format.Keyer. With format.schema_file, the key fields
// must be required primitive properties of the schema, and with a
// Debezium envelope, each value's after is a value of the schema. With a
// registry, each schema is checked when its first record comes, and the
// records of a schema without the key fields are rejections (reason
// key); with a Debezium envelope, the registry's schemas are the events'
// (as Kafka Connect's JsonSchemaConverter registers them), the files'
// are those of their after property with the change column, and a schema
// whose after is not an object of declared properties is unusable
// (reason schema).
func (k *jsFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name, format.EnvelopeDebezium); err != nil {
		return nil, err
	}
	kd := &keyed{jsFormat: k, opts: opts, keys: k}
	if k.registry != nil {
		if kd.debezium() {
			// A format of its own: its schemas of an id are the rows'.
			kd.jsFormat = &jsFormat{envelope: k.envelope, timeUnit: k.timeUnit, opts: k.opts, registry: k.registry,
				byID: map[uint32]*jsSchema{}, max: k.max, debezium: true}
		}
		return kd, nil
	}
	file := *k.file
	kd.file = &file
	if kd.debezium() {
		if file.js.Wrapped() {
			return nil, fmt.Errorf("format.envelope %s: format.schema_file's values are not objects, as the rows of change events are", opts.Envelope)
		}
		for _, n := range file.js.Fields() {
			if n.Name == format.CDCField {
				return nil, fmt.Errorf("format.schema_file: property %s is the change events' column; rename it", format.CDCField)
			}
		}
		extra := []*schema.Node{format.CDCNode(k.timeUnit)}
		if k.envelope {
			extra = append(extra, rowgroup.EnvelopeNodeIn(k.timeUnit))
		}
		var err error
		if file.parquet, err = file.js.Parquet(extra...); err != nil {
			return nil, fmt.Errorf("format.schema_file: %w", err)
		}
	}
	if _, err := format.KeyLeaves(file.parquet, opts.Fields); err != nil {
		return nil, fmt.Errorf("format.schema_file: %w", err)
	}
	return kd, nil
}

func (kd *keyed) debezium() bool { return kd.opts.Envelope == format.EnvelopeDebezium }

// FixedSchema is the schema file's, with the change column under a
// Debezium envelope; nil with a registry.
func (kd *keyed) FixedSchema() (*schema.Schema, error) {
	if kd.file != nil {
		return kd.file.parquet, nil
	}
	return nil, nil
}

func (kd *keyed) NewDecoder(p format.Partition) format.Decoder { return kd.NewChangeDecoder(p) }

func (kd *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	if kd.file != nil {
		if p.Schema == nil {
			p.Schema = kd.file.parquet
		}
		x := kd.decoder(p)
		return format.NewJSONChanges(x, p.Schema, kd.opts, kd.timeUnit, kd.jsFormat.opts...)
	}
	x := kd.decoder(p)
	r := &registryKeys{x: x, keys: kd.keys, fields: kd.opts.Fields, bySchema: map[*format.Schema]*jsonKey{}, byID: map[uint32]*jsonKey{}, newest: map[uint32]*jsonKey{}}
	c := &format.ChangeReader{Decoder: x, ValueKey: r.valueKey, KafkaKey: r.kafkaKey, Unit: kd.timeUnit}
	if kd.debezium() {
		return &registryChanges{ChangeReader: c, x: x}
	}
	return c
}

// registryChanges is the ChangeDecoder of Debezium events with a
// registry: each value is validated against its schema, the envelope's,
// then read as an event whose after is a row of the files' schema.
type registryChanges struct {
	*format.ChangeReader
	x       *decoder
	payload []byte
}

// Decode reads an event that must write a row; a delete is a rejection
// (reason change).
func (c *registryChanges) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	return format.RowOf(c.DecodeChange(ctx, nil, value, offset))
}

// DecodeChange reads a Debezium event in the JSON Schema wire format: c,
// r and u write after with the _cdc column, d deletes the key of before
// (or of the Kafka key), a tombstone the key of its Kafka key; a
// truncate, an unknown op and a c, r or u without after are rejections
// (reason change).
func (c *registryChanges) DecodeChange(ctx context.Context, key, value []byte, offset int64) (format.Change, *format.Rejection, error) {
	if value == nil {
		return c.ChangeReader.DecodeChange(ctx, key, nil, offset)
	}
	d, rej, err := c.x.Decode(ctx, value, offset)
	if rej != nil || err != nil {
		return format.Change{}, rej, err
	}
	ev, err := format.ParseDebezium(d.Payload)
	if err != nil {
		return format.Change{}, &format.Rejection{Reason: format.RejectChange, Err: fmt.Errorf("%s: %w", d.Schema.Name, err)}, nil
	}
	if ev.Op == 'd' {
		if ev.Before == nil {
			return c.DeleteChange(ctx, key, nil, offset)
		}
		return c.DeleteChange(ctx, key, &format.Decoded{Payload: ev.Before, Text: ev.Before, Schema: d.Schema}, offset)
	}
	c.payload = format.AppendCDC(c.payload[:0], ev.After, ev, c.Unit)
	return c.RowChange(format.Decoded{Payload: c.payload, Text: ev.After, Schema: d.Schema}, ev.Op)
}

// decoder is the format's decoder of rows of p, of the schema file with
// its change column when there is one.
func (kd *keyed) decoder(p format.Partition) *decoder {
	x := kd.jsFormat.NewDecoder(p).(*decoder)
	if kd.file != nil {
		x.file = kd.file
		if p.Schema != kd.file.parquet {
			c := *kd.file
			c.parquet = p.Schema
			x.file = &c
		}
		x.fileShared = &format.Schema{Name: "format.schema_file", Parquet: x.file.parquet, Own: x.file}
	}
	return x
}

// jsonKey is the key reader of one schema's records, or why its records
// have no key.
type jsonKey struct {
	jk  *format.JSONKey
	err error
}

// registryKeys reads the keys of a registry's records: of a value with
// its schema's columns, of a Kafka key in the wire format with its own
// schema's, and of another Kafka key with those of the newest schema the
// partition admitted.
type registryKeys struct {
	x        *decoder
	keys     *jsFormat
	fields   []string
	bySchema map[*format.Schema]*jsonKey
	byID     map[uint32]*jsonKey // Kafka keys' schemas
	newest   map[uint32]*jsonKey // values' schemas, for Kafka keys without a schema id
}

func newJSONKey(s *schema.Schema, fields []string, opts []rowgroup.JSONOption, name string) *jsonKey {
	leaves, err := format.KeyLeaves(s, fields)
	if err != nil {
		return &jsonKey{err: fmt.Errorf("%s: %w", name, err)}
	}
	jk, err := format.NewJSONKey(leaves, opts...)
	if err != nil {
		return &jsonKey{err: fmt.Errorf("%s: %w", name, err)}
	}
	return &jsonKey{jk: jk}
}

func (r *registryKeys) valueKey(dst []byte, d format.Decoded) ([]byte, error) {
	k := r.bySchema[d.Schema]
	if k == nil {
		k = newJSONKey(d.Schema.Parquet, r.fields, r.x.k.opts, d.Schema.Name)
		r.bySchema[d.Schema] = k
	}
	if k.err != nil {
		return dst, k.err
	}
	return k.jk.Append(dst, format.JSONText(d))
}

func (r *registryKeys) kafkaKey(ctx context.Context, dst, key []byte, offset int64) ([]byte, error, error) {
	if id, body, err := schemaregistry.SplitWire(key); err == nil {
		k := r.byID[id]
		if k == nil {
			s, err := r.keys.lookup(ctx, id)
			switch {
			case err == nil && s.err != nil:
				k = &jsonKey{err: s.err}
			case err == nil:
				k = newJSONKey(s.parquet, r.fields, r.x.k.opts, fmt.Sprintf("the Kafka key's json schema id %d", id))
			case errors.Is(err, schemaregistry.ErrNotFound):
				return dst, fmt.Errorf("the Kafka key's json schema id %d: %w", id, err), nil
			case ctx.Err() != nil:
				return dst, nil, ctx.Err()
			default:
				return dst, nil, format.RegistryUnreachable(ctx, r.x.log, err, "key_schema_id", id, "offset", offset)
			}
			r.byID[id] = k
		}
		if k.err != nil {
			return dst, k.err, nil
		}
		out, kerr := k.jk.AppendKafkaKey(dst, body)
		return out, kerr, nil
	}
	if len(r.x.admitted) == 0 {
		return dst, errors.New("a Kafka key without a schema id before any value of the partition: the key fields' types are those of the values' schema"), nil
	}
	newest := r.x.admitted[len(r.x.admitted)-1]
	k := r.newest[newest.id]
	if k == nil {
		k = newJSONKey(newest.parquet, r.fields, r.x.k.opts, fmt.Sprintf("json schema id %d", newest.id))
		r.newest[newest.id] = k
	}
	if k.err != nil {
		return dst, k.err, nil
	}
	out, kerr := k.jk.AppendKafkaKey(dst, key)
	return out, kerr, nil
}
