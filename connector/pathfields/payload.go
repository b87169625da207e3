package pathfields

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// Without a table, the {field:PATH} parts of path and time_field read
// payload fields. The JSON formats read them from the record's text
// (JSON); Avro and Protobuf read them from its binary payload, with
// its own schema, by the lookups that a table's partition fields use
// (format.Lookup: see the connector's partvalues.go), so that a field's
// value is the one its column holds in the file. A value is written in the
// path as the reader's JSON writes it, strings without quotes: an Avro
// timestamp-millis as 2024-05-01T12:00:00.000Z, a date as 2024-05-01, a
// decimal as 12.50. A field the schema lacks, or that is null, is the null
// folder (archive.HiveNull), as in JSON.

// Payload computes a record's object path template {field} values and
// time_field from its binary payload, for a sink without a table (with
// one, the connector's payloadTablePart computes the table partition
// values instead): paths 0 to fields-1 of look are the template's fields, in its
// order, and path number fields is time_field's, when there is one.
type Payload struct {
	look      format.Lookup
	fields    int
	timeField string // "" without time_field
	buf       []byte
}

// ErrNotTime is wrapped by the error of a time_field whose column holds no
// time.
var ErrNotTime = errors.New("not a time")

// NewPayload readies the path values of records read by look, whose
// paths are the template's fields and then, when timeField is set, its
// path. A time_field whose column cannot hold a time (a boolean, a float,
// bytes) is an error of the schema.
func NewPayload(look format.Lookup, fields int, timeField string) (*Payload, error) {
	if timeField != "" {
		if leaf := look.Leaf(fields); leaf != nil && !holdsTime(leaf) {
			return nil, fmt.Errorf("time_field %s: %w: its column is %s; want a timestamp, a date, an integer of epoch milliseconds or a string", timeField, ErrNotTime, typeText(leaf))
		}
	}
	return &Payload{look: look, fields: fields, timeField: timeField}, nil
}

// holdsTime reports whether leaf's values can be a record time: a
// timestamp or a date, a plain integer (epoch milliseconds, as a JSON
// number is read) or text (RFC 3339, or epoch milliseconds).
func holdsTime(leaf *schema.Node) bool {
	l := leaf.Logical
	switch leaf.Physical {
	case meta.TypeInt96:
		return true
	case meta.TypeInt32, meta.TypeInt64:
		return l.Kind == schema.None || l.Kind == schema.Date || l.Kind == schema.Timestamp || l.Kind == schema.Int
	case meta.TypeByteArray:
		return l.Kind == schema.String || l.Kind == schema.Enum
	}
	return false
}

// Values reads the record's payload (the bytes after the wire format's
// header) and sets vals to its escaped {field} values; with time_field it
// returns the record time. A payload that does not decode as far as the
// fields is a rejection with the reason the shredder would give it.
func (pp *Payload) Values(body []byte, vals []string) (time.Time, error) {
	if err := pp.look.Read(body); err != nil {
		return time.Time{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("path fields: %w", err)}
	}
	for i := range pp.fields {
		text, err := pp.text(i)
		switch {
		case err != nil:
			return time.Time{}, err
		case len(text) == 0:
			vals[i] = archive.HiveNull
		default:
			pp.buf = archive.AppendEscaped(pp.buf[:0], string(text))
			vals[i] = string(pp.buf)
		}
	}
	if pp.timeField == "" {
		return time.Time{}, nil
	}
	plain := pp.look.Value(pp.fields)
	if plain == nil {
		return time.Time{}, fmt.Errorf("time_field %s is missing or null", pp.timeField)
	}
	leaf := pp.look.Leaf(pp.fields)
	v, err := reader.StatValue(leaf, plain)
	if err != nil {
		return time.Time{}, fmt.Errorf("time_field %s: %w", pp.timeField, err)
	}
	if t, ok := v.Time(); ok {
		return t, nil
	}
	switch v.Kind() {
	case reader.KindInt32:
		if l := leaf.Logical; l.Kind == schema.Int && !l.Signed {
			return time.UnixMilli(int64(uint32(v.Int32()))), nil
		}
		return time.UnixMilli(int64(v.Int32())), nil
	case reader.KindInt64:
		return time.UnixMilli(v.Int64()), nil
	case reader.KindBytes:
		return ParseRecordTime(string(v.Bytes()))
	}
	return time.Time{}, fmt.Errorf("time_field %s: %w", pp.timeField, ErrNotTime)
}

// text is path i's value as the path holds it (before escaping): nil for a
// null, text as it is (and bytes that are UTF-8), anything else as the
// reader's JSON of it without the quotes of a string (a date, a
// timestamp, a UUID, other bytes in base64: a key must be UTF-8).
func (pp *Payload) text(i int) ([]byte, error) {
	plain := pp.look.Value(i)
	if plain == nil {
		return nil, nil
	}
	leaf := pp.look.Leaf(i)
	v, err := reader.StatValue(leaf, plain)
	if err != nil {
		return nil, fmt.Errorf("path field %d: %w", i, err)
	}
	if v.Kind() == reader.KindBytes {
		switch leaf.Logical.Kind {
		case schema.String, schema.Enum, schema.JSON:
			return v.Bytes(), nil
		case schema.None:
			if utf8.Valid(v.Bytes()) {
				return v.Bytes(), nil
			}
		}
	}
	pp.buf = v.AppendJSON(pp.buf[:0])
	out := pp.buf
	if len(out) >= 2 && out[0] == '"' && out[len(out)-1] == '"' {
		// A date, a timestamp, a UUID, base64: no escapes inside.
		out = out[1 : len(out)-1]
	}
	return out, nil
}

// Spec is what the Payload of each of a partition's schemas reads: the
// lookup's Paths, the first Fields of which are the path template's
// {field} parts, and the last time_field's path when TimeField is set.
type Spec struct {
	Paths     [][]string
	Fields    int
	TimeField string // "" without time_field
}

// Lookup compiles the path values of records of schema s. A path to a
// field that is not a value (a record, an array, a union of several
// types), or a time_field that holds no time, is an error of the schema.
func (ps *Spec) Lookup(s *format.Schema) (*Payload, error) {
	look, err := s.NewLookup(ps.Paths, false)
	if err != nil {
		return nil, fmt.Errorf("path fields: %w", err)
	}
	return NewPayload(look, ps.Fields, ps.TimeField)
}

// typeText names a field's type in errors: "INT64", "BYTE_ARRAY (STRING)",
// "group (LIST)".
func typeText(n *schema.Node) string {
	t := "group"
	if n.IsLeaf() {
		t = n.TypeName()
	}
	if l := n.Logical.String(); l != "" {
		t += " (" + l + ")"
	}
	return t
}
