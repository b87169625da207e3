package reader

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// variantNull is the Variant encoding of null: a primitive of type 0.
var variantNull = []byte{0}

// child returns the projected child of p called name and its value in the
// raw group v.
func child(p *plan, v Value, name string) (*plan, Value, bool) {
	for i, c := range p.children {
		if c.node.Name == name {
			return c, v.elems[i], true
		}
	}
	return nil, Value{}, false
}

// finishVariant turns a VARIANT group into a KindVariant value. An
// unshredded Variant is validated and kept as it is; a shredded one is
// rebuilt from its typed_value and value columns as VariantShredding.md
// prescribes.
func (r *Rows) finishVariant(p *plan, v Value) (Value, error) {
	_, mv, okMeta := child(p, v, "metadata")
	_, vv, okValue := child(p, v, "value")
	typedPlan, tv, okTyped := child(p, v, "typed_value")
	if !okMeta || (!okValue && !okTyped) {
		// A projection that leaves out parts of the Variant sees its
		// columns as a plain group.
		return r.finishGroup(p, v)
	}
	where := p.node.PathString()
	if mv.kind != KindBytes {
		return Value{}, corrupt("variant %s: metadata is null", where)
	}
	m, err := variant.ParseMetadata(mv.bytes)
	if err != nil {
		return Value{}, fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
	}
	if !okTyped || tv.kind == KindNull {
		value := variantNull
		if okValue && vv.kind == KindBytes {
			value = vv.bytes
		}
		if err := variant.Validate(mv.bytes, value); err != nil {
			return Value{}, fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
		}
		// Metadata and value come from two columns: put them side by side
		// in the record's arena.
		if err := r.growArena(len(mv.bytes) + len(value)); err != nil {
			return Value{}, err
		}
		start := len(r.arena)
		r.arena = append(append(r.arena, mv.bytes...), value...)
		return variantValue(p.node, r.arena[start:len(r.arena):len(r.arena)], len(mv.bytes)), nil
	}
	b := &r.vb
	b.Reset()
	if _, err := r.shredded(b, m, vv, typedPlan, tv); err != nil {
		return Value{}, fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
	}
	start := len(r.arena)
	oldCap := cap(r.arena)
	metadata, rest, err := b.Finish(r.arena, nil)
	if err != nil {
		return Value{}, fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
	}
	// The rebuilt Variant is about as large as the shredded values it
	// comes from, which the budget has counted; count it once built.
	if err := r.charge("a shredded Variant", int64(cap(metadata)-oldCap+len(rest))); err != nil {
		return Value{}, err
	}
	metadata = append(metadata, rest...)
	r.arena = metadata
	mid := len(r.arena) - len(rest)
	return variantValue(p.node, r.arena[start:len(r.arena):len(r.arena)], mid-start), nil
}

// shredded writes to b the value held by a value column (residual Variant
// bytes, or null) and a typed_value column (typedPlan nil when there is
// none). It reports false, writing nothing, when both are null: a missing
// value.
func (r *Rows) shredded(b *variant.Builder, m variant.Metadata, value Value, typedPlan *plan, typed Value) (bool, error) {
	if typedPlan == nil || typed.kind == KindNull {
		if value.kind != KindBytes {
			return false, nil
		}
		rv, err := variant.NewWithMetadata(m, value.bytes)
		if err != nil {
			return false, err
		}
		b.Value(rv)
		return true, b.Err()
	}
	n := typedPlan.node
	if n.IsLeaf() {
		if value.kind != KindNull {
			return false, fmt.Errorf("%s: both value and typed_value are set", n.PathString())
		}
		return true, writeTyped(b, typed)
	}
	if n.Logical.Kind == schema.List {
		if value.kind != KindNull {
			return false, fmt.Errorf("%s: both value and an array typed_value are set", n.PathString())
		}
		return true, r.shreddedArray(b, m, typedPlan, typed)
	}
	// An object: the shredded fields, then the residual fields of value.
	b.BeginObject()
	for i, f := range typedPlan.children {
		fv := typed.elems[i]
		if fv.kind != KindGroup {
			continue
		}
		_, fval, _ := child(f, fv, "value")
		tp, ftyped, _ := child(f, fv, "typed_value")
		if !present(fval, ftyped) {
			continue
		}
		b.Key(f.node.Name)
		if _, err := r.shredded(b, m, fval, tp, ftyped); err != nil {
			return false, fmt.Errorf("field %s: %w", f.node.Name, err)
		}
	}
	if value.kind == KindBytes {
		rv, err := variant.NewWithMetadata(m, value.bytes)
		if err != nil {
			return false, err
		}
		if rv.Type() != variant.Object {
			return false, fmt.Errorf("%s: typed_value is an object but value is %v", n.PathString(), rv.Type())
		}
		for i := range rv.Len() {
			name, fv, err := rv.Field(i)
			if err != nil {
				return false, err
			}
			b.Key(string(name))
			b.Value(fv)
		}
	}
	b.EndObject()
	return true, b.Err()
}

func present(value, typed Value) bool {
	return value.kind != KindNull || typed.kind != KindNull
}

// shreddedArray writes a typed_value LIST whose elements are groups of
// value and typed_value.
func (r *Rows) shreddedArray(b *variant.Builder, m variant.Metadata, p *plan, v Value) error {
	elem := p.node.ListElement()
	if len(p.children) != 1 || len(v.elems) != 1 {
		return fmt.Errorf("%s: malformed shredded array", p.node.PathString())
	}
	rep := p.children[0]
	b.BeginArray()
	for _, item := range v.elems[0].elems {
		ep, ev := rep, item
		if elem != rep.node {
			if len(rep.children) != 1 || len(item.elems) != 1 {
				return fmt.Errorf("%s: malformed shredded array", p.node.PathString())
			}
			ep, ev = rep.children[0], item.elems[0]
		}
		if ev.kind != KindGroup {
			b.Null()
			continue
		}
		_, fval, _ := child(ep, ev, "value")
		tp, ftyped, _ := child(ep, ev, "typed_value")
		ok, err := r.shredded(b, m, fval, tp, ftyped)
		if err != nil {
			return err
		}
		if !ok {
			b.Null() // elements cannot be missing; read one as null
		}
	}
	b.EndArray()
	return b.Err()
}

// checkShreddedType checks that a typed_value leaf has one of the types
// of the table of VariantShredding.md; any other (an unsigned integer, a
// FIXED_LEN_BYTE_ARRAY that is not a UUID or a decimal, INT96, TIMESTAMP
// in millis...) has no Variant type to become.
func checkShreddedType(n *schema.Node) error {
	l := n.Logical
	ok := false
	switch n.Physical {
	case meta.TypeBoolean, meta.TypeFloat, meta.TypeDouble:
		ok = l.Kind == schema.None
	case meta.TypeInt32:
		switch l.Kind {
		case schema.None, schema.Date:
			ok = true
		case schema.Int:
			ok = l.Signed && l.BitWidth <= 32
		case schema.Decimal:
			ok = l.Precision <= 9
		}
	case meta.TypeInt64:
		switch l.Kind {
		case schema.None:
			ok = true
		case schema.Int:
			ok = l.Signed && l.BitWidth == 64
		case schema.Decimal:
			ok = l.Precision <= 18
		case schema.Time:
			ok = !l.UTC && l.Unit == schema.Micros
		case schema.Timestamp:
			ok = l.Unit == schema.Micros || l.Unit == schema.Nanos
		}
	case meta.TypeByteArray:
		switch l.Kind {
		case schema.None, schema.String:
			ok = true
		case schema.Decimal:
			ok = l.Precision <= 38
		}
	case meta.TypeFixedLenByteArray:
		switch l.Kind {
		case schema.UUID:
			ok = n.Length == 16
		case schema.Decimal:
			ok = l.Precision <= 38 && n.Length <= 16
		}
	}
	if !ok {
		ann := ""
		if l.Kind != schema.None {
			ann = " " + l.String()
		}
		return fmt.Errorf("%w: shredded typed_value %s is %v%s, which VariantShredding.md does not allow", ErrUnsupported, n.PathString(), n.Physical, ann)
	}
	return nil
}

// writeTyped writes a shredded primitive by the table of
// VariantShredding.md.
func writeTyped(b *variant.Builder, v Value) error {
	n := v.node
	l := n.Logical
	if err := checkShreddedType(n); err != nil {
		return err
	}
	switch n.Physical {
	case meta.TypeBoolean:
		b.Bool(v.Bool())
	case meta.TypeInt32:
		x := v.Int32()
		switch {
		case l.Kind == schema.Int && l.BitWidth == 8:
			b.Int8(int8(x))
		case l.Kind == schema.Int && l.BitWidth == 16:
			b.Int16(int16(x))
		case l.Kind == schema.Decimal:
			b.Decimal4(x, uint8(l.Scale))
		case l.Kind == schema.Date:
			b.Date(x)
		default:
			b.Int32(x)
		}
	case meta.TypeInt64:
		x := v.Int64()
		switch {
		case l.Kind == schema.Decimal:
			b.Decimal8(x, uint8(l.Scale))
		case l.Kind == schema.Time:
			b.TimeNTZ(x)
		case l.Kind == schema.Timestamp && l.UTC && l.Unit == schema.Nanos:
			b.TimestampNanos(x)
		case l.Kind == schema.Timestamp && l.UTC:
			b.Timestamp(x)
		case l.Kind == schema.Timestamp && l.Unit == schema.Nanos:
			b.TimestampNTZNanos(x)
		case l.Kind == schema.Timestamp:
			b.TimestampNTZ(x)
		default:
			b.Int64(x)
		}
	case meta.TypeFloat:
		b.Float(v.Float())
	case meta.TypeDouble:
		b.Double(v.Double())
	case meta.TypeByteArray, meta.TypeFixedLenByteArray:
		switch l.Kind {
		case schema.String:
			b.String(string(v.bytes))
		case schema.Decimal:
			b.Decimal16(v.bytes, uint8(l.Scale))
		case schema.UUID:
			u, _ := v.UUID()
			b.UUID(u)
		default:
			b.Binary(v.bytes)
		}
	default:
		return fmt.Errorf("%s: %v cannot be a shredded value", n.PathString(), n.Physical)
	}
	return b.Err()
}
