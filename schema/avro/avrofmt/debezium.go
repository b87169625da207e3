package avrofmt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/schema/avro"
)

// Debezium change events in Avro. The registry's schema of a Debezium
// topic is the envelope's: a record of before and after (each a union of
// null and the row's record), source (with ts_ms), op and ts_ms. The
// files' rows are the row's record with one more field, _cdc (op, and
// ts as an Avro timestamp-millis), so that the Avro decoder the files are
// written with reads them unchanged: a record's binary is its fields'
// back to back, so a row's payload is after's bytes with the _cdc
// record's appended.

// cdcField is the _cdc field appended to the row's record.
var cdcField = map[string]any{"name": format.CDCField, "type": map[string]any{
	"type": "record", "name": "CDC", "namespace": "pqsink", "fields": []any{
		map[string]any{"name": "op", "type": "string"},
		map[string]any{"name": "ts", "type": []any{"null", map[string]any{"type": "long", "logicalType": "timestamp-millis"}}},
	}}}

// debeziumRow returns the schema of the files' rows of Debezium envelope
// env: the record of its after field, with cdcField appended.
func debeziumRow(env *avro.Schema) (*avro.Schema, error) {
	var doc any
	if err := json.Unmarshal([]byte(env.String()), &doc); err != nil {
		return nil, err
	}
	root, _ := doc.(map[string]any)
	fields, _ := root["fields"].([]any)
	var after any
	for _, f := range fields {
		if m, _ := f.(map[string]any); m != nil && m["name"] == "after" {
			after = m["type"]
		}
	}
	branches, _ := after.([]any)
	var row any
	for _, b := range branches {
		if b != "null" {
			if row != nil {
				return nil, errors.New("debezium: after is a union of more than null and a record")
			}
			row = b
		}
	}
	if name, ok := row.(string); ok {
		row = findNamed(doc, name)
	}
	rec, _ := row.(map[string]any)
	if rec == nil || rec["type"] != "record" {
		return nil, errors.New("debezium: the schema is not a Debezium envelope (no field after of a union of null and a record)")
	}
	if ns, _ := root["namespace"].(string); ns != "" && rec["namespace"] == nil && !strings.Contains(fmt.Sprint(rec["name"]), ".") {
		rec["namespace"] = ns
	}
	rowFields, _ := rec["fields"].([]any)
	for _, f := range rowFields {
		if m, _ := f.(map[string]any); m != nil && m["name"] == format.CDCField {
			return nil, fmt.Errorf("debezium: the row has a field %s, the change events' column", format.CDCField)
		}
	}
	rec["fields"] = append(rowFields[:len(rowFields):len(rowFields)], cdcField)
	text, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	return avro.Parse(string(text))
}

// findNamed finds the definition of the named type name (a full name or
// a short one) in a schema's JSON.
func findNamed(doc any, name string) any {
	short := name[strings.LastIndexByte(name, '.')+1:]
	switch v := doc.(type) {
	case map[string]any:
		if n, _ := v["name"].(string); n != "" && (v["type"] == "record" || v["type"] == "enum" || v["type"] == "fixed") {
			full := n
			if ns, _ := v["namespace"].(string); ns != "" && !strings.Contains(n, ".") {
				full = ns + "." + n
			}
			if full == name || !strings.Contains(name, ".") && n == short {
				return v
			}
		}
		for _, c := range v {
			if found := findNamed(c, name); found != nil {
				return found
			}
		}
	case []any:
		for _, c := range v {
			if found := findNamed(c, name); found != nil {
				return found
			}
		}
	}
	return nil
}

// avroEvent is a Debezium event read from its Avro binary: after and
// before as their records' bytes within the value (nil when null).
type avroEvent struct {
	op            string
	before, after []byte
	ts            int64
	hasTS         bool
}

// readEvent reads the event of Debezium envelope t from b.
func readEvent(t *avro.Type, b []byte) (avroEvent, error) {
	var ev avroEvent
	var eventTS int64
	var hasEventTS bool
	r := &avroBytes{b: b}
	for _, f := range t.Fields {
		switch f.Name {
		case "before", "after":
			start, end, err := r.nullable(f.Type)
			if err != nil {
				return ev, fmt.Errorf("debezium %s: %w", f.Name, err)
			}
			if start >= 0 {
				if f.Name == "before" {
					ev.before = b[start:end]
				} else {
					ev.after = b[start:end]
				}
			}
		case "op":
			if f.Type.Kind != avro.String {
				return ev, errors.New("debezium: op is not a string")
			}
			s, err := r.bytes()
			if err != nil {
				return ev, fmt.Errorf("debezium op: %w", err)
			}
			ev.op = string(s)
		case "ts_ms":
			var err error
			if hasEventTS, eventTS, err = r.long(f.Type); err != nil {
				return ev, fmt.Errorf("debezium ts_ms: %w", err)
			}
		case "source":
			if f.Type.Kind != avro.Record {
				if err := r.skip(f.Type); err != nil {
					return ev, fmt.Errorf("debezium source: %w", err)
				}
				continue
			}
			for _, sf := range f.Type.Fields {
				var err error
				if sf.Name == "ts_ms" {
					ev.hasTS, ev.ts, err = r.long(sf.Type)
				} else {
					err = r.skip(sf.Type)
				}
				if err != nil {
					return ev, fmt.Errorf("debezium source.%s: %w", sf.Name, err)
				}
			}
		default:
			if err := r.skip(f.Type); err != nil {
				return ev, fmt.Errorf("debezium %s: %w", f.Name, err)
			}
		}
	}
	if r.pos != len(b) {
		return ev, fmt.Errorf("debezium: %d bytes after the event", len(b)-r.pos)
	}
	if !ev.hasTS && hasEventTS {
		ev.ts, ev.hasTS = eventTS, true
	}
	return ev, nil
}

// avroBytes reads Avro binary.
type avroBytes struct {
	b   []byte
	pos int
}

var errShort = errors.New("the value ends within a field")

func (r *avroBytes) varint() (int64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, errShort
	}
	r.pos += n
	return int64(v>>1) ^ -int64(v&1), nil
}

func (r *avroBytes) bytes() ([]byte, error) {
	n, err := r.varint()
	if err != nil {
		return nil, err
	}
	if n < 0 || n > int64(len(r.b)-r.pos) {
		return nil, errShort
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// nullable reads a union of null and one type, and returns where the
// type's value is ([-1, -1] for null).
func (r *avroBytes) nullable(t *avro.Type) (int, int, error) {
	if t.Kind != avro.Union {
		start := r.pos
		err := r.skip(t)
		return start, r.pos, err
	}
	i, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	if i < 0 || i >= int64(len(t.Branches)) {
		return 0, 0, fmt.Errorf("union branch %d of %d", i, len(t.Branches))
	}
	br := t.Branches[i]
	if br.Kind == avro.Null {
		return -1, -1, nil
	}
	start := r.pos
	err = r.skip(br)
	return start, r.pos, err
}

// long reads a long, or a union of null and a long.
func (r *avroBytes) long(t *avro.Type) (bool, int64, error) {
	if t.Kind == avro.Union {
		i, err := r.varint()
		if err != nil {
			return false, 0, err
		}
		if i < 0 || i >= int64(len(t.Branches)) {
			return false, 0, fmt.Errorf("union branch %d of %d", i, len(t.Branches))
		}
		t = t.Branches[i]
	}
	switch t.Kind {
	case avro.Null:
		return false, 0, nil
	case avro.Long, avro.Int:
		v, err := r.varint()
		if err != nil {
			return false, 0, err
		}
		if v > math.MaxInt64/1_000_000 || v < -math.MaxInt64/1_000_000 {
			return false, 0, fmt.Errorf("%d is not a time in milliseconds", v)
		}
		return true, v, nil
	}
	return false, 0, fmt.Errorf("a %s, not a long", t.Kind)
}

// skip skips a value of t.
func (r *avroBytes) skip(t *avro.Type) error {
	switch t.Kind {
	case avro.Null:
		return nil
	case avro.Boolean:
		return r.advance(1)
	case avro.Int, avro.Long, avro.Enum:
		_, err := r.varint()
		return err
	case avro.Float:
		return r.advance(4)
	case avro.Double:
		return r.advance(8)
	case avro.Bytes, avro.String:
		_, err := r.bytes()
		return err
	case avro.Fixed:
		return r.advance(t.Size)
	case avro.Record:
		for _, f := range t.Fields {
			if err := r.skip(f.Type); err != nil {
				return err
			}
		}
		return nil
	case avro.Union:
		i, err := r.varint()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(t.Branches)) {
			return fmt.Errorf("union branch %d of %d", i, len(t.Branches))
		}
		return r.skip(t.Branches[i])
	case avro.Array, avro.Map:
		for {
			n, err := r.varint()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if n < 0 { // a block with its size in bytes
				size, err := r.varint()
				if err != nil {
					return err
				}
				if size < 0 {
					return errors.New("a negative block size")
				}
				if err := r.advance(int(min(size, math.MaxInt32))); err != nil {
					return err
				}
				continue
			}
			if n > int64(len(r.b)) { // each item takes a byte at least, but null items; bound the loop
				return errShort
			}
			for range n {
				if t.Kind == avro.Map {
					if _, err := r.bytes(); err != nil {
						return err
					}
					if err := r.skip(t.Values); err != nil {
						return err
					}
				} else if err := r.skip(t.Items); err != nil {
					return err
				}
			}
		}
	}
	return fmt.Errorf("avro type %s", t.Kind)
}

func (r *avroBytes) advance(n int) error {
	if n < 0 || n > len(r.b)-r.pos {
		return errShort
	}
	r.pos += n
	return nil
}

// appendCDC appends the _cdc record of ev to a row's bytes.
func appendCDC(dst []byte, ev avroEvent) []byte {
	dst = avro.AppendLong(dst, int64(len(ev.op)))
	dst = append(dst, ev.op...)
	if !ev.hasTS {
		return avro.AppendLong(dst, 0)
	}
	return avro.AppendLong(avro.AppendLong(dst, 1), ev.ts)
}
