// Package schema is the Parquet schema tree: groups and leaves with their
// repetition, physical and logical types and field ids, the column paths and
// maximum definition and repetition levels derived from them, the conversion
// to and from the flattened []meta.SchemaElement of a file footer, and the
// `message m { ... }` text syntax of parquet-java, parsed and printed.
//
// A Schema is built once, by New, Parse or FromElements, validated against
// LogicalTypes.md, and immutable afterwards.
package schema

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxLevel is the highest definition or repetition level a schema may
// produce: levels are stored as uint8 downstream.
const MaxLevel = 255

// maxDepth bounds the nesting of groups. Required groups add no level, so
// without it a hostile footer or text could nest deep enough to exhaust the
// stack of the recursive builders; no real schema comes near.
const maxDepth = 1000

// Schema is a validated Parquet schema: a named root group of fields.
type Schema struct {
	name   string
	fields []*Node
	leaves []*Node
	byPath map[string]*Node // dotted path of every leaf
}

// New builds a schema named name from copies of fields, validates it
// against LogicalTypes.md, and computes paths, levels and column indexes.
// LIST and MAP groups must have the standard three-level shapes; Parse and
// FromElements also accept the legacy shapes that old files use.
func New(name string, fields ...*Node) (*Schema, error) {
	return build(name, fields, true)
}

// build copies and validates the tree. strict asks for the shapes a writer
// must produce; otherwise the backward-compatible shapes a reader must
// accept pass too.
func build(name string, fields []*Node, strict bool) (*Schema, error) {
	if strict && name == "" {
		return nil, fmt.Errorf("schema: empty schema name")
	}
	b := builder{strict: strict, s: &Schema{name: name, byPath: make(map[string]*Node)}}
	var err error
	b.s.fields, err = b.copyFields(nil, fields, 0)
	if err != nil {
		return nil, err
	}
	return b.s, nil
}

type builder struct {
	strict bool
	s      *Schema
}

func (b *builder) copyFields(parent *Node, src []*Node, depth int) ([]*Node, error) {
	if depth >= maxDepth {
		return nil, fmt.Errorf("schema: %s: groups nested more than %d deep", parent.PathString(), maxDepth)
	}
	dst := make([]*Node, len(src))
	for i, f := range src {
		if f == nil {
			return nil, fmt.Errorf("schema: %s: nil field at index %d", pathOf(parent), i)
		}
		// Siblings need distinct names, in a schema written and in one read:
		// two columns of one path could not be told apart by any reader.
		for _, g := range src[:i] {
			if g != nil && g.Name == f.Name {
				return nil, fmt.Errorf("schema: %s: duplicate field name %s", pathOf(parent), quoteName(f.Name))
			}
		}
		c, err := b.copyNode(parent, f, depth)
		if err != nil {
			return nil, err
		}
		dst[i] = c
	}
	return dst, nil
}

// pathOf names a group in errors; the root is "message".
func pathOf(n *Node) string {
	if n == nil {
		return "message"
	}
	return "field " + n.PathString()
}

func (b *builder) copyNode(parent, src *Node, depth int) (*Node, error) {
	n := &Node{
		Name:       src.Name,
		Repetition: src.Repetition,
		FieldID:    src.FieldID,
		HasFieldID: src.HasFieldID,
		Logical:    src.Logical.normalize(),
		Legacy:     src.Legacy,
		HasLegacy:  src.HasLegacy,
		Column:     -1,
		group:      src.isGroup(),
		parent:     parent,
	}
	if !n.HasFieldID {
		n.FieldID = 0
	}
	if !n.HasLegacy {
		n.Legacy = 0
	}
	if !n.group {
		n.Physical, n.Length = src.Physical, src.Length
	}
	var parentPath []string
	if parent != nil {
		parentPath = parent.Path
		n.MaxDef, n.MaxRep = parent.MaxDef, parent.MaxRep
	}
	n.Path = append(parentPath[:len(parentPath):len(parentPath)], n.Name)
	if b.strict && n.Name == "" {
		return nil, fmt.Errorf("schema: %s: a field has an empty name", pathOf(parent))
	}

	switch n.Repetition {
	case Required:
	case Optional:
		n.MaxDef++
	case Repeated:
		n.MaxDef++
		n.MaxRep++
	default:
		return nil, fmt.Errorf("schema: field %s: invalid repetition %d", n.PathString(), n.Repetition)
	}
	if n.MaxDef > MaxLevel {
		return nil, fmt.Errorf("schema: field %s: definition level %d exceeds %d", n.PathString(), n.MaxDef, MaxLevel)
	}
	if n.MaxRep > MaxLevel {
		return nil, fmt.Errorf("schema: field %s: repetition level %d exceeds %d", n.PathString(), n.MaxRep, MaxLevel)
	}

	if n.group {
		var err error
		if n.Fields, err = b.copyFields(n, src.Fields, depth+1); err != nil {
			return nil, err
		}
	} else {
		n.Column = len(b.s.leaves)
		b.s.leaves = append(b.s.leaves, n)
		if p := n.PathString(); b.s.byPath[p] == nil {
			b.s.byPath[p] = n
		}
	}
	if err := b.validate(n); err != nil {
		return nil, fmt.Errorf("schema: field %s: %w", n.PathString(), err)
	}
	return n, nil
}

// Name returns the name of the schema's root.
func (s *Schema) Name() string { return s.name }

// Fields returns the top-level fields. The slice must not be modified.
func (s *Schema) Fields() []*Node { return s.fields }

// Leaves returns the leaves in column order: Leaves()[i].Column == i. The
// slice must not be modified.
func (s *Schema) Leaves() []*Node { return s.leaves }

// Leaf returns the leaf at the dotted path, e.g. "tags.list.element", or nil
// if there is none. When names themselves contain dots and two leaves share
// a dotted path, it returns the first; use Lookup to be exact.
func (s *Schema) Leaf(path string) *Node { return s.byPath[path] }

// Lookup returns the node, group or leaf, reached by following the names
// in path from the top-level fields, or nil if there is none.
func (s *Schema) Lookup(path ...string) *Node {
	if len(path) == 0 {
		return nil
	}
	var n *Node
	fields := s.fields
	for _, name := range path {
		n = nil
		for _, f := range fields {
			if f.Name == name {
				n = f
				break
			}
		}
		if n == nil {
			return nil
		}
		fields = n.Fields
	}
	return n
}

// Equal reports whether s and o have the same name and the same tree:
// names, repetitions, types, annotations and field ids.
func (s *Schema) Equal(o *Schema) bool {
	if s.name != o.name || len(s.fields) != len(o.fields) {
		return false
	}
	for i := range s.fields {
		if !s.fields[i].equal(o.fields[i]) {
			return false
		}
	}
	return true
}

// String returns the schema in message syntax, one field per line; Parse
// reads it back to an equal schema.
func (s *Schema) String() string {
	return string(s.appendText(nil))
}

// quoteName quotes a field name for an error: printable UTF-8 as it is,
// control characters and invalid bytes escaped, and a name longer than 200
// bytes cut short, so that a hostile name stays one inert line.
func quoteName(s string) string {
	const most = 200
	if len(s) <= most {
		return strconv.Quote(s)
	}
	n := most
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strconv.Quote(s[:n]) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
