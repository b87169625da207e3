package rowgroup

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// VariantShredder fills a row group whose schema is one VARIANT field,
// shredded or not, and optionally the Kafka envelope group beside it, with
// one Variant per record: the whole record is the value (JSON text with
// ShredJSON or Append, or Variant bytes with ShredVariant).
//
// The shredding follows VariantShredding.md: each value goes to its
// typed_value when the shape's type holds it (see variant.Shape.Match)
// and to value otherwise; an object is split into its shredded fields
// and a residual object of the others, written to value only when it
// has fields; a field the object lacks is written as missing (both
// columns null) and a field that is null as the Variant null in value.
// So value and typed_value are never both set except for a partially
// shredded object, as the spec requires. Residual values keep the field
// ids of the record's metadata, which lists every field name, shredded
// or not.
//
// JSON records that fit the shape are shredded straight from their tokens
// into the typed columns (see variant_direct.go); the others are encoded
// as a Variant first and split (VariantTwoPass makes every record go that
// way, the reference). Both give the same columns.
//
// A VariantShredder keeps its buffers between records and allocates
// nothing per record once they have grown.
type VariantShredder struct {
	g        *RowGroup
	root     *variantPlan
	metadata *Column
	enc      *variant.Encoder
	meta     []byte
	val      []byte
	mark     Mark
	needMark bool         // some pair lacks a value column, so a record can fail half-way
	b        *Builder     // ShredJSON's rows, without an envelope
	undo     recordUndo   // for Append
	column   string       // the VARIANT field's name
	direct   *directState // the direct path; nil without a shape, or with VariantTwoPass
	twoPass  bool
	// The leaves under each list, up to the lists inside it: their
	// repetition levels are always equal (see Column.shareRep).
	repGroups [][]*Column
}

// VariantOption configures a VariantShredder.
type VariantOption func(*variantOptions) error

type variantOptions struct {
	column  string
	enc     []variant.Option
	twoPass bool
}

// VariantTwoPass makes the shredder encode every record as a Variant and
// then split that into the shredded columns, instead of shredding the JSON
// tokens straight into the typed columns when they fit the shape. Both
// give the same columns; the two-pass path is the reference that tests
// hold the direct one to, and it is slower. Defaults to off.
func VariantTwoPass() VariantOption {
	return func(o *variantOptions) error {
		o.twoPass = true
		return nil
	}
}

// VariantEncoding passes options to the Variant encoder of the shredder,
// e.g. variant.LossyNumbers().
func VariantEncoding(opts ...variant.Option) VariantOption {
	return func(o *variantOptions) error {
		o.enc = append(o.enc, opts...)
		return nil
	}
}

// VariantColumn names the top-level VARIANT field the shredder fills. A
// VARIANT field named _kafka this way is the payload, not the envelope.
// Defaults to the schema's only top-level VARIANT group other than _kafka.
func VariantColumn(name string) VariantOption {
	return func(o *variantOptions) error {
		if name == "" {
			return fmt.Errorf("variant shredder: empty column name")
		}
		o.column = name
		return nil
	}
}

// variantPlan is one value/typed_value pair of the schema.
type variantPlan struct {
	path   string // JSON-style path for messages, e.g. $.user.tags[]
	shape  *variant.Shape
	value  *Column // nil when the schema has none
	typed  *Column // a primitive typed_value
	fields []*variantPlan
	elem   *variantPlan
	def    uint8 // definition level at which the pair's group exists
	rep    uint8 // arrays: repetition level of an element after the first
	leaves []*Column
	direct *directPlan // objects: the direct path's state

	found    []variant.Value // objects: scratch for SplitObject
	residual []byte          // objects: scratch for the residual object
	big      [16]byte        // decimal16: scratch
}

// NewVariantShredder returns a shredder for g, whose schema must consist
// of one VARIANT group (see VariantNode) and, optionally, the envelope
// group EnvelopeField (see EnvelopeNode), which a Builder fills. The
// VARIANT group is the one VariantColumn names, or the only one.
func NewVariantShredder(g *RowGroup, opts ...VariantOption) (*VariantShredder, error) {
	var o variantOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	top, err := variantField(g.Schema().Fields(), o.column)
	if err != nil {
		return nil, fmt.Errorf("variant shredder: %w", err)
	}
	shape, err := VariantShape(top)
	if err != nil {
		return nil, fmt.Errorf("variant shredder: %w", err)
	}
	md := top.Field("metadata")
	if md == nil || !md.IsLeaf() || md.Physical != meta.TypeByteArray || md.Repetition != schema.Required {
		return nil, fmt.Errorf("variant shredder: %s: a VARIANT group needs a required binary metadata field", top.PathString())
	}
	s := &VariantShredder{g: g, enc: variant.NewEncoder(o.enc...), column: top.Name}
	s.metadata = g.Column(md.Column)
	sh := shape
	s.root, err = s.plan(top, &sh, "$")
	if err != nil {
		return nil, fmt.Errorf("variant shredder: %w", err)
	}
	if v := top.Field("value"); v != nil && v.Repetition == schema.Required && shape.Typed() {
		return nil, fmt.Errorf("variant shredder: %s: value must be optional beside typed_value", top.PathString())
	}
	s.twoPass = o.twoPass
	if shape.Typed() && !o.twoPass {
		s.direct = &directState{enc: variant.NewEncoder()}
		s.direct.scan.SetMaxDepth(variant.MaxDepth)
	}
	if s.b, err = NewBuilder(g, s); err != nil {
		return nil, fmt.Errorf("variant shredder: %w", err)
	}
	s.undo.init(g)
	return s, nil
}

// variantField finds the VARIANT field among the top-level fields, which
// may only add the envelope beside it.
func variantField(fields []*schema.Node, name string) (*schema.Node, error) {
	var top *schema.Node
	n := 0
	for _, f := range fields {
		switch {
		case name != "" && f.Name == name:
			if f.Logical.Kind != schema.Variant {
				return nil, fmt.Errorf("field %s is not a VARIANT group", name)
			}
			top = f
		case f.Name == EnvelopeField:
		case name == "" && f.Logical.Kind == schema.Variant:
			top = f
			n++
		}
	}
	others := len(fields) - 1
	for _, f := range fields {
		if f.Name == EnvelopeField && f != top {
			others--
		}
	}
	switch {
	case name != "" && top == nil:
		return nil, fmt.Errorf("schema has no top-level field %s", name)
	case top == nil || n > 1 || others > 0:
		return nil, fmt.Errorf("schema must be one VARIANT field, optionally with %s beside it, has %d fields", EnvelopeField, len(fields))
	}
	return top, nil
}

func (s *VariantShredder) rowGroup() *RowGroup { return s.g }

// fillsEnvelope is true only for a VARIANT column that VariantColumn
// names _kafka: the user's column, not the envelope.
func (s *VariantShredder) fillsEnvelope() bool { return s.column == EnvelopeField }

// plan builds the plan of the pair group g, shredded by shape.
func (s *VariantShredder) plan(g *schema.Node, shape *variant.Shape, path string) (*variantPlan, error) {
	p := &variantPlan{path: path, shape: shape, def: uint8(g.MaxDef)}
	if v := g.Field("value"); v != nil {
		p.value = s.g.Column(v.Column)
		p.leaves = append(p.leaves, p.value)
	} else {
		s.needMark = true
	}
	t := g.Field("typed_value")
	switch shape.Type {
	case variant.Invalid:
		return p, nil
	case variant.Object:
		p.found = make([]variant.Value, len(shape.Fields))
		p.direct = newDirectPlan(shape)
		for i := range shape.Fields {
			f := &shape.Fields[i]
			fp, err := s.plan(t.Field(f.Name), &f.Shape, path+"."+f.Name)
			if err != nil {
				return nil, err
			}
			p.fields = append(p.fields, fp)
			p.leaves = append(p.leaves, fp.leaves...)
		}
	case variant.Array:
		elem := t.Fields[0].Fields[0]
		ep, err := s.plan(elem, shape.Element, path+"[]")
		if err != nil {
			return nil, err
		}
		p.elem, p.rep = ep, uint8(elem.MaxRep)
		p.leaves = append(p.leaves, ep.leaves...)
		if g := ep.sameRep(nil); len(g) > 1 {
			s.repGroups = append(s.repGroups, g)
		}
	default:
		p.typed = s.g.Column(t.Column)
		p.leaves = append(p.leaves, p.typed)
	}
	return p, nil
}

// ShredJSON converts one JSON document to a Variant and appends it as a
// row. A document that is not valid JSON, or that a schema without some
// value column cannot hold, leaves the row group as it was, and the
// error is a *RecordError. It is Builder.Append without an Envelope, so
// it fails for a schema with the envelope group.
func (s *VariantShredder) ShredJSON(json []byte) error {
	return s.b.Append(json, nil)
}

// Append fills the VARIANT part of a row from value, one JSON document,
// as ShredJSON does, without ending the row: it makes the shredder a
// Payload for a Builder. On error the row group is as before and the
// error is a *RecordError.
func (s *VariantShredder) Append(value []byte) error {
	s.undo.begin(s.g)
	if err := s.fill(value, &s.undo); err != nil {
		s.undo.rollback(s.g)
		return err
	}
	return nil
}

// fill appends the Variant of the JSON document json; on error the caller
// undoes what was appended.
func (s *VariantShredder) fill(json []byte, _ *recordUndo) error {
	if s.direct != nil {
		ok := s.tryDirect(json)
		if s.direct.grown {
			defer s.trimRecord() // after the two-pass path, which may use the room
		}
		if ok {
			return nil
		}
	}
	if !s.twoPass && !s.root.shape.Typed() && s.root.value != nil {
		return s.fillValue(json)
	}
	var err error
	s.meta, s.val, err = s.enc.AppendJSON(s.meta[:0], s.val[:0], json)
	if err == nil {
		err = s.put(s.meta, s.val)
	}
	if cap(s.val) > maxKeptValue {
		s.val = nil // a huge record's: not kept for the next ones
	}
	if err != nil {
		return recordError(err)
	}
	return nil
}

// fillValue appends the Variant of json to an unshredded VARIANT: its
// value is encoded straight into the value column, which saves a copy of
// it (a huge record would otherwise be held twice more).
func (s *VariantShredder) fillValue(json []byte) error {
	c := s.root.value
	start := len(c.Bytes)
	var err error
	s.meta, c.Bytes, err = s.enc.AppendJSON(s.meta[:0], c.Bytes, json)
	if err != nil {
		c.Bytes = c.Bytes[:start]
		return recordError(err)
	}
	s.metadata.AppendBytes(0, s.meta)
	c.value(0)
	c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
	return nil
}

// maxKeptValue bounds the Variant buffer a shredder keeps between records.
const maxKeptValue = 4 << 20

// recordError wraps an error of the Variant encoder or of shredding: its
// message already says where the problem is.
func recordError(err error) *RecordError {
	e := &RecordError{Offset: -1, Err: err, bare: true}
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		e.Offset = se.Offset
	}
	return e
}

// ShredVariant appends the Variant (metadata, value) as a row. The bytes
// are validated first (variant.Validate), so a malformed Variant is
// rejected as a whole and never reaches a value column. It fails for a
// schema with the envelope group.
func (s *VariantShredder) ShredVariant(metadata, value []byte) error {
	if s.b.HasEnvelope() {
		return s.b.envelopeError(false)
	}
	if err := variant.Validate(metadata, value); err != nil {
		return err
	}
	if s.needMark {
		s.g.Mark(&s.mark)
	}
	if err := s.put(metadata, value); err != nil {
		if s.needMark {
			s.g.Rollback(&s.mark)
		}
		return err
	}
	s.g.EndRow()
	return nil
}

// put appends a valid Variant to the VARIANT columns, without ending the
// row. On error the caller undoes what was appended.
func (s *VariantShredder) put(metadata, value []byte) error {
	m, err := variant.ParseMetadata(metadata)
	if err != nil {
		return err
	}
	v, err := variant.NewWithMetadata(m, value)
	if err != nil {
		return err
	}
	s.metadata.AppendBytes(0, metadata)
	return s.write(s.root, v, 0)
}

// write appends the present value v to the pair p.
func (s *VariantShredder) write(p *variantPlan, v variant.Value, rep uint8) error {
	if !p.shape.Match(v) {
		if p.value == nil {
			return fmt.Errorf("variant field %s: a %v does not fit its typed_value and the schema has no value column", p.label(), v.Type())
		}
		p.value.AppendBytes(rep, v.Raw())
		p.nullTyped(rep, p.def)
		return nil
	}
	switch p.shape.Type {
	case variant.Object:
		var rest bool
		var err error
		p.residual, rest, err = p.shape.SplitObject(p.residual[:0], v, p.found)
		if err != nil {
			return fmt.Errorf("variant field %s: %w", p.label(), err)
		}
		if rest {
			if p.value == nil {
				return fmt.Errorf("variant field %s: the object has fields beyond the typed ones and the schema has no value column", p.label())
			}
			p.value.AppendBytes(rep, p.residual)
		} else if p.value != nil {
			p.value.Null(rep, p.def)
		}
		for i, f := range p.fields {
			if fv := p.found[i]; fv.Raw() != nil {
				if err := s.write(f, fv, rep); err != nil {
					return err
				}
			} else {
				f.nulls(rep, p.def+1)
			}
		}
		return nil
	case variant.Array:
		if p.value != nil {
			p.value.Null(rep, p.def)
		}
		n := v.Len()
		if n == 0 {
			p.elem.nulls(rep, p.def+1)
			return nil
		}
		for i := range n {
			ev, err := v.Index(i)
			if err != nil {
				return fmt.Errorf("variant field %s: %w", p.label(), err)
			}
			if err := s.write(p.elem, ev, rep); err != nil {
				return err
			}
			rep = p.rep
		}
		return nil
	}
	if p.value != nil {
		p.value.Null(rep, p.def)
	}
	sc, _ := p.shape.ScalarOf(v)
	p.appendScalar(rep, &sc)
	return nil
}

func (p *variantPlan) appendScalar(rep uint8, sc *variant.Scalar) {
	c := p.typed
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		c.AppendBool(rep, sc.Bool)
	case meta.TypeInt32:
		if sc.Type == variant.Decimal4 {
			c.AppendInt32(rep, int32(sc.Decimal.Lo))
		} else {
			c.AppendInt32(rep, int32(sc.Int))
		}
	case meta.TypeInt64:
		if sc.Type == variant.Decimal8 {
			c.AppendInt64(rep, int64(sc.Decimal.Lo))
		} else {
			c.AppendInt64(rep, sc.Int)
		}
	case meta.TypeFloat:
		c.AppendFloat(rep, float32(sc.Double))
	case meta.TypeDouble:
		c.AppendDouble(rep, sc.Double)
	case meta.TypeFixedLenByteArray, meta.TypeByteArray:
		switch sc.Type {
		case variant.UUID:
			c.AppendBytes(rep, sc.UUID[:])
		case variant.Decimal16:
			binary.BigEndian.PutUint64(p.big[:8], uint64(sc.Decimal.Hi))
			binary.BigEndian.PutUint64(p.big[8:], sc.Decimal.Lo)
			c.AppendBytes(rep, p.big[:])
		default:
			c.AppendBytes(rep, sc.Bytes)
		}
	}
}

// nulls writes the pair as missing: every column under it null at def.
func (p *variantPlan) nulls(rep, def uint8) {
	for _, c := range p.leaves {
		c.Null(rep, def)
	}
}

// nullTyped writes a null typed_value under a present pair.
func (p *variantPlan) nullTyped(rep, def uint8) {
	leaves := p.leaves
	if p.value != nil {
		leaves = leaves[1:]
	}
	for _, c := range leaves {
		c.Null(rep, def)
	}
}

func (p *variantPlan) label() string { return p.path }

// sameRep appends the leaves of p that take one level slot per element
// of the list p is the element of: all but those of the lists inside it.
func (p *variantPlan) sameRep(out []*Column) []*Column {
	if p.value != nil {
		out = append(out, p.value)
	}
	if p.typed != nil {
		out = append(out, p.typed)
	}
	for _, f := range p.fields {
		out = f.sameRep(out)
	}
	// Not p.elem's: the elements of a list inside repeat on their own.
	return out
}
