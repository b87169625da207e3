package connector

import (
	"errors"
	"fmt"
	"strings"
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
// (fieldLookup); Avro and Protobuf read them from its binary payload, with
// its own schema, by the lookups that a table's partition fields use
// (format.Lookup: see partvalues.go), so that a field's
// value is the one its column holds in the file. A value is written in the
// path as the reader's JSON writes it, strings without quotes: an Avro
// timestamp-millis as 2024-05-01T12:00:00.000Z, a date as 2024-05-01, a
// decimal as 12.50. A field the schema lacks, or that is null, is the null
// folder (archive.HiveNull), as in JSON.

// payloadPathFields computes a record's object path template {field}
// values and time_field from its binary payload, for a sink without a
// table (with one, payloadTablePart computes the table partition values
// instead): paths 0 to fields-1 of look are the template's fields, in its
// order, and path number fields is time_field's, when there is one.
type payloadPathFields struct {
	look      payloadLookup
	fields    int
	timeField string // "" without time_field
	buf       []byte
}

// errNotTime is wrapped by the error of a time_field whose column holds no
// time.
var errNotTime = errors.New("not a time")

// newPayloadPathFields readies the path values of records read by look, whose
// paths are the template's fields and then, when timeField is set, its
// path. A time_field whose column cannot hold a time (a boolean, a float,
// bytes) is an error of the schema.
func newPayloadPathFields(look payloadLookup, fields int, timeField string) (*payloadPathFields, error) {
	if timeField != "" {
		if leaf := look.Leaf(fields); leaf != nil && !holdsTime(leaf) {
			return nil, fmt.Errorf("time_field %s: %w: its column is %s; want a timestamp, a date, an integer of epoch milliseconds or a string", timeField, errNotTime, typeText(leaf))
		}
	}
	return &payloadPathFields{look: look, fields: fields, timeField: timeField}, nil
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

// values reads the record's payload (the bytes after the wire format's
// header) and sets vals to its escaped {field} values; with time_field it
// returns the record time. A payload that does not decode as far as the
// fields is a rejection with the reason the shredder would give it.
func (pp *payloadPathFields) values(body []byte, vals []string) (time.Time, error) {
	if err := pp.look.Read(body); err != nil {
		return time.Time{}, &rejection{Reason: rejectDecode, Err: fmt.Errorf("path fields: %w", err)}
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
		return parseRecordTime(string(v.Bytes()))
	}
	return time.Time{}, fmt.Errorf("time_field %s: %w", pp.timeField, errNotTime)
}

// text is path i's value as the path holds it (before escaping): nil for a
// null, text as it is (and bytes that are UTF-8), anything else as the
// reader's JSON of it without the quotes of a string (a date, a
// timestamp, a UUID, other bytes in base64: a key must be UTF-8).
func (pp *payloadPathFields) text(i int) ([]byte, error) {
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

// pathFieldSpec is what the payloadPathFields of a partition's schemas
// read: the lookup's paths, the first fields of which are the path
// template's {field} parts, and the last time_field's path when timeField
// is set.
type pathFieldSpec struct {
	paths     [][]string
	fields    int
	timeField string
}

// lookup compiles the path values of records of schema s. A path to a
// field that is not a value (a record, an array, a union of several
// types), or a time_field that holds no time, is an error of the schema.
func (ps *pathFieldSpec) lookup(s *format.Schema) (*payloadPathFields, error) {
	look, err := s.NewLookup(ps.paths, false)
	if err != nil {
		return nil, fmt.Errorf("path fields: %w", err)
	}
	return newPayloadPathFields(look, ps.fields, ps.timeField)
}

// pathFieldSpec is the {field} parts of the sink's path template and its
// time_field, for a sink without a table; nil when it has neither.
func (s *Sink) pathFieldSpec() *pathFieldSpec {
	paths := s.tmpl.Fields()
	if s.cfg.TimeField != "" {
		paths = append(paths[:len(paths):len(paths)], strings.Split(s.cfg.TimeField, "."))
	}
	if len(paths) == 0 {
		return nil
	}
	return &pathFieldSpec{paths: paths, fields: len(s.tmpl.Fields()), timeField: s.cfg.TimeField}
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
