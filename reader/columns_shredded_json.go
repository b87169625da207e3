package reader

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// The JSON of a shredded VARIANT is written straight from its columns,
// without rebuilding the Variant first: objects, arrays, strings, booleans,
// integers and floating point are rendered here exactly as the variant
// package renders them, and the rarer typed values (decimals of 16 bytes,
// dates, times, timestamps, binary, UUIDs) go through a one-value Builder.
// Residual values (the value column) are rendered by the variant package.
// An object's fields come out in name order, as a Variant object holds
// them: the shredded fields (in the order sortFields gives) merged with
// the residual ones. What the rebuild refuses is refused here too: a
// value set beside a typed primitive or array, a residual that is not an
// object beside a typed object, a name both shredded and residual, and
// invalid UTF-8 (as an ErrCorrupt from the caller).
//
// One difference remains, on Variants no writer should produce: a
// residual value nested within a shredded object is checked for depth from
// where it starts, not from the top of the Variant.

// shredJSON is the scratch of the direct rendering, reused across records.
type shredJSON struct {
	b        variant.Builder // for the rarer typed values
	meta     []byte
	val      []byte
	residual []residualField
}

// residualField is a field of an object's residual value.
type residualField struct {
	name  []byte
	value variant.Value
}

// sortFields orders the fields of typed objects by name, as they appear
// in a Variant object, once.
func (t *vtyped) sortFields() {
	if t == nil {
		return
	}
	slices.SortStableFunc(t.fields, func(a, b vfield) int { return strings.Compare(a.name, b.name) })
	for _, f := range t.fields {
		f.pair.typed.sortFields()
	}
	if t.elem != nil {
		t.elem.typed.sortFields()
	}
}

// pairJSON appends the JSON of pair p and consumes its entries, as
// shreddedPair builds it. It reports false, appending nothing, when both
// columns are null: a missing value.
func (s *shredJSON) pairJSON(dst []byte, m variant.Metadata, p *vpair) ([]byte, bool, error) {
	hasValue := p.value != nil && p.value.HasValue()
	t := p.typed
	if t == nil || t.first.Def() < t.def {
		if hasValue {
			rv, err := variant.NewWithMetadata(m, p.value.Bytes())
			if err != nil {
				return dst, false, err
			}
			if dst, err = rv.AppendJSON(dst); err != nil {
				return dst, false, err
			}
		}
		return dst, hasValue, advanceAll(p.leaves)
	}
	switch {
	case t.leaf != nil:
		if hasValue {
			return dst, false, fmt.Errorf("%s: both value and typed_value are set", t.node.PathString())
		}
		dst, err := s.typedJSON(dst, t)
		if err != nil {
			return dst, false, err
		}
		return dst, true, advanceAll(p.leaves)
	case t.elem != nil:
		if hasValue {
			return dst, false, fmt.Errorf("%s: both value and an array typed_value are set", t.node.PathString())
		}
		if p.value != nil {
			if err := p.value.Advance(); err != nil {
				return dst, false, err
			}
		}
		dst, err := s.arrayJSON(dst, m, t)
		return dst, true, err
	}
	dst, err := s.objectJSON(dst, m, p, hasValue)
	return dst, true, err
}

// objectJSON appends a present typed object with its residual fields.
func (s *shredJSON) objectJSON(dst []byte, m variant.Metadata, p *vpair, hasValue bool) ([]byte, error) {
	t := p.typed
	// The residual fields, in name order (a valid Variant stores them so;
	// the rebuild would sort any other order, and so does this).
	base := len(s.residual)
	defer func() { s.residual = s.residual[:base] }()
	if hasValue {
		rv, err := variant.NewWithMetadata(m, p.value.Bytes())
		if err != nil {
			return dst, err
		}
		if rv.Type() != variant.Object {
			return dst, fmt.Errorf("%s: typed_value is an object but value is %v", t.node.PathString(), rv.Type())
		}
		for i := range rv.Len() {
			name, fv, err := rv.Field(i)
			if err != nil {
				return dst, err
			}
			if !utf8.Valid(name) {
				return dst, fmt.Errorf("%s: residual field name %q is not valid UTF-8", t.node.PathString(), name)
			}
			s.residual = append(s.residual, residualField{name: name, value: fv})
		}
		res := s.residual[base:]
		less := func(a, b residualField) int { return bytes.Compare(a.name, b.name) }
		if !slices.IsSortedFunc(res, less) {
			slices.SortStableFunc(res, less)
		}
		for i := 1; i < len(res); i++ {
			if bytes.Equal(res[i-1].name, res[i].name) {
				return dst, fmt.Errorf("%s: residual field %q twice", t.node.PathString(), res[i].name)
			}
		}
	}
	dst = append(dst, '{')
	n := 0 // fields written
	r := base
	for i := range t.fields {
		f := &t.fields[i]
		if !pairPresent(f.pair) {
			if err := advanceAll(f.pair.leaves); err != nil {
				return dst, err
			}
			continue
		}
		// The residual fields that come before this one.
		for ; r < len(s.residual) && string(s.residual[r].name) < f.name; r++ {
			var err error
			if dst, err = s.residualJSON(dst, n, &s.residual[r]); err != nil {
				return dst, err
			}
			n++
		}
		if r < len(s.residual) && string(s.residual[r].name) == f.name {
			return dst, fmt.Errorf("%s: field %s is both shredded and in value", t.node.PathString(), f.name)
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = jsontext.AppendString(dst, f.name)
		dst = append(dst, ':')
		var err error
		if dst, _, err = s.pairJSON(dst, m, f.pair); err != nil {
			return dst, fmt.Errorf("field %s: %w", f.name, err)
		}
		n++
	}
	for ; r < len(s.residual); r++ {
		var err error
		if dst, err = s.residualJSON(dst, n, &s.residual[r]); err != nil {
			return dst, err
		}
		n++
	}
	if p.value != nil {
		if err := p.value.Advance(); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// residualJSON appends a residual field, after n fields already written.
func (s *shredJSON) residualJSON(dst []byte, n int, f *residualField) ([]byte, error) {
	if n > 0 {
		dst = append(dst, ',')
	}
	dst = jsontext.AppendStringBytes(dst, f.name)
	dst = append(dst, ':')
	out, err := f.value.AppendJSON(dst)
	if err != nil {
		return dst, fmt.Errorf("field %q: %w", f.name, err)
	}
	return out, nil
}

// arrayJSON appends a present typed_value LIST and consumes its entries.
func (s *shredJSON) arrayJSON(dst []byte, m variant.Metadata, t *vtyped) ([]byte, error) {
	dst = append(dst, '[')
	if t.first.Def() < t.rdef {
		return append(dst, ']'), advanceAll(t.leaves)
	}
	e := t.elem
	for i := 0; ; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e.leaves[0].Def() < t.elemDef {
			dst = append(dst, "null"...)
			if err := advanceAll(e.leaves); err != nil {
				return dst, err
			}
		} else {
			var ok bool
			var err error
			if dst, ok, err = s.pairJSON(dst, m, e); err != nil {
				return dst, err
			}
			if !ok {
				dst = append(dst, "null"...) // elements cannot be missing; read one as null
			}
		}
		if t.first.EOF() || t.first.Rep() != t.rrep {
			break
		}
	}
	return append(dst, ']'), nil
}

// typedJSON appends the JSON of a present typed primitive, as the variant
// package renders the value writeTyped would build.
func (s *shredJSON) typedJSON(dst []byte, t *vtyped) ([]byte, error) {
	c := t.leaf
	n := t.node
	l := n.Logical
	switch n.Physical {
	case meta.TypeBoolean:
		if c.Value().Bool() {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case meta.TypeInt32:
		if l.Kind == schema.None || l.Kind == schema.Int && l.BitWidth == 32 {
			return strconv.AppendInt(dst, int64(c.Value().Int32()), 10), nil
		}
	case meta.TypeInt64:
		if l.Kind == schema.None || l.Kind == schema.Int && l.BitWidth == 64 {
			return strconv.AppendInt(dst, c.Value().Int64(), 10), nil
		}
		if l.Kind == schema.Decimal && l.Scale >= 0 && l.Scale <= 38 {
			if x := c.Value().Int64(); x > -1e18 && x < 1e18 {
				return variant.DecimalFromInt64(x, uint8(l.Scale)).AppendText(dst), nil
			}
		}
	case meta.TypeDouble:
		return jsontext.AppendFloat(dst, c.Value().Double(), 64), nil
	case meta.TypeFloat:
		return jsontext.AppendFloat(dst, float64(c.Value().Float()), 32), nil
	case meta.TypeByteArray:
		if t.str {
			v := c.Bytes()
			if !utf8.Valid(v) {
				return dst, fmt.Errorf("%s: string is not valid UTF-8", n.PathString())
			}
			return jsontext.AppendStringBytes(dst, v), nil
		}
	}
	if n.Physical == meta.TypeInt32 && l.Kind == schema.Decimal && l.Scale >= 0 && l.Scale <= 38 {
		if x := c.Value().Int32(); x > -1e9 && x < 1e9 {
			return variant.DecimalFromInt64(int64(x), uint8(l.Scale)).AppendText(dst), nil
		}
	}
	// The rest: build the one value and render it.
	s.b.Reset()
	if err := writeTyped(&s.b, c.Value()); err != nil {
		return dst, err
	}
	var err error
	if s.meta, s.val, err = s.b.Finish(s.meta[:0], s.val[:0]); err != nil {
		return dst, err
	}
	return variant.AppendJSON(dst, s.meta, s.val)
}
