package jsonfile

import (
	"fmt"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/schema"
)

// keyed is the JSON format read as changes to an upsert table's rows
// (format.Keyer). The key is read from each value's JSON text, not from
// the row the shredder builds: the shredder writes straight into the
// column buffers of a whole row group, where a row's values are not at
// hand as one record's, and the text is read with the shredder's own
// scalar conversion (rowgroup.ScalarConverter), so a key is the value
// its column holds.
type keyed struct {
	*jsonFile
	opts format.KeyOptions
}

// Keyed implements format.Keyer: the key fields must be required
// primitive fields of format.schema_file; with a Debezium envelope, each
// value's after is a row of the schema file, and the files have the
// format.CDCField column besides.
func (f *jsonFile) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name, format.EnvelopeDebezium); err != nil {
		return nil, err
	}
	k := &keyed{jsonFile: f, opts: opts}
	if k.debezium() && f.message.Lookup(format.CDCField) != nil {
		return nil, fmt.Errorf("format.schema_file: field %s is the change events' column; rename it", format.CDCField)
	}
	s, err := k.FixedSchema()
	if err != nil {
		return nil, err
	}
	if _, err := format.KeyLeaves(s, opts.Fields); err != nil {
		return nil, fmt.Errorf("format.schema_file: %w", err)
	}
	return k, nil
}

func (k *keyed) debezium() bool { return k.opts.Envelope == format.EnvelopeDebezium }

// FixedSchema is the schema file's, with the change column under a
// Debezium envelope.
func (k *keyed) FixedSchema() (*schema.Schema, error) {
	fields := k.message.Fields()
	if k.debezium() {
		fields = append(fields[:len(fields):len(fields)], format.CDCNode(k.timeUnit))
	}
	return format.WithEnvelope(k.envelope, k.timeUnit, k.message.Name(), fields...)
}

func (k *keyed) NewDecoder(p format.Partition) format.Decoder { return k.NewChangeDecoder(p) }

func (k *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	s := p.Schema
	if s == nil {
		s, _ = k.FixedSchema()
	}
	p.Schema = s
	return format.NewJSONChanges(k.jsonFile.NewDecoder(p), s, k.opts, k.timeUnit, k.jsonFile.opts...)
}
