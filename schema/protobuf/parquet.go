package protobuf

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Special says how a message type is mapped when it is not a group of its
// fields: the well-known types that have a Parquet type of their own.
type Special uint8

// The special message types.
const (
	// Plain is a message written as a group of its fields.
	Plain Special = iota
	// Timestamp is google.protobuf.Timestamp: INT64 TIMESTAMP(NANOS, UTC).
	Timestamp
	// Duration is google.protobuf.Duration: INT64 nanoseconds.
	Duration
	// Wrapper is one of the wrappers of wrappers.proto (Int32Value, ...):
	// the wrapped scalar, optional.
	Wrapper
	// AsVariant is google.protobuf.Struct, Value, ListValue, Any, and any
	// message without fields (google.protobuf.Empty): an unshredded
	// VARIANT.
	AsVariant
)

// SpecialOf classifies message type m.
func SpecialOf(m protoreflect.MessageDescriptor) Special {
	switch m.FullName() {
	case "google.protobuf.Timestamp":
		return Timestamp
	case "google.protobuf.Duration":
		return Duration
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		return Wrapper
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.Any":
		return AsVariant
	}
	if m.Fields().Len() == 0 {
		return AsVariant
	}
	return Plain
}

// maxDepth bounds the nesting of messages in a schema (recursion is
// refused, so only absurd schemas come near); it is protobuf's own
// default recursion limit.
const maxDepth = 100

// Parquet returns the Parquet schema of messages of type m, with extra
// fields (such as rowgroup.EnvelopeNode()) after the message's own. The
// schema is named after the message. Each field's node carries its field
// number as field id. The mapping:
//
//   - int32, sint32, sfixed32 are INT32; int64, sint64, sfixed64 are
//     INT64; uint32 and fixed32 are INT32 INTEGER(32, false); uint64 and
//     fixed64 are INT64 INTEGER(64, false); bool, float, double are
//     BOOLEAN, FLOAT, DOUBLE; string is BINARY (STRING); bytes is BINARY;
//     an enum is BINARY (ENUM) holding the value's name (a number the
//     enum does not name is written as its decimal text);
//   - a message is a group of its fields;
//   - a field with presence (proto3 optional, a message, a oneof member,
//     a proto2 optional field) is optional, NULL when unset; a proto3
//     field without presence is required and holds the default (zero,
//     "", the enum's first value) when unset; a proto2 required field is
//     required, and a message without it is rejected;
//   - repeated is LIST (list, element), the element required; a map is
//     MAP (key_value, key, value), the value optional when it is a
//     message and required otherwise;
//   - google.protobuf.Timestamp is INT64 TIMESTAMP(NANOS, UTC),
//     google.protobuf.Duration INT64 (nanoseconds), the wrappers their
//     scalar, optional; Struct, Value, ListValue, Any and messages without
//     fields (Empty) are VARIANT;
//   - a message that contains itself, at any depth, is refused; so are
//     proto2 groups.
func Parquet(m protoreflect.MessageDescriptor, extra ...*schema.Node) (*schema.Schema, error) {
	if SpecialOf(m) != Plain {
		return nil, fmt.Errorf("protobuf: %s cannot be the record's message: it is a well-known type or has no fields", m.FullName())
	}
	fields, err := fieldNodes(m, []protoreflect.FullName{m.FullName()})
	if err != nil {
		return nil, fmt.Errorf("protobuf: message %s: %w", m.FullName(), err)
	}
	s, err := schema.New(string(m.Name()), append(fields, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("protobuf: message %s to parquet: %w", m.FullName(), err)
	}
	return s, nil
}

func fieldNodes(m protoreflect.MessageDescriptor, stack []protoreflect.FullName) ([]*schema.Node, error) {
	fs := m.Fields()
	out := make([]*schema.Node, 0, fs.Len())
	for i := range fs.Len() {
		n, err := FieldNode(fs.Get(i), stack)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// FieldNode returns the Parquet node of field fd (see Parquet). stack
// holds the full names of the messages fd is nested in, outermost first,
// to refuse recursion.
func FieldNode(fd protoreflect.FieldDescriptor, stack []protoreflect.FullName) (*schema.Node, error) {
	if len(stack) > maxDepth {
		return nil, fmt.Errorf("field %s: messages nested more than %d deep", fd.Name(), maxDepth)
	}
	name := string(fd.Name())
	var n *schema.Node
	var err error
	switch {
	case fd.IsMap():
		var key, val *schema.Node
		if key, err = valueNode("key", fd.MapKey(), schema.Required, stack); err != nil {
			return nil, err
		}
		vrep := schema.Required
		if fd.MapValue().Kind() == protoreflect.MessageKind {
			vrep = schema.Optional
		}
		if val, err = valueNode("value", fd.MapValue(), vrep, stack); err != nil {
			return nil, err
		}
		n = schema.Group(name, schema.Required, schema.Logical{Kind: schema.Map},
			schema.Group("key_value", schema.Repeated, schema.Logical{}, key, val))
	case fd.IsList():
		var el *schema.Node
		if el, err = valueNode("element", fd, schema.Required, stack); err != nil {
			return nil, err
		}
		n = schema.Group(name, schema.Required, schema.Logical{Kind: schema.List},
			schema.Group("list", schema.Repeated, schema.Logical{}, el))
	default:
		rep := schema.Required
		if fd.HasPresence() && fd.Cardinality() != protoreflect.Required {
			rep = schema.Optional
		}
		if n, err = valueNode(name, fd, rep, stack); err != nil {
			return nil, err
		}
	}
	return n.WithFieldID(int32(fd.Number())), nil
}

// valueNode returns the node of one value of fd's type.
func valueNode(name string, fd protoreflect.FieldDescriptor, rep schema.Repetition, stack []protoreflect.FullName) (*schema.Node, error) {
	switch fd.Kind() {
	case protoreflect.GroupKind:
		return nil, fmt.Errorf("field %s: proto2 groups are not supported", fd.FullName())
	case protoreflect.MessageKind:
	default:
		phys, logical := ScalarType(fd.Kind())
		return schema.Leaf(name, rep, phys, logical), nil
	}
	m := fd.Message()
	switch SpecialOf(m) {
	case Timestamp:
		return schema.Leaf(name, rep, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: schema.Nanos, UTC: true}), nil
	case Duration:
		return schema.Leaf(name, rep, meta.TypeInt64, schema.Logical{}), nil
	case Wrapper:
		phys, logical := ScalarType(m.Fields().ByNumber(1).Kind())
		if rep == schema.Required && !fd.IsList() && !fd.IsMap() {
			rep = schema.Optional
		}
		return schema.Leaf(name, rep, phys, logical), nil
	case AsVariant:
		return schema.Group(name, rep, schema.Logical{Kind: schema.Variant, SpecVersion: 1},
			schema.Leaf("metadata", schema.Required, meta.TypeByteArray, schema.Logical{}),
			schema.Leaf("value", schema.Required, meta.TypeByteArray, schema.Logical{})), nil
	}
	for _, s := range stack {
		if s == m.FullName() {
			return nil, fmt.Errorf("field %s: %w: %s contains itself; recursive messages are not supported", fd.FullName(), errRecursive, m.FullName())
		}
	}
	fields, err := fieldNodes(m, append(stack[:len(stack):len(stack)], m.FullName()))
	if err != nil {
		return nil, err
	}
	return schema.Group(name, rep, schema.Logical{}, fields...), nil
}

// ScalarType returns the Parquet physical type and annotation of a
// scalar or enum kind.
func ScalarType(k protoreflect.Kind) (meta.Type, schema.Logical) {
	switch k {
	case protoreflect.BoolKind:
		return meta.TypeBoolean, schema.Logical{}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return meta.TypeInt32, schema.Logical{}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return meta.TypeInt32, schema.Logical{Kind: schema.Int, BitWidth: 32, Signed: false}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return meta.TypeInt64, schema.Logical{}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return meta.TypeInt64, schema.Logical{Kind: schema.Int, BitWidth: 64, Signed: false}
	case protoreflect.FloatKind:
		return meta.TypeFloat, schema.Logical{}
	case protoreflect.DoubleKind:
		return meta.TypeDouble, schema.Logical{}
	case protoreflect.StringKind:
		return meta.TypeByteArray, schema.Logical{Kind: schema.String}
	case protoreflect.EnumKind:
		return meta.TypeByteArray, schema.Logical{Kind: schema.Enum}
	}
	return meta.TypeByteArray, schema.Logical{} // bytes
}
