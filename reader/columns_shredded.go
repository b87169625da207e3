package reader

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// The columnar assembler's shredded VARIANT: the JSON of each record is
// written straight from its value and typed_value columns (see
// columns_shredded_json.go), as the Variant Rows rebuilds (finishVariant)
// renders.

// jShredded is the kind of a jnode that is a shredded VARIANT group.
const jShredded = jRepeat + 1

// shreddedVariant is the state of a jShredded node.
type shreddedVariant struct {
	metadata *ColumnCursor
	top      *vpair
	lastMeta []byte           // a copy of the last metadata parsed
	m        variant.Metadata // its view, when parsed
	parsed   bool
	json     shredJSON
}

// vpair is a value/typed_value pair: the top of a VARIANT, a field of a
// shredded object or an element of a shredded array.
type vpair struct {
	value  *ColumnCursor // nil when the group has no value column
	typed  *vtyped       // nil when it has no typed_value
	leaves []*ColumnCursor
}

// vtyped is a typed_value node: a primitive, an object of fields or a
// LIST of elements.
type vtyped struct {
	node       *schema.Node
	def        uint8 // definition level of a present typed_value
	first      *ColumnCursor
	leaves     []*ColumnCursor
	leaf       *ColumnCursor // a primitive
	str        bool          // leaf is a STRING
	fields     []vfield      // an object
	elem       *vpair        // an array
	elemDef    uint8         // definition level of a present element
	rdef, rrep uint8         // an array: levels of its repeated group
}

// vfield is a shredded object field.
type vfield struct {
	name string
	pair *vpair
}

// buildShredded makes j, the node of VARIANT group n that has a
// typed_value, a jShredded node; shapes that Rows reads differently or
// refuses fail with ErrNotColumnar.
func buildShredded(j *jnode, n *schema.Node, byCol map[int]*ColumnCursor) (*jnode, error) {
	m := n.Field("metadata")
	if m == nil || !m.IsLeaf() {
		return nil, fmt.Errorf("%w: %s: a VARIANT without a metadata column", ErrNotColumnar, n.PathString())
	}
	top, err := buildPair(n, byCol, "metadata")
	if err != nil {
		return nil, err
	}
	top.typed.sortFields()
	j.kind = jShredded
	j.sv = &shreddedVariant{metadata: byCol[m.Column], top: top}
	return j, nil
}

// buildPair reads group g as a value/typed_value pair; other fields than
// those and the one named except make it fail with ErrNotColumnar.
func buildPair(g *schema.Node, byCol map[int]*ColumnCursor, except string) (*vpair, error) {
	unsupported := func(why string) (*vpair, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrNotColumnar, g.PathString(), why)
	}
	p := &vpair{}
	for _, f := range g.Fields {
		switch {
		case f.Name == except:
			continue
		case f.Repetition == schema.Repeated:
			return unsupported("a repeated field in a shredded VARIANT")
		case f.Name == "value" && f.IsLeaf():
			p.value = byCol[f.Column]
		case f.Name == "typed_value":
			t, err := buildTyped(f, byCol)
			if err != nil {
				return nil, err
			}
			p.typed = t
		default:
			return unsupported("a field " + f.Name + " beside value and typed_value")
		}
	}
	if p.value == nil && p.typed == nil {
		return unsupported("neither value nor typed_value")
	}
	var cols []int
	for _, f := range g.Fields {
		if f.Name != except {
			if err := collectLeaves(f, &cols); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range cols {
		p.leaves = append(p.leaves, byCol[c])
	}
	return p, nil
}

func buildTyped(n *schema.Node, byCol map[int]*ColumnCursor) (*vtyped, error) {
	unsupported := func(why string) (*vtyped, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrNotColumnar, n.PathString(), why)
	}
	t := &vtyped{node: n, def: uint8(n.MaxDef)}
	var cols []int
	if err := collectLeaves(n, &cols); err != nil {
		return nil, err
	}
	for _, c := range cols {
		t.leaves = append(t.leaves, byCol[c])
	}
	t.first = t.leaves[0]
	switch {
	case n.IsLeaf():
		if err := checkShreddedType(n); err != nil {
			return unsupported(err.Error()) // Rows reports it
		}
		t.leaf = byCol[n.Column]
		t.str = n.Physical == meta.TypeByteArray && n.Logical.Kind == schema.String
	case n.Logical.Kind == schema.List:
		el := n.ListElement()
		if el == nil || len(n.Fields) != 1 || el.IsLeaf() || el.Repetition == schema.Repeated && el != n.Fields[0] {
			return unsupported("a malformed shredded array")
		}
		r := n.Fields[0]
		if el != r && len(r.Fields) != 1 {
			return unsupported("a malformed shredded array")
		}
		e, err := buildPair(el, byCol, "")
		if err != nil {
			return nil, err
		}
		t.elem, t.elemDef, t.rdef, t.rrep = e, uint8(el.MaxDef), uint8(r.MaxDef), uint8(r.MaxRep)
		if el == r {
			t.elemDef = t.rdef
		}
	case n.Logical.Kind != schema.None:
		return unsupported("a typed_value group annotated " + n.Logical.String())
	default:
		for _, f := range n.Fields {
			if f.IsLeaf() || f.Repetition == schema.Repeated {
				return unsupported("an object field that is not a value/typed_value group")
			}
			if !utf8.ValidString(f.Name) {
				// Written as a JSON key it would need replacing; Rows
				// refuses it as the Variant's field name.
				return unsupported("an object field whose name is not UTF-8")
			}
			p, err := buildPair(f, byCol, "")
			if err != nil {
				return nil, err
			}
			t.fields = append(t.fields, vfield{name: f.Name, pair: p})
		}
	}
	return t, nil
}

// shredded writes the JSON of a present shredded VARIANT n.
func (a *JSONAssembler) shredded(dst []byte, n *jnode) ([]byte, error) {
	sv := n.sv
	where := n.node.PathString()
	if !sv.metadata.HasValue() {
		return dst, fmt.Errorf("%w: variant %s: metadata is null", ErrCorrupt, where)
	}
	mb := sv.metadata.Bytes()
	t := sv.top.typed
	if t == nil || t.first.Def() < t.def {
		// Not shredded in this record: the value column holds it all.
		value := variantNull
		if v := sv.top.value; v != nil && v.HasValue() {
			value = v.Bytes()
		}
		start := len(dst)
		out, err := variant.AppendJSON(dst, mb, value)
		if err != nil {
			return dst[:start], fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
		}
		return out, skip(n)
	}
	// Records of one shape mostly have the same metadata: the last one
	// parsed is kept, in a copy, since the view aliases its bytes.
	if !sv.parsed || !bytes.Equal(mb, sv.lastMeta) {
		sv.parsed = false
		sv.lastMeta = append(sv.lastMeta[:0], mb...)
		m, err := variant.ParseMetadata(sv.lastMeta)
		if err != nil {
			return dst, fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
		}
		sv.m, sv.parsed = m, true
	}
	start := len(dst)
	out, _, err := sv.json.pairJSON(dst, sv.m, sv.top)
	if err != nil {
		return dst[:start], fmt.Errorf("%w: variant %s: %w", ErrCorrupt, where, err)
	}
	return out, sv.metadata.Advance()
}

// advanceAll consumes one entry of each cursor.
func advanceAll(cs []*ColumnCursor) error {
	for _, c := range cs {
		if err := c.Advance(); err != nil {
			return err
		}
	}
	return nil
}

// pairPresent reports that p holds a value or a typed value.
func pairPresent(p *vpair) bool {
	return p.value != nil && p.value.HasValue() || p.typed != nil && p.typed.first.Def() >= p.typed.def
}
