package schema

import (
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/meta"
)

// Repetition says how often a field occurs in its parent: exactly once,
// at most once, or any number of times.
type Repetition int8

// Repetitions, numbered as in parquet.thrift.
const (
	Required Repetition = iota
	Optional
	Repeated
)

// String returns "required", "optional" or "repeated".
func (r Repetition) String() string {
	switch r {
	case Required:
		return "required"
	case Optional:
		return "optional"
	case Repeated:
		return "repeated"
	}
	return "Repetition(" + strconv.Itoa(int(r)) + ")"
}

// Node is a field of a schema: a group of fields, or a leaf that holds
// values of a physical type. Build nodes with Leaf, FixedLeaf and Group and
// hand them to New, which copies them; a Node reached through a Schema is
// shared and must not be modified.
type Node struct {
	Name       string
	Repetition Repetition
	FieldID    int32 // meaningful only when HasFieldID
	HasFieldID bool

	Physical meta.Type // leaves only
	Length   int32     // FIXED_LEN_BYTE_ARRAY width in bytes
	Logical  Logical

	// Legacy is an annotation that exists only as a ConvertedType and has no
	// Logical counterpart: MAP_KEY_VALUE, as written by old writers.
	Legacy    meta.ConvertedType
	HasLegacy bool

	Fields []*Node // children of a group, in order

	// Derived when the node enters a Schema.
	Path   []string // names from the schema's top-level field down to this node
	MaxDef int      // optional and repeated nodes on the path, this one included
	MaxRep int      // repeated nodes on the path, this one included
	Column int      // index among the leaves in depth-first order; -1 for groups

	group  bool
	parent *Node
}

// Leaf returns a leaf of the given physical type. Use FixedLeaf for
// FIXED_LEN_BYTE_ARRAY.
func Leaf(name string, rep Repetition, physical meta.Type, logical Logical) *Node {
	return &Node{Name: name, Repetition: rep, Physical: physical, Logical: logical}
}

// FixedLeaf returns a FIXED_LEN_BYTE_ARRAY leaf of length bytes per value.
func FixedLeaf(name string, rep Repetition, length int32, logical Logical) *Node {
	return &Node{Name: name, Repetition: rep, Physical: meta.TypeFixedLenByteArray, Length: length, Logical: logical}
}

// Group returns a group of the given fields.
func Group(name string, rep Repetition, logical Logical, fields ...*Node) *Node {
	return &Node{Name: name, Repetition: rep, Logical: logical, Fields: fields, group: true}
}

// WithFieldID returns a copy of n carrying the field id, for chaining with
// the builders: schema.Leaf(...).WithFieldID(7).
func (n *Node) WithFieldID(id int32) *Node {
	c := *n
	c.FieldID, c.HasFieldID = id, true
	return &c
}

// IsLeaf reports whether n holds values rather than fields.
func (n *Node) IsLeaf() bool { return !n.isGroup() }

func (n *Node) isGroup() bool { return n.group || len(n.Fields) > 0 }

// PathString returns the dotted path of n, e.g. "tags.list.element".
func (n *Node) PathString() string { return strings.Join(n.Path, ".") }

// Parent returns the group that contains n, or nil for a top-level field.
func (n *Node) Parent() *Node { return n.parent }

// Field returns the child group field called name, or nil.
func (n *Node) Field(name string) *Node {
	for _, f := range n.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// ListElement returns the node that holds one element of a LIST-annotated
// group, following the backward-compatibility rules of LogicalTypes.md: for
// the standard three-level shape it is the `element` field; for the legacy
// two-level shapes it is the repeated field itself. It returns nil when n is
// not a list.
func (n *Node) ListElement() *Node {
	if n.Logical.Kind != List || len(n.Fields) != 1 {
		return nil
	}
	rep := n.Fields[0]
	if rep.Repetition != Repeated {
		return nil
	}
	if !rep.isGroup() || len(rep.Fields) != 1 || rep.Fields[0].Repetition == Repeated ||
		rep.Name == "array" || rep.Name == n.Name+"_tuple" {
		return rep // rules 1 to 4: the repeated field is the element
	}
	return rep.Fields[0] // rule 5
}

// MapKeyValue returns the key and value fields of a MAP-annotated group (or
// a legacy MAP_KEY_VALUE one). The value is nil for a map without values.
// Both are nil when n is not a map. Keys and values are found by position,
// as LogicalTypes.md allows for misnamed fields.
func (n *Node) MapKeyValue() (key, value *Node) {
	isMap := n.Logical.Kind == Map || (n.HasLegacy && n.Legacy == meta.ConvertedMapKeyValue)
	if !isMap || len(n.Fields) != 1 {
		return nil, nil
	}
	kv := n.Fields[0]
	if kv.Repetition != Repeated || !kv.isGroup() || len(kv.Fields) == 0 || len(kv.Fields) > 2 {
		return nil, nil
	}
	key = kv.Fields[0]
	if len(kv.Fields) == 2 {
		value = kv.Fields[1]
	}
	return key, value
}

// equal reports whether n and o describe the same field, recursively.
func (n *Node) equal(o *Node) bool { return n.same(o, true) }

// SameShape reports whether n and o are the same field, recursively, but
// for their field ids and legacy converted types: names, repetition,
// physical types and logical annotations. A decoder compiled for one can
// fill the other, whose field ids a table may have assigned.
func (n *Node) SameShape(o *Node) bool { return n.same(o, false) }

// same is equal, or with strict false SameShape.
func (n *Node) same(o *Node, strict bool) bool {
	a, b := n, o
	if a.Name != b.Name || a.Repetition != b.Repetition || a.Logical != b.Logical ||
		a.isGroup() != b.isGroup() || len(a.Fields) != len(b.Fields) {
		return false
	}
	if strict && (a.HasFieldID != b.HasFieldID || (a.HasFieldID && a.FieldID != b.FieldID) ||
		a.HasLegacy != b.HasLegacy || (a.HasLegacy && a.Legacy != b.Legacy)) {
		return false
	}
	if !a.isGroup() && (a.Physical != b.Physical || a.Length != b.Length) {
		return false
	}
	for i := range a.Fields {
		if !a.Fields[i].same(b.Fields[i], strict) {
			return false
		}
	}
	return true
}
