package avro

import (
	"fmt"
	"slices"
)

// Resolution says how data written with one Avro type is read as another,
// by the schema resolution rules of the Avro specification. Resolve builds
// it once per writer and reader schema; avrorow.Decoder compiles it.
//
// The writer type says what the bytes hold; the reader type what the
// values become. Where the writer has a union, Branches resolves each
// writer branch; where only the reader has one, ReaderBranch picks the
// branch the value lands in and Inner resolves the writer type onto it.
type Resolution struct {
	Writer *Type
	Reader *Type

	// Writer union: the resolution of each writer branch.
	Branches []*Resolution

	// Reader union, writer not a union: the reader branch the value takes,
	// and how the writer type is read as that branch.
	ReaderBranch int
	Inner        *Resolution

	// Record: one entry per writer field, in writer order; Reader is the
	// index of the reader field it fills, or -1 when the reader has no such
	// field (its value is skipped).
	Fields []FieldResolution
	// Record: the reader fields the writer lacks, filled with their default.
	Defaults []DefaultField

	Items  *Resolution // Array
	Values *Resolution // Map

	// Enum: the reader symbol index of each writer symbol index.
	Symbols []int
}

// FieldResolution is a writer field and the reader field it fills.
type FieldResolution struct {
	Writer     *Field
	Reader     int // index in the reader record's fields, or -1
	Resolution *Resolution
}

// DefaultField is a reader field absent from the writer's record.
type DefaultField struct {
	Reader int    // index in the reader record's fields
	Value  []byte // the default, Avro binary in the reader field's type
}

// ResolutionError is a writer schema that cannot be read with a reader
// schema. Path names the field, e.g. "payload.nested.level".
type ResolutionError struct {
	Path   string
	Reason string
}

func (e *ResolutionError) Error() string {
	if e.Path == "" {
		return "avro schema resolution: " + e.Reason
	}
	return "avro schema resolution: " + e.Path + ": " + e.Reason
}

// Resolve returns how records written with writer are read as reader. It
// fails, with a *ResolutionError, when some writer data could not be read:
// mismatched types without a promotion (int→long→float→double,
// string↔bytes), a reader field without a default that the writer lacks,
// a writer enum symbol the reader lacks without an enum default, a writer
// union branch that matches no reader type, different decimal precision or
// scale, or different time units. Names match by unqualified name or by
// the reader's aliases; fields by name or by the reader field's aliases.
//
// Resolve(s, s) is the identity; rowgroup uses it to read without a
// reader schema.
func Resolve(writer, reader *Schema) (*Resolution, error) {
	return resolve(writer.Root, reader.Root, "")
}

// ResolveTypes is Resolve for two types, such as a field's type read as
// itself.
func ResolveTypes(writer, reader *Type) (*Resolution, error) {
	return resolve(writer, reader, "")
}

func mismatch(path string, w, r *Type) error {
	return &ResolutionError{Path: path, Reason: fmt.Sprintf("writer type %s cannot be read as %s", describe(w), describe(r))}
}

func describe(t *Type) string {
	s := t.Kind.String()
	if t.Name != "" {
		s += " " + t.Name
	}
	if t.Logical != NoLogical {
		s += " (" + t.LogicalName + ")"
	}
	return s
}

func resolve(w, r *Type, path string) (*Resolution, error) {
	res := &Resolution{Writer: w, Reader: r}
	if w.Kind == Union {
		for i, b := range w.Branches {
			br, err := resolve(b, r, path)
			if err != nil {
				return nil, &ResolutionError{Path: path, Reason: fmt.Sprintf("writer union branch %d (%s): %v", i, describe(b), reason(err))}
			}
			res.Branches = append(res.Branches, br)
		}
		return res, nil
	}
	if r.Kind == Union {
		// The first reader branch that matches: the same type first, then
		// one the writer type promotes to.
		for pass := 0; pass < 2; pass++ {
			for i, b := range r.Branches {
				if pass == 0 && !sameKind(w, b) {
					continue
				}
				inner, err := resolve(w, b, path)
				if err != nil {
					continue
				}
				res.ReaderBranch, res.Inner = i, inner
				return res, nil
			}
		}
		return nil, &ResolutionError{Path: path, Reason: fmt.Sprintf("writer type %s matches no branch of the reader's union", describe(w))}
	}
	if err := checkLogical(w, r, path); err != nil {
		return nil, err
	}
	switch {
	case w.Kind == r.Kind:
	case w.Kind == Int && (r.Kind == Long || r.Kind == Float || r.Kind == Double),
		w.Kind == Long && (r.Kind == Float || r.Kind == Double),
		w.Kind == Float && r.Kind == Double,
		w.Kind == String && r.Kind == Bytes,
		w.Kind == Bytes && r.Kind == String:
		return res, nil
	default:
		return nil, mismatch(path, w, r)
	}
	switch w.Kind {
	case Record:
		if !namesMatch(w, r) {
			return nil, mismatch(path, w, r)
		}
		return resolveRecord(res, w, r, path)
	case Enum:
		if !namesMatch(w, r) {
			return nil, mismatch(path, w, r)
		}
		def := -1
		if r.HasDefault {
			def = slices.Index(r.Symbols, r.EnumDefault)
		}
		for _, s := range w.Symbols {
			i := slices.Index(r.Symbols, s)
			if i < 0 {
				i = def
			}
			if i < 0 {
				return nil, &ResolutionError{Path: path, Reason: fmt.Sprintf("writer enum symbol %q is not a symbol of reader enum %s, which has no default", s, r.Name)}
			}
			res.Symbols = append(res.Symbols, i)
		}
	case Fixed:
		if !namesMatch(w, r) || w.Size != r.Size {
			return nil, mismatch(path, w, r)
		}
	case Array:
		items, err := resolve(w.Items, r.Items, path+"[]")
		if err != nil {
			return nil, err
		}
		res.Items = items
	case Map:
		values, err := resolve(w.Values, r.Values, path+"{}")
		if err != nil {
			return nil, err
		}
		res.Values = values
	}
	return res, nil
}

func reason(err error) string {
	if re, ok := err.(*ResolutionError); ok {
		if re.Path != "" {
			return re.Path + ": " + re.Reason
		}
		return re.Reason
	}
	return err.Error()
}

// sameKind reports whether w and b are the same type, for picking a reader
// union branch before trying promotions.
func sameKind(w, b *Type) bool {
	if w.Kind != b.Kind {
		return false
	}
	switch w.Kind {
	case Record, Enum, Fixed:
		return namesMatch(w, b)
	}
	return true
}

// namesMatch: the unqualified names are equal, or a reader alias is the
// writer's name.
func namesMatch(w, r *Type) bool {
	if w.ShortName() == r.ShortName() || w.Name == r.Name {
		return true
	}
	for _, a := range r.Aliases {
		if a == w.Name || shortOf(a) == w.ShortName() {
			return true
		}
	}
	return false
}

func shortOf(full string) string {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '.' {
			return full[i+1:]
		}
	}
	return full
}

// checkLogical rejects reading one logical type as an incompatible one,
// where reading the underlying values unchanged would change their
// meaning: decimals of another precision or scale, times of another unit.
func checkLogical(w, r *Type, path string) error {
	if w.Logical == r.Logical || w.Logical == NoLogical || r.Logical == NoLogical {
		if w.Logical == Decimal && r.Logical == Decimal && (w.Precision != r.Precision || w.Scale != r.Scale) {
			return &ResolutionError{Path: path, Reason: fmt.Sprintf("writer decimal(%d,%d) cannot be read as decimal(%d,%d)", w.Precision, w.Scale, r.Precision, r.Scale)}
		}
		return nil
	}
	if timeLike(w.Logical) && timeLike(r.Logical) {
		return &ResolutionError{Path: path, Reason: fmt.Sprintf("writer %s cannot be read as %s", w.LogicalName, r.LogicalName)}
	}
	if w.Logical == Decimal || r.Logical == Decimal {
		return &ResolutionError{Path: path, Reason: fmt.Sprintf("writer %s cannot be read as %s", describe(w), describe(r))}
	}
	return nil
}

func timeLike(l LogicalKind) bool {
	return l >= Date && l <= LocalTimestampNanos
}

func resolveRecord(res *Resolution, w, r *Type, path string) (*Resolution, error) {
	used := make([]bool, len(r.Fields))
	for _, wf := range w.Fields {
		ri := -1
		for i, rf := range r.Fields {
			if rf.Name == wf.Name {
				ri = i
				break
			}
		}
		if ri < 0 {
			for i, rf := range r.Fields {
				if slices.Contains(rf.Aliases, wf.Name) {
					ri = i
					break
				}
			}
		}
		fr := FieldResolution{Writer: wf, Reader: ri}
		if ri >= 0 {
			if used[ri] {
				return nil, &ResolutionError{Path: joinPath(path, wf.Name), Reason: fmt.Sprintf("two writer fields fill reader field %s", r.Fields[ri].Name)}
			}
			used[ri] = true
			inner, err := resolve(wf.Type, r.Fields[ri].Type, joinPath(path, r.Fields[ri].Name))
			if err != nil {
				return nil, err
			}
			fr.Resolution = inner
		}
		res.Fields = append(res.Fields, fr)
	}
	for i, rf := range r.Fields {
		if used[i] {
			continue
		}
		if !rf.HasDefault {
			return nil, &ResolutionError{Path: joinPath(path, rf.Name), Reason: "the reader's field is not in the writer's record and has no default"}
		}
		v, err := EncodeDefault(rf.Type, rf.Default)
		if err != nil {
			return nil, &ResolutionError{Path: joinPath(path, rf.Name), Reason: err.Error()}
		}
		res.Defaults = append(res.Defaults, DefaultField{Reader: i, Value: v})
	}
	return res, nil
}
