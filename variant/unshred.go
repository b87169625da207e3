package variant

import "fmt"

// Shredded is one value/typed_value pair of a shredded Variant, as a
// reader finds it in a row: the input of reconstruction
// (VariantShredding.md, "Reconstructing a Shredded Variant").
//
// Typed says what the typed_value column holds in this row: Invalid when
// it is null or absent; Object, with one entry in Fields per shredded
// field column; Array, with one entry in Elements per list element; any
// other type, with the value in Scalar.
type Shredded struct {
	Value    []byte // the value column: residual Variant value bytes, nil when null or absent
	Typed    Type
	Scalar   Scalar
	Fields   []ShreddedField
	Elements []Shredded
}

// ShreddedField is a shredded object field: its name (the Parquet group's
// name) and its own pair.
type ShreddedField struct {
	Name string
	Shredded
}

// Present reports whether the pair holds a value: a field whose value and
// typed_value are both null is missing from its object.
func (s *Shredded) Present() bool { return s.Value != nil || s.Typed != Invalid }

// Unshred rebuilds the Variant held by the top-level pair s, whose residual
// values refer to the metadata m, and appends its metadata and value to
// the given slices. A missing top-level value becomes the Variant null, as
// the spec requires where a value is required.
//
// Reconstruction follows the spec: a typed primitive or array must come
// with a null value; a typed object is merged with the residual object in
// value, which must then be an object (a residual field that repeats a
// shredded one is ignored: the typed column wins, as the spec asks of
// readers that choose to read such data); an array element that is
// missing becomes null. Every residual value is checked as it is copied.
func (b *Builder) Unshred(metadata, value []byte, m Metadata, s *Shredded) ([]byte, []byte, error) {
	b.Reset()
	if !s.Present() {
		b.Null()
	} else if err := b.unshred(m, s, 0); err != nil {
		b.Reset()
		return metadata, value, err
	}
	return b.Finish(metadata, value)
}

func (b *Builder) unshred(m Metadata, s *Shredded, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("variant: shredded value nested deeper than %d levels", MaxDepth)
	}
	switch s.Typed {
	case Invalid:
		v, err := NewWithMetadata(m, s.Value)
		if err != nil {
			return err
		}
		b.Value(v)
	case Object:
		b.BeginObject()
		for i := range s.Fields {
			f := &s.Fields[i]
			if !f.Present() {
				continue
			}
			b.Key(f.Name)
			if err := b.unshred(m, &f.Shredded, depth+1); err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		if s.Value != nil {
			if err := b.residualFields(m, s); err != nil {
				return err
			}
		}
		b.EndObject()
	case Array:
		if s.Value != nil {
			return fmt.Errorf("variant: shredded array with a non-null value")
		}
		b.BeginArray()
		for i := range s.Elements {
			e := &s.Elements[i]
			if !e.Present() {
				b.Null()
				continue
			}
			if err := b.unshred(m, e, depth+1); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		b.EndArray()
	default:
		if s.Value != nil {
			return fmt.Errorf("variant: shredded %v with a non-null value", s.Typed)
		}
		if s.Scalar.Type != s.Typed {
			return fmt.Errorf("variant: shredded %v holding a %v scalar", s.Typed, s.Scalar.Type)
		}
		b.Scalar(s.Scalar)
	}
	return b.err
}

// residualFields copies the fields of the residual object of a partially
// shredded object, leaving out names the typed fields already gave.
func (b *Builder) residualFields(m Metadata, s *Shredded) error {
	v, err := NewWithMetadata(m, s.Value)
	if err != nil {
		return fmt.Errorf("residual object: %w", err)
	}
	if v.Type() != Object {
		return fmt.Errorf("variant: shredded object with a residual %v", v.Type())
	}
	for i := range v.Len() {
		name, fv, err := v.Field(i)
		if err != nil {
			return fmt.Errorf("residual object: %w", err)
		}
		if s.shreddedField(name) {
			continue
		}
		b.Key(string(name))
		b.Value(fv)
	}
	return b.err
}

func (s *Shredded) shreddedField(name []byte) bool {
	for i := range s.Fields {
		if s.Fields[i].Present() && s.Fields[i].Name == string(name) {
			return true
		}
	}
	return false
}
