package avro

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// ValueField is the name of the one top-level Parquet field of a schema
// whose Avro root is not a record (a topic of plain strings, say).
const ValueField = "value"

// Parquet returns the Parquet schema of records of s, with extra fields
// (such as rowgroup.EnvelopeNode()) added after the record's own. The
// mapping is parquet-java's AvroSchemaConverter with the standard
// three-level lists (parquet.avro.write-old-list-structure=false):
//
//   - a record is a group of its fields (the root record is the message,
//     named after the record); a root that is not a record becomes one
//     field named "value";
//   - boolean, int, long, float, double are BOOLEAN, INT32, INT64, FLOAT,
//     DOUBLE; bytes is BINARY; string is BINARY (STRING); enum is BINARY
//     (ENUM); fixed is FIXED_LEN_BYTE_ARRAY of its size; null (a field
//     that is always null) is an optional INT32 (UNKNOWN);
//   - a union of null and one type is that type, optional; any other union
//     is a group with one optional field per non-null branch, member0,
//     member1, … in branch order, the group optional when a branch is null;
//   - array is a LIST (list, element), map a MAP (key_value, key, value)
//     with STRING keys;
//   - logical types: decimal on bytes and on fixed is DECIMAL(p,s) on
//     BINARY or FIXED_LEN_BYTE_ARRAY; uuid on string or fixed(16) is
//     FIXED_LEN_BYTE_ARRAY(16) (UUID), its text parsed into the 16 bytes;
//     date is DATE; time-millis and time-micros are TIME(MILLIS|MICROS,
//     true); timestamp-millis/-micros/-nanos are TIMESTAMP(unit, true);
//     local-timestamp-millis/-micros/-nanos are TIMESTAMP(unit, false);
//     duration is FIXED_LEN_BYTE_ARRAY(12) (INTERVAL), whose layout
//     (three little-endian uint32s) it shares. Unknown or invalid logical
//     types were dropped by Parse: their values keep the underlying type.
func (s *Schema) Parquet(extra ...*schema.Node) (*schema.Schema, error) {
	name := "value"
	var fields []*schema.Node
	if s.Root.Kind == Record {
		name = s.Root.ShortName()
		for _, f := range s.Root.Fields {
			n, err := Node(f.Name, f.Type, schema.Required)
			if err != nil {
				return nil, err
			}
			fields = append(fields, n)
		}
	} else {
		n, err := Node(ValueField, s.Root, schema.Required)
		if err != nil {
			return nil, err
		}
		fields = append(fields, n)
	}
	fields = append(fields, extra...)
	ps, err := schema.New(name, fields...)
	if err != nil {
		return nil, fmt.Errorf("avro schema to parquet: %w", err)
	}
	return ps, nil
}

// Node returns the Parquet node of a field called name of Avro type t,
// with repetition rep unless t is a union with null, which makes it
// optional. See Schema.Parquet for the mapping.
func Node(name string, t *Type, rep schema.Repetition) (*schema.Node, error) {
	return node(name, t, rep, 0)
}

// maxNodeDepth bounds nesting; Parse rejects recursion, so only absurd
// schemas come near.
const maxNodeDepth = 500

func node(name string, t *Type, rep schema.Repetition, depth int) (*schema.Node, error) {
	if depth > maxNodeDepth {
		return nil, fmt.Errorf("avro schema to parquet: field %s: nested more than %d deep", name, maxNodeDepth)
	}
	switch t.Kind {
	case Null:
		return schema.Leaf(name, schema.Optional, meta.TypeInt32, schema.Logical{Kind: schema.Unknown}), nil
	case Record:
		var fields []*schema.Node
		for _, f := range t.Fields {
			n, err := node(f.Name, f.Type, schema.Required, depth+1)
			if err != nil {
				return nil, err
			}
			fields = append(fields, n)
		}
		if len(fields) == 0 {
			return nil, fmt.Errorf("avro schema to parquet: field %s: record %s has no fields, and a Parquet group needs one", name, t.Name)
		}
		return schema.Group(name, rep, schema.Logical{}, fields...), nil
	case Array:
		el, err := node("element", t.Items, schema.Required, depth+1)
		if err != nil {
			return nil, err
		}
		return schema.Group(name, rep, schema.Logical{Kind: schema.List},
			schema.Group("list", schema.Repeated, schema.Logical{}, el)), nil
	case Map:
		val, err := node("value", t.Values, schema.Required, depth+1)
		if err != nil {
			return nil, err
		}
		return schema.Group(name, rep, schema.Logical{Kind: schema.Map},
			schema.Group("key_value", schema.Repeated, schema.Logical{},
				schema.Leaf("key", schema.Required, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
				val)), nil
	case Union:
		var members []*Type
		hasNull := false
		for _, b := range t.Branches {
			if b.Kind == Null {
				hasNull = true
			} else {
				members = append(members, b)
			}
		}
		if hasNull {
			rep = schema.Optional
		}
		switch {
		case len(members) == 0:
			return schema.Leaf(name, schema.Optional, meta.TypeInt32, schema.Logical{Kind: schema.Unknown}), nil
		case len(members) == 1 && hasNull:
			return node(name, members[0], schema.Optional, depth+1)
		}
		fields := make([]*schema.Node, len(members))
		for i, m := range members {
			n, err := node(fmt.Sprintf("member%d", i), m, schema.Optional, depth+1)
			if err != nil {
				return nil, err
			}
			fields[i] = n
		}
		return schema.Group(name, rep, schema.Logical{}, fields...), nil
	}
	phys, length, logical := leafType(t)
	if phys == meta.TypeFixedLenByteArray {
		return schema.FixedLeaf(name, rep, int32(length), logical), nil
	}
	return schema.Leaf(name, rep, phys, logical), nil
}

// leafType returns the Parquet type of a primitive, enum or fixed Avro type.
func leafType(t *Type) (meta.Type, int, schema.Logical) {
	ts := func(u schema.TimeUnit, utc bool) schema.Logical {
		return schema.Logical{Kind: schema.Timestamp, Unit: u, UTC: utc}
	}
	switch t.Logical {
	case Decimal:
		l := schema.Logical{Kind: schema.Decimal, Precision: int32(t.Precision), Scale: int32(t.Scale)}
		if t.Kind == Fixed {
			return meta.TypeFixedLenByteArray, t.Size, l
		}
		return meta.TypeByteArray, 0, l
	case UUID:
		return meta.TypeFixedLenByteArray, 16, schema.Logical{Kind: schema.UUID}
	case Date:
		return meta.TypeInt32, 0, schema.Logical{Kind: schema.Date}
	case TimeMillis:
		return meta.TypeInt32, 0, schema.Logical{Kind: schema.Time, Unit: schema.Millis, UTC: true}
	case TimeMicros:
		return meta.TypeInt64, 0, schema.Logical{Kind: schema.Time, Unit: schema.Micros, UTC: true}
	case TimestampMillis:
		return meta.TypeInt64, 0, ts(schema.Millis, true)
	case TimestampMicros:
		return meta.TypeInt64, 0, ts(schema.Micros, true)
	case TimestampNanos:
		return meta.TypeInt64, 0, ts(schema.Nanos, true)
	case LocalTimestampMillis:
		return meta.TypeInt64, 0, ts(schema.Millis, false)
	case LocalTimestampMicros:
		return meta.TypeInt64, 0, ts(schema.Micros, false)
	case LocalTimestampNanos:
		return meta.TypeInt64, 0, ts(schema.Nanos, false)
	case Duration:
		return meta.TypeFixedLenByteArray, 12, schema.Logical{Kind: schema.Interval}
	}
	switch t.Kind {
	case Boolean:
		return meta.TypeBoolean, 0, schema.Logical{}
	case Int:
		return meta.TypeInt32, 0, schema.Logical{}
	case Long:
		return meta.TypeInt64, 0, schema.Logical{}
	case Float:
		return meta.TypeFloat, 0, schema.Logical{}
	case Double:
		return meta.TypeDouble, 0, schema.Logical{}
	case String:
		return meta.TypeByteArray, 0, schema.Logical{Kind: schema.String}
	case Enum:
		return meta.TypeByteArray, 0, schema.Logical{Kind: schema.Enum}
	case Fixed:
		return meta.TypeFixedLenByteArray, t.Size, schema.Logical{}
	}
	return meta.TypeByteArray, 0, schema.Logical{} // Bytes
}

// MillisInMicros reports whether leaf n holds the values of t, a
// millisecond timestamp (timestamp-millis or local-timestamp-millis), in
// microseconds: a leaf schema.WidenMillis made for a table's files, whose
// values are t's times 1000.
func MillisInMicros(t *Type, n *schema.Node) bool {
	millis := t.Logical == TimestampMillis || t.Logical == LocalTimestampMillis
	return millis && n != nil && n.Logical.Kind == schema.Timestamp && n.Logical.Unit == schema.Micros
}

// NanosInMicros reports whether leaf n holds the values of t, a
// nanosecond timestamp (timestamp-nanos or local-timestamp-nanos), in
// microseconds: a leaf schema.NarrowNanos made for a table's files
// (table.timestamp_precision micros), whose values are t's floored to the
// microsecond.
func NanosInMicros(t *Type, n *schema.Node) bool {
	nanos := t.Logical == TimestampNanos || t.Logical == LocalTimestampNanos
	return nanos && n != nil && n.Logical.Kind == schema.Timestamp && n.Logical.Unit == schema.Micros
}

// TimeMillisInMicros reports whether leaf n holds the values of t, a
// time-millis (an int of milliseconds after midnight), in microseconds:
// an INT64 TIME(MICROS) leaf that schema.WidenTimeMillis made for a
// table's files (Iceberg's time), whose values are t's times 1000.
func TimeMillisInMicros(t *Type, n *schema.Node) bool {
	return t.Logical == TimeMillis && n != nil && n.Physical == meta.TypeInt64 &&
		n.Logical.Kind == schema.Time && n.Logical.Unit == schema.Micros
}
