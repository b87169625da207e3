package rowgroup

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// VariantNode returns the Parquet group of a VARIANT field called name,
// shredded by shape (VariantShredding.md): metadata, value, and for a
// typed shape a typed_value built from the spec's table of shredded
// types. The value column is required when the shape has no typed_value,
// optional otherwise.
func VariantNode(name string, rep schema.Repetition, shape variant.Shape) (*schema.Node, error) {
	if err := shape.Check(); err != nil {
		return nil, fmt.Errorf("variant %s: %w", name, err)
	}
	metadata := schema.Leaf("metadata", schema.Required, meta.TypeByteArray, schema.Logical{})
	annot := schema.Logical{Kind: schema.Variant, SpecVersion: 1}
	if !shape.Typed() {
		value := schema.Leaf("value", schema.Required, meta.TypeByteArray, schema.Logical{})
		return schema.Group(name, rep, annot, metadata, value), nil
	}
	fields := append([]*schema.Node{metadata}, shreddedPair(&shape)...)
	return schema.Group(name, rep, annot, fields...), nil
}

// shreddedPair returns the optional value and typed_value fields of a
// shredded value.
func shreddedPair(s *variant.Shape) []*schema.Node {
	value := schema.Leaf("value", schema.Optional, meta.TypeByteArray, schema.Logical{})
	if !s.Typed() {
		return []*schema.Node{value}
	}
	return []*schema.Node{value, typedNode(s)}
}

func typedNode(s *variant.Shape) *schema.Node {
	const name = "typed_value"
	opt := schema.Optional
	leaf := func(t meta.Type, l schema.Logical) *schema.Node { return schema.Leaf(name, opt, t, l) }
	intOf := func(bits int8) schema.Logical { return schema.Logical{Kind: schema.Int, BitWidth: bits, Signed: true} }
	dec := schema.Logical{Kind: schema.Decimal, Precision: int32(s.Precision), Scale: int32(s.Scale)}
	ts := func(utc bool, unit schema.TimeUnit) schema.Logical {
		return schema.Logical{Kind: schema.Timestamp, UTC: utc, Unit: unit}
	}
	switch s.Type {
	case variant.Boolean:
		return leaf(meta.TypeBoolean, schema.Logical{})
	case variant.Int8:
		return leaf(meta.TypeInt32, intOf(8))
	case variant.Int16:
		return leaf(meta.TypeInt32, intOf(16))
	case variant.Int32:
		return leaf(meta.TypeInt32, schema.Logical{})
	case variant.Int64:
		return leaf(meta.TypeInt64, schema.Logical{})
	case variant.Float:
		return leaf(meta.TypeFloat, schema.Logical{})
	case variant.Double:
		return leaf(meta.TypeDouble, schema.Logical{})
	case variant.Decimal4:
		return leaf(meta.TypeInt32, dec)
	case variant.Decimal8:
		return leaf(meta.TypeInt64, dec)
	case variant.Decimal16:
		return schema.FixedLeaf(name, opt, 16, dec)
	case variant.Date:
		return leaf(meta.TypeInt32, schema.Logical{Kind: schema.Date})
	case variant.TimeNTZ:
		return leaf(meta.TypeInt64, schema.Logical{Kind: schema.Time, Unit: schema.Micros})
	case variant.Timestamp:
		return leaf(meta.TypeInt64, ts(true, schema.Micros))
	case variant.TimestampNanos:
		return leaf(meta.TypeInt64, ts(true, schema.Nanos))
	case variant.TimestampNTZ:
		return leaf(meta.TypeInt64, ts(false, schema.Micros))
	case variant.TimestampNTZNanos:
		return leaf(meta.TypeInt64, ts(false, schema.Nanos))
	case variant.Binary:
		return leaf(meta.TypeByteArray, schema.Logical{})
	case variant.String:
		return leaf(meta.TypeByteArray, schema.Logical{Kind: schema.String})
	case variant.UUID:
		return schema.FixedLeaf(name, opt, 16, schema.Logical{Kind: schema.UUID})
	case variant.Object:
		fields := make([]*schema.Node, len(s.Fields))
		for i := range s.Fields {
			f := &s.Fields[i]
			fields[i] = schema.Group(f.Name, schema.Required, schema.Logical{}, shreddedPair(&f.Shape)...)
		}
		return schema.Group(name, opt, schema.Logical{}, fields...)
	case variant.Array:
		element := schema.Group("element", schema.Required, schema.Logical{}, shreddedPair(s.Element)...)
		list := schema.Group("list", schema.Repeated, schema.Logical{}, element)
		return schema.Group(name, opt, schema.Logical{Kind: schema.List}, list)
	}
	panic(fmt.Sprintf("rowgroup: shape type %v passed Check", s.Type)) // unreachable after Check
}

// VariantShape returns the shredding shape of a VARIANT group: the Shape
// its typed_value columns describe, with fields sorted by name. It fails
// when a typed_value does not use a type of the spec's table, when an
// object field is not a required group of value and typed_value, or a
// list is not the three-level shape with a required element group.
func VariantShape(n *schema.Node) (variant.Shape, error) {
	if n.Logical.Kind != schema.Variant {
		return variant.Shape{}, fmt.Errorf("%s is not a VARIANT group", n.PathString())
	}
	s, err := pairShape(n, 0)
	if err != nil {
		return variant.Shape{}, err
	}
	s.SortFields()
	if err := s.Check(); err != nil {
		return variant.Shape{}, fmt.Errorf("%s: %w", n.PathString(), err)
	}
	return s, nil
}

// pairShape reads the typed_value of a group holding value/typed_value.
func pairShape(g *schema.Node, depth int) (variant.Shape, error) {
	if depth > variant.MaxDepth {
		return variant.Shape{}, fmt.Errorf("%s: shredding nested deeper than %d levels", g.PathString(), variant.MaxDepth)
	}
	var typed *schema.Node
	for _, f := range g.Fields {
		switch f.Name {
		case "typed_value":
			typed = f
		case "value":
			if !f.IsLeaf() || f.Physical != meta.TypeByteArray || f.Repetition == schema.Repeated {
				return variant.Shape{}, fmt.Errorf("%s: value must be a binary", f.PathString())
			}
		case "metadata":
			if depth > 0 {
				return variant.Shape{}, fmt.Errorf("%s: metadata belongs only to the top of a VARIANT", f.PathString())
			}
		default:
			return variant.Shape{}, fmt.Errorf("%s: unexpected field %q beside value and typed_value", g.PathString(), f.Name)
		}
	}
	if typed == nil {
		return variant.Shape{}, nil
	}
	if typed.Repetition != schema.Optional {
		return variant.Shape{}, fmt.Errorf("%s must be optional", typed.PathString())
	}
	if typed.IsLeaf() {
		s, ok := leafShape(typed)
		if !ok {
			return variant.Shape{}, fmt.Errorf("%s: %v %v is not a shredded type of VariantShredding.md", typed.PathString(), typed.Physical, typed.Logical)
		}
		return s, nil
	}
	if typed.Logical.Kind == schema.List {
		list := typed.Fields
		if len(list) != 1 || list[0].Repetition != schema.Repeated || len(list[0].Fields) != 1 ||
			list[0].Fields[0].IsLeaf() || list[0].Fields[0].Repetition != schema.Required {
			return variant.Shape{}, fmt.Errorf("%s: a shredded array must be a three-level LIST with a required element group", typed.PathString())
		}
		elem, err := pairShape(list[0].Fields[0], depth+1)
		if err != nil {
			return variant.Shape{}, err
		}
		return variant.Shape{Type: variant.Array, Element: &elem}, nil
	}
	if typed.Logical.Kind != schema.None {
		return variant.Shape{}, fmt.Errorf("%s: a shredded object is an unannotated group, not %v", typed.PathString(), typed.Logical)
	}
	s := variant.Shape{Type: variant.Object}
	for _, f := range typed.Fields {
		if f.IsLeaf() || f.Repetition != schema.Required {
			return variant.Shape{}, fmt.Errorf("%s: a shredded field must be a required group", f.PathString())
		}
		fs, err := pairShape(f, depth+1)
		if err != nil {
			return variant.Shape{}, err
		}
		s.Fields = append(s.Fields, variant.ShapeField{Name: f.Name, Shape: fs})
	}
	return s, nil
}

func leafShape(n *schema.Node) (variant.Shape, bool) {
	l := n.Logical
	switch n.Physical {
	case meta.TypeBoolean:
		return variant.Shape{Type: variant.Boolean}, l.Kind == schema.None
	case meta.TypeInt32:
		switch {
		case l.Kind == schema.None:
			return variant.Shape{Type: variant.Int32}, true
		case l.Kind == schema.Int && l.Signed && l.BitWidth == 8:
			return variant.Shape{Type: variant.Int8}, true
		case l.Kind == schema.Int && l.Signed && l.BitWidth == 16:
			return variant.Shape{Type: variant.Int16}, true
		case l.Kind == schema.Int && l.Signed && l.BitWidth == 32:
			return variant.Shape{Type: variant.Int32}, true
		case l.Kind == schema.Decimal:
			return variant.Shape{Type: variant.Decimal4, Precision: uint8(l.Precision), Scale: uint8(l.Scale)}, l.Precision <= 9
		case l.Kind == schema.Date:
			return variant.Shape{Type: variant.Date}, true
		}
	case meta.TypeInt64:
		switch {
		case l.Kind == schema.None, l.Kind == schema.Int && l.Signed && l.BitWidth == 64:
			return variant.Shape{Type: variant.Int64}, true
		case l.Kind == schema.Decimal:
			return variant.Shape{Type: variant.Decimal8, Precision: uint8(l.Precision), Scale: uint8(l.Scale)}, l.Precision <= 18
		case l.Kind == schema.Time && !l.UTC && l.Unit == schema.Micros:
			return variant.Shape{Type: variant.TimeNTZ}, true
		case l.Kind == schema.Timestamp && l.Unit == schema.Micros:
			return variant.Shape{Type: pick(l.UTC, variant.Timestamp, variant.TimestampNTZ)}, true
		case l.Kind == schema.Timestamp && l.Unit == schema.Nanos:
			return variant.Shape{Type: pick(l.UTC, variant.TimestampNanos, variant.TimestampNTZNanos)}, true
		}
	case meta.TypeFloat:
		return variant.Shape{Type: variant.Float}, l.Kind == schema.None
	case meta.TypeDouble:
		return variant.Shape{Type: variant.Double}, l.Kind == schema.None
	case meta.TypeByteArray:
		switch l.Kind {
		case schema.None:
			return variant.Shape{Type: variant.Binary}, true
		case schema.String:
			return variant.Shape{Type: variant.String}, true
		case schema.Decimal:
			return variant.Shape{Type: variant.Decimal16, Precision: uint8(l.Precision), Scale: uint8(l.Scale)}, l.Precision <= 38
		}
	case meta.TypeFixedLenByteArray:
		switch {
		case l.Kind == schema.UUID && n.Length == 16:
			return variant.Shape{Type: variant.UUID}, true
		case l.Kind == schema.Decimal && n.Length == 16:
			return variant.Shape{Type: variant.Decimal16, Precision: uint8(l.Precision), Scale: uint8(l.Scale)}, l.Precision <= 38
		}
	}
	return variant.Shape{}, false
}

func pick(utc bool, withZone, without variant.Type) variant.Type {
	if utc {
		return withZone
	}
	return without
}
