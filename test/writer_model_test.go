package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// node is the test's own description of a schema field: it prints the
// message syntax, generates JSON for it, and walks the values every reader
// returns. The test never asks pqsink's schema package what a column is.
type node struct {
	name     string
	rep      string // required, optional, repeated
	leaf     *leafType
	logical  string // "", LIST or MAP (on groups)
	children []*node
	// gen, when set, makes the leaf's value from the row number instead of
	// leaf.gen (the columns built to force dictionary fallback).
	gen func(r *rand.Rand, row int) any
}

func (n *node) isLeaf() bool { return n.leaf != nil }

// path is the dotted column path of a leaf under parent path p.
func (n *node) path(p string) string {
	if p == "" {
		return n.name
	}
	return p + "." + n.name
}

// format appends the message syntax of n.
func (n *node) format(b *strings.Builder, indent string) {
	if n.isLeaf() {
		fmt.Fprintf(b, "%s%s %s;\n", indent, n.rep, fmt.Sprintf(n.leaf.decl, n.name))
		return
	}
	ann := ""
	if n.logical != "" {
		ann = " (" + n.logical + ")"
	}
	fmt.Fprintf(b, "%s%s group %s%s {\n", indent, n.rep, n.name, ann)
	for _, c := range n.children {
		c.format(b, indent+"  ")
	}
	fmt.Fprintf(b, "%s}\n", indent)
}

// leaves calls fn for every leaf with its dotted path, in column order.
func (n *node) leaves(p string, fn func(path string, leaf *node)) {
	p = n.path(p)
	if n.isLeaf() {
		fn(p, n)
		return
	}
	for _, c := range n.children {
		c.leaves(p, fn)
	}
}

func leafNode(name, rep string, t *leafType) *node { return &node{name: name, rep: rep, leaf: t} }

func group(name, rep string, children ...*node) *node {
	return &node{name: name, rep: rep, children: children}
}

// listOf is the standard three-level LIST.
func listOf(name, rep string, elem *node) *node {
	elem.name = "element"
	return &node{name: name, rep: rep, logical: "LIST", children: []*node{group("list", "repeated", elem)}}
}

// mapOf is the standard MAP with a key_value group.
func mapOf(name, rep string, key, value *node) *node {
	key.name, key.rep = "key", "required"
	kv := group("key_value", "repeated", key)
	if value != nil {
		value.name = "value"
		kv.children = append(kv.children, value)
	}
	return &node{name: name, rep: rep, logical: "MAP", children: []*node{kv}}
}

// fileSchema is a message and its fields.
type fileSchema struct {
	fields []*node
}

func (s *fileSchema) String() string {
	var b strings.Builder
	b.WriteString("message matrix {\n")
	for _, f := range s.fields {
		f.format(&b, "  ")
	}
	b.WriteString("}\n")
	return b.String()
}

// leafPaths returns every column path, in column order, with its node.
func (s *fileSchema) leafPaths() (paths []string, leaves []*node) {
	for _, f := range s.fields {
		f.leaves("", func(p string, n *node) {
			paths = append(paths, p)
			leaves = append(leaves, n)
		})
	}
	return paths, leaves
}

// Shapes of the matrix.
const (
	shapeRequired = "req"
	shapeOptional = "opt"
	shapeRepeated = "rep" // bare repeated field, no LIST annotation
	shapeList     = "lst"
	shapeMap      = "map"
)

var allShapes = []string{shapeRequired, shapeOptional, shapeRepeated, shapeList, shapeMap}

// shaped returns the field of leaf type t in the given shape.
func shaped(shape string, t *leafType) *node {
	name := shape + "_" + t.name
	switch shape {
	case shapeRequired:
		return leafNode(name, "required", t)
	case shapeOptional:
		return leafNode(name, "optional", t)
	case shapeRepeated:
		return leafNode(name, "repeated", t)
	case shapeList:
		return listOf(name, "optional", leafNode("", "optional", t))
	case shapeMap:
		return mapOf(name, "optional", leafNode("", "", typeNamed("str")), leafNode("", "optional", t))
	}
	panic("unknown shape " + shape)
}

var typesByName = func() map[string]*leafType {
	m := map[string]*leafType{}
	for _, t := range leafTypes() {
		m[t.name] = t
	}
	return m
}()

func typeNamed(name string) *leafType {
	t := typesByName[name]
	if t == nil {
		panic("no leaf type " + name)
	}
	return t
}

// matrixSchema builds the schema of the matrix: the row number, every leaf
// type in the given shapes, maps with non-string keys, a group in a list in
// a map, a struct with a nested repeated field, and two columns built to
// make a small dictionary overflow.
func matrixSchema(types []*leafType, shapes []string) *fileSchema {
	s := &fileSchema{}
	s.fields = append(s.fields, leafNode("row", "required", typeNamed("i64")))
	for _, t := range types {
		if t.kind == "BSON" {
			continue // DuckDB cannot open a file with BSON: see bsonCase
		}
		for _, sh := range shapes {
			s.fields = append(s.fields, shaped(sh, t))
		}
	}
	s.fields = append(s.fields,
		mapOf("map_i64key", "optional", leafNode("", "", typeNamed("i64")), leafNode("", "required", typeNamed("str"))),
		mapOf("map_datekey", "optional", leafNode("", "", typeNamed("date")), leafNode("", "optional", typeNamed("f64"))),
		mapOf("deep", "optional", leafNode("", "", typeNamed("str")),
			listOf("", "optional", group("", "required",
				leafNode("a", "required", typeNamed("i64")),
				leafNode("b", "optional", typeNamed("str")),
				group("inner", "repeated",
					leafNode("d", "optional", typeNamed("f64")),
					leafNode("e", "required", typeNamed("bool"))),
				group("s", "optional", leafNode("x", "optional", typeNamed("date"))),
			))),
		group("rec", "required",
			leafNode("id", "required", typeNamed("i64")),
			group("sub", "optional",
				leafNode("name", "optional", typeNamed("str")),
				leafNode("nums", "repeated", typeNamed("i32")))),
		&node{name: "fb_str", rep: "required", leaf: typeNamed("str"), gen: fallbackString},
		&node{name: "fb_i64", rep: "required", leaf: typeNamed("i64"), gen: fallbackInt},
	)
	return s
}

// In every run of fallbackPeriod rows, the first fallbackRows of the
// fallback columns repeat a few values, so that a dictionary pays on a
// chunk's first page when a row group starts there; every later value is
// new, so that a small dictionary overflows in the same chunk.
const (
	fallbackRows   = 40
	fallbackPeriod = 120
)

func fallbackString(_ *rand.Rand, row int) any {
	if row%fallbackPeriod < fallbackRows {
		return fmt.Sprintf("common-%d", row%3)
	}
	return fmt.Sprintf("unique-%06d-%s", row, strings.Repeat("u", row%17))
}

func fallbackInt(_ *rand.Rand, row int) any {
	if row%fallbackPeriod < fallbackRows {
		return json.Number(strconv.Itoa(row % 3))
	}
	return json.Number(strconv.FormatInt(int64(row)*1_000_003, 10))
}

// member is one member of a JSON object, kept in order: MAP entries are
// written in the order generated and readers must keep it.
type member struct {
	key   string
	value any
}

// object is a JSON object that marshals its members in order.
type object []member

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// absent marks a member left out of its object.
type absentValue struct{}

var absent = absentValue{}

// genRecord makes row number row of the input.
func genRecord(s *fileSchema, r *rand.Rand, row int) object {
	var o object
	for _, f := range s.fields {
		if f.name == "row" {
			o = append(o, member{"row", row})
			continue
		}
		if v := genValue(f, r, row); v != absent {
			o = append(o, member{f.name, v})
		}
	}
	return o
}

// genValue makes the JSON value of field n: nulls, absent members, empty
// and null lists and maps, and null elements all occur.
func genValue(n *node, r *rand.Rand, row int) any {
	if n.rep == "optional" {
		switch r.IntN(10) {
		case 0:
			return nil
		case 1:
			return absent
		}
	}
	if n.rep == "repeated" {
		switch r.IntN(8) {
		case 0:
			return absent
		case 1:
			return nil // a null repeated field is an empty one
		}
		elems := []any{}
		for range r.IntN(4) {
			elems = append(elems, genSingle(n, r, row))
		}
		return elems
	}
	return genSingle(n, r, row)
}

// genSingle makes one value of n, ignoring its repetition.
func genSingle(n *node, r *rand.Rand, row int) any {
	switch {
	case n.isLeaf():
		if n.gen != nil {
			return n.gen(r, row)
		}
		return n.leaf.gen(r)
	case n.logical == "LIST":
		elem := n.children[0].children[0]
		elems := []any{}
		for range r.IntN(5) {
			v := genValue(elem, r, row)
			if v == absent {
				v = nil
			}
			elems = append(elems, v)
		}
		return elems
	case n.logical == "MAP":
		kv := n.children[0]
		key, value := kv.children[0], kv.children[1]
		var o object
		seen := map[string]bool{}
		for range r.IntN(4) {
			k := mapKey(key.leaf, r)
			ck, err := canonKey(key.leaf, k)
			if err != nil {
				panic(err)
			}
			if seen[ck] {
				continue // DuckDB refuses duplicate keys
			}
			seen[ck] = true
			v := genValue(value, r, row)
			if v == absent {
				v = nil
			}
			o = append(o, member{k, v})
		}
		return o
	}
	var o object
	for _, c := range n.children {
		if v := genValue(c, r, row); v != absent {
			o = append(o, member{c.name, v})
		}
	}
	return o
}

// mapKey makes a member name for a MAP key of type t.
func mapKey(t *leafType, r *rand.Rand) string {
	v := t.gen(r)
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	}
	panic(fmt.Sprintf("no map key from %T", v))
}

// canonRecord reduces an input line to canonical form: a map from field
// name to canonical value (see canonValue).
func canonRecord(s *fileSchema, line []byte) (map[string]any, error) {
	return canonGroup(s.fields, line)
}

// canonGroup is the canonical form of a JSON object holding fields.
func canonGroup(fields []*node, raw []byte) (map[string]any, error) {
	members, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	byName := map[string]json.RawMessage{}
	for _, m := range members {
		byName[m.key] = m.raw
	}
	out := map[string]any{}
	for _, f := range fields {
		v, err := canonValue(f, byName[f.name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		out[f.name] = v
	}
	return out, nil
}

// canonValue is the canonical form of the JSON value raw (nil when absent)
// of field n: a string per leaf value, nil for null, []any for repeated
// fields and lists, []any of {"key","value"} objects for maps, and
// map[string]any for groups. A repeated field that is absent or null is the
// empty list: Parquet cannot tell them apart.
func canonValue(n *node, raw json.RawMessage) (any, error) {
	isNull := raw == nil || string(raw) == "null"
	if n.rep == "repeated" {
		if isNull {
			return []any{}, nil
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, err
		}
		out := []any{}
		for _, e := range elems {
			v, err := canonSingle(n, e)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if isNull {
		return nil, nil
	}
	return canonSingle(n, raw)
}

func canonSingle(n *node, raw json.RawMessage) (any, error) {
	switch {
	case n.isLeaf():
		return n.leaf.canon(raw)
	case n.logical == "LIST":
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, err
		}
		elem := n.children[0].children[0]
		out := []any{}
		for _, e := range elems {
			v, err := canonValue(elem, e)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case n.logical == "MAP":
		members, err := objectMembers(raw)
		if err != nil {
			return nil, err
		}
		kv := n.children[0]
		out := []any{}
		for _, m := range members {
			k, err := canonKey(kv.children[0].leaf, m.key)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", m.key, err)
			}
			v, err := canonValue(kv.children[1], m.raw)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", m.key, err)
			}
			out = append(out, map[string]any{"key": k, "value": v})
		}
		return out, nil
	}
	return canonGroup(n.children, raw)
}

// canonKey converts a member name to the canonical key: the name read as a
// JSON string, or as the literal it spells for numeric keys.
func canonKey(t *leafType, name string) (string, error) {
	quoted, _ := json.Marshal(name)
	if v, err := t.canon(quoted); err == nil {
		return v, nil
	}
	return t.canon(json.RawMessage(name))
}

type rawMember struct {
	key string
	raw json.RawMessage
}

// objectMembers returns the members of a JSON object in order, duplicates
// included.
func objectMembers(raw []byte) ([]rawMember, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object: %.40s", raw)
	}
	var out []rawMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, rawMember{tok.(string), v})
	}
	return out, nil
}

// genInput makes n lines of input for s from seed.
func genInput(s *fileSchema, seed uint64, n int) [][]byte {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	lines := make([][]byte, n)
	for i := range lines {
		b, err := json.Marshal(genRecord(s, r, i))
		if err != nil {
			panic(err)
		}
		lines[i] = b
	}
	return lines
}
