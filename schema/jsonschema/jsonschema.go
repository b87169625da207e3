// Package jsonschema maps a JSON Schema (draft-07 and 2020-12; draft-07
// when the schema names no $schema, as Confluent's Schema Registry does)
// to a Parquet schema, and validates JSON values against it. The schema is
// compiled by github.com/santhosh-tekuri/jsonschema/v6, which resolves
// $ref and $defs (and references to other schemas, given with Reference)
// and validates; the mapping walks the compiled schema:
//
//   - an object whose members are all declared (additionalProperties:
//     false, or unevaluatedProperties: false, and no patternProperties) is
//     a group of its properties, in the order the schema lists them; any
//     other object (one that admits members it does not name, or has no
//     properties) is a VARIANT, so that no member is ever lost;
//   - an array with one items schema is a LIST of it (element name
//     "element"); a tuple (prefixItems, or draft-07 items as an array) is
//     a VARIANT;
//   - integer is INT64; number is DOUBLE, or DECIMAL(38,s) on
//     FIXED_LEN_BYTE_ARRAY(16) when multipleOf is exactly 10^-s for s from 0
//     to 38 (0.01 gives DECIMAL(38,2)): a value with more fractional digits
//     is invalid anyway; boolean is BOOLEAN; null alone is an optional INT32
//     (UNKNOWN), always null;
//   - string is STRING, with format date-time TIMESTAMP(MICROS, UTC), date
//     DATE, time TIME(MICROS, UTC), uuid FIXED_LEN_BYTE_ARRAY(16) (UUID); a
//     string enum (or an enum of strings and null) is ENUM;
//   - a property is REQUIRED when `required` names it and its schema does
//     not admit null; otherwise OPTIONAL (absent and null are NULL). A type
//     list of one type and "null", and an anyOf or oneOf of a schema and
//     {"type": "null"}, are that type, nullable; integer with number is
//     number;
//   - anything else is a VARIANT: oneOf and anyOf, allOf of more than one
//     schema, not, if, several types, no type at all (true, {}, a schema of only
//     constraints), enums that are not all strings, $dynamicRef and
//     $recursiveRef;
//   - $ref is followed; a $ref to a schema that encloses it (a recursive
//     schema) is a VARIANT at that point, its first repetition, and the
//     schema false is an error naming its location.
//
// A root that does not map to a group becomes one REQUIRED field named
// "value" (Wrapped reports it): each record's value is that field.
//
// Field ids are stable: each is a hash of the field's path in the Parquet
// schema (FNV-1a, 31 bits), so a field keeps its id when others are added,
// removed or reordered; the rare collision takes the next free id in
// depth-first order.
//
// Validation is the validator's, with formats asserted: a value passes
// Validate exactly when it is valid against the schema. The value is
// decoded for it with internal/jsonscan, the tokenizer of the JSON
// shredder, which refuses invalid UTF-8 and lone surrogates.
package jsonschema

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// MetadataKey is the key-value metadata key of the files whose rows came
// from JSON Schema values: the root schema's text, for replay.
const MetadataKey = "json.schema"

// ValueField is the one top-level field of a schema whose root does not
// map to a group.
const ValueField = "value"

// defaultBase is the URL of a root schema given no other: relative
// references resolve against it (or against the root's $id).
const defaultBase = "pqsink:///schema.json"

// ErrInvalid is wrapped by Validate's errors: the value does not satisfy
// the schema.
var ErrInvalid = errors.New("json schema: invalid value")

// ErrNotJSON is wrapped by Validate's errors for a value that is not
// one JSON text.
var ErrNotJSON = errors.New("json schema: not JSON")

// Schema is a compiled JSON Schema with its Parquet mapping. It is
// immutable and safe for concurrent use.
type Schema struct {
	text      []byte
	fields    []*schema.Node
	wrapped   bool
	validator *jsv.Schema
	nulls     map[string]bool // dotted Parquet paths of required, nullable properties
	loaded    []FileReference // files loaded for $ref (LocalFiles)
	idx       *orderIndex     // the documents' member order, for Property
	decoders  sync.Pool       // of *decoder, for Validate
}

// Option configures Compile.
type Option func(*options) error

type options struct {
	base  string
	refs  map[string][]byte
	files bool
}

// Base sets the URL of the root schema, against which relative $refs
// resolve when the root has no $id. A local path becomes a file URL.
// Defaults to an internal URL, pqsink:///schema.json.
func Base(u string) Option {
	return func(o *options) error {
		if !strings.Contains(u, "://") {
			abs, err := filepath.Abs(u)
			if err != nil {
				return fmt.Errorf("json schema base %s: %w", u, err)
			}
			u = (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
		}
		o.base = u
		return nil
	}
}

// Reference adds a schema that the root (or another reference) refers to
// by name, as a Schema Registry reference names it: the name is resolved
// against the root's $id, or its Base.
func Reference(name string, text []byte) Option {
	return func(o *options) error {
		if o.refs == nil {
			o.refs = map[string][]byte{}
		}
		o.refs[name] = text
		return nil
	}
}

// LocalFiles lets $ref load schemas from local files (file URLs, relative
// to a Base that is a file). Defaults to off: a reference to anything not
// given with Reference is an error.
func LocalFiles() Option {
	return func(o *options) error {
		o.files = true
		return nil
	}
}

// noLoader refuses every URL that is not a resource given to the compiler.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s is not among the schema's references", u)
}

// Compile compiles the JSON Schema text and maps it to Parquet fields.
// Errors name the location in the schema of what cannot be compiled or
// mapped.
func Compile(text []byte, opts ...Option) (*Schema, error) {
	o := options{base: defaultBase}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft7)
	c.AssertFormat()
	files := &fileLoader{}
	if o.files {
		c.UseLoader(jsv.SchemeURLLoader{"file": files})
	} else {
		c.UseLoader(noLoader{})
	}
	idx := newOrderIndex()
	root, err := unmarshal(text)
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	if err := c.AddResource(o.base, root); err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	if err := idx.add(o.base, text); err != nil {
		return nil, err
	}
	refBase := o.base
	if m, ok := root.(map[string]any); ok {
		if id, ok := m["$id"].(string); ok && id != "" {
			refBase = resolveURL(o.base, id)
			_ = idx.add(refBase, text)
		}
	}
	for name, t := range o.refs {
		doc, err := unmarshal(t)
		if err != nil {
			return nil, fmt.Errorf("json schema reference %s: %w", name, err)
		}
		u := resolveURL(refBase, name)
		if err := c.AddResource(u, doc); err != nil {
			return nil, fmt.Errorf("json schema reference %s: %w", name, err)
		}
		if err := idx.add(u, t); err != nil {
			return nil, fmt.Errorf("json schema reference %s: %w", name, err)
		}
		if m, ok := doc.(map[string]any); ok {
			if id, ok := m["$id"].(string); ok && id != "" {
				_ = idx.add(resolveURL(u, id), t)
			}
		}
	}
	compiled, err := c.Compile(o.base)
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	m := &mapper{idx: idx, ids: map[int32]bool{}, nulls: map[string]bool{}}
	s := &Schema{text: bytes.Clone(text), validator: compiled, nulls: m.nulls, idx: idx}
	for _, f := range files.loaded {
		// Named relative to the root, as its $ref names them, so that
		// the schema compiles again from a footer under any base.
		rel, err := relativeURL(o.base, f.Name)
		if err != nil {
			return nil, err
		}
		s.loaded = append(s.loaded, FileReference{Name: rel, Schema: f.Schema})
	}
	top, err := m.node(ValueField, compiled, true)
	if err != nil {
		return nil, err
	}
	if top.Logical.Kind == schema.None && !top.IsLeaf() {
		s.fields = top.Fields
		unwrapped := map[string]bool{}
		for p := range m.nulls {
			unwrapped[strings.TrimPrefix(p, ValueField+".")] = true
		}
		s.nulls = unwrapped
	} else {
		s.wrapped = true
		s.fields = []*schema.Node{top}
	}
	s.fields = m.assignIDs(s.fields)
	return s, nil
}

func unmarshal(text []byte) (any, error) {
	return jsv.UnmarshalJSON(bytes.NewReader(text))
}

// resolveURL resolves ref against base; a ref that is not a URL is taken
// as it is.
func resolveURL(base, ref string) string {
	b, err := url.Parse(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	u := b.ResolveReference(r)
	u.Fragment = ""
	return u.String()
}

// Loaded returns the local files that $ref loaded (with LocalFiles),
// named by their path relative to the root schema's.
func (s *Schema) Loaded() []FileReference { return s.loaded }

// fileLoader loads local files for $ref and keeps their text.
type fileLoader struct {
	loaded []FileReference // Name: the file URL
}

func (l *fileLoader) Load(u string) (any, error) {
	path, err := jsv.FileLoader{}.ToFile(u)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := unmarshal(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l.loaded = append(l.loaded, FileReference{Name: u, Schema: string(text)})
	return doc, nil
}

// relativeURL returns target relative to the directory of base, both
// file URLs.
func relativeURL(base, target string) (string, error) {
	b, err1 := url.Parse(base)
	t, err2 := url.Parse(target)
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("json schema: %s relative to %s: not URLs", target, base)
	}
	rel, err := filepath.Rel(filepath.Dir(filepath.FromSlash(b.Path)), filepath.FromSlash(t.Path))
	if err != nil {
		return "", fmt.Errorf("json schema: %s relative to %s: %w", target, base, err)
	}
	return filepath.ToSlash(rel), nil
}

// KeepsNull reports whether the field at the dotted Parquet path (as
// schema.Node.PathString gives it) is a property that `required` names
// but whose schema admits null: a null there is written as null, where
// the null of any other property is an absent member.
func (s *Schema) KeepsNull(path string) bool { return s.nulls[path] }

// Text returns the root schema's text, as given to Compile.
func (s *Schema) Text() []byte { return s.text }

// Wrapped reports whether the root does not map to a group: the Parquet
// schema then has one field, ValueField, which holds the whole value.
func (s *Schema) Wrapped() bool { return s.wrapped }

// Fields returns copies of the top-level Parquet fields.
func (s *Schema) Fields() []*schema.Node {
	out := make([]*schema.Node, len(s.fields))
	for i, f := range s.fields {
		c := *f
		out[i] = &c
	}
	return out
}

// Parquet returns the Parquet schema of the values, named "schema", with
// extra fields (such as the Kafka envelope) after the value's own.
func (s *Schema) Parquet(extra ...*schema.Node) (*schema.Schema, error) {
	fields := append(s.Fields(), extra...)
	ps, err := schema.New("schema", fields...)
	if err != nil {
		return nil, fmt.Errorf("json schema: %w", err)
	}
	return ps, nil
}

// Property returns the schema of the root object's property name as a
// schema of its own: its mapping, its validation of the property's
// values, and the root's Text. The root must be an object schema with
// the property, and the property's schema an object of declared
// properties (nullable or not), which maps to a group: the rows of a
// Debezium envelope's after. Errors say which of these fails.
func (s *Schema) Property(name string) (*Schema, error) {
	root := follow(s.validator)
	p := root.Properties[name]
	if p == nil {
		return nil, fmt.Errorf("json schema: the root has no property %s", name)
	}
	m := &mapper{idx: s.idx, ids: map[int32]bool{}, nulls: map[string]bool{}}
	top, err := m.node(ValueField, p, true)
	if err != nil {
		return nil, err
	}
	if top.Logical.Kind != schema.None || top.IsLeaf() {
		return nil, fmt.Errorf("json schema: property %s is not an object schema whose members are all declared (properties, with additionalProperties: false), which the columns of a row need", name)
	}
	nulls := map[string]bool{}
	for q := range m.nulls {
		if q != ValueField { // the property itself, nullable
			nulls[strings.TrimPrefix(q, ValueField+".")] = true
		}
	}
	return &Schema{text: s.text, fields: m.assignIDs(top.Fields), validator: p, nulls: nulls, loaded: s.loaded, idx: s.idx}, nil
}

// Validate checks the JSON text value against the schema. An error wraps
// ErrInvalid when the value does not satisfy it (its text names the
// value's location and the keyword that failed), or ErrNotJSON when it is
// not one JSON text.
func (s *Schema) Validate(value []byte) error {
	d, _ := s.decoders.Get().(*decoder)
	if d == nil {
		d = &decoder{}
	}
	v, err := d.decode(value)
	s.decoders.Put(d)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if err := s.validator.Validate(v); err != nil {
		var ve *jsv.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("%w: %s", ErrInvalid, describe(ve))
		}
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// describe names the deepest first failure of e: the value's location and
// what failed there.
func describe(e *jsv.ValidationError) string {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	loc := "/" + strings.Join(e.InstanceLocation, "/")
	msg := e.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && !strings.Contains(msg, "\n") {
		msg = msg[i+2:]
	} else if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
		msg = strings.TrimPrefix(msg, "- ")
		if j := strings.Index(msg, ": "); j >= 0 {
			msg = msg[j+2:]
		}
	}
	return "at " + loc + ": " + msg
}

// mapper walks a compiled schema into Parquet nodes.
type mapper struct {
	idx   *orderIndex
	stack []*jsv.Schema // the object and array schemas enclosing the walk
	ids   map[int32]bool
	path  []string        // Parquet names from the root's field down to the node mapped
	nulls map[string]bool // see Schema.KeepsNull
}

// mapped is what a schema maps to before its name and repetition: a nil
// node is a VARIANT.
type mapped struct {
	node     *schema.Node // with Name and Repetition to be set
	nullable bool
}

func variantNode(name string, rep schema.Repetition) *schema.Node {
	return schema.Group(name, rep, schema.Logical{Kind: schema.Variant, SpecVersion: 1},
		schema.Leaf("metadata", schema.Required, meta.TypeByteArray, schema.Logical{}),
		schema.Leaf("value", schema.Required, meta.TypeByteArray, schema.Logical{}))
}

// node maps s to a field called name, REQUIRED when required is true and s
// does not admit null.
func (m *mapper) node(name string, s *jsv.Schema, required bool) (*schema.Node, error) {
	m.path = append(m.path, name)
	defer func() { m.path = m.path[:len(m.path)-1] }()
	mp, err := m.shape(s)
	if err != nil {
		return nil, err
	}
	if required && mp.nullable {
		m.nulls[strings.Join(m.path, ".")] = true
	}
	rep := schema.Optional
	if required && !mp.nullable {
		rep = schema.Required
	}
	if mp.node == nil { // VARIANT
		return variantNode(name, rep), nil
	}
	n := mp.node
	n.Name, n.Repetition = name, rep
	if n.Logical.Kind == schema.Unknown {
		n.Repetition = schema.Optional
	}
	return n, nil
}

// follow returns the schema s stands for when it is a $ref, or a single
// allOf, and nothing that narrows it for the mapping.
func follow(s *jsv.Schema) *jsv.Schema {
	for i := 0; i < 64; i++ {
		switch {
		case s.Ref != nil && s.Types == nil && s.Properties == nil && s.Items == nil && s.Items2020 == nil:
			s = s.Ref
		case len(s.AllOf) == 1 && s.Types == nil && s.Properties == nil && s.Ref == nil:
			s = s.AllOf[0]
		default:
			return s
		}
	}
	return s
}

// isNull reports whether s admits only null.
func isNull(s *jsv.Schema) bool {
	s = follow(s)
	return s.Types != nil && fmt.Sprint(s.Types.ToStrings()) == "[null]"
}

// shape maps s; a nil node is a VARIANT.
func (m *mapper) shape(s *jsv.Schema) (mapped, error) {
	s = follow(s)
	for _, e := range m.stack {
		if e == s {
			return mapped{}, nil // recursive: VARIANT at its first repetition
		}
	}
	if s.Bool != nil {
		if !*s.Bool {
			return mapped{}, fmt.Errorf("json schema %s: the schema false admits no value: no column can hold it", s.Location)
		}
		return mapped{}, nil
	}
	if s.DynamicRef != nil || s.RecursiveRef != nil || len(s.AllOf) > 0 || s.Not != nil || s.If != nil {
		return mapped{}, nil
	}
	if alts := s.AnyOf; len(alts) > 0 || len(s.OneOf) > 0 {
		if len(alts) == 0 {
			alts = s.OneOf
		}
		if len(s.AnyOf) > 0 && len(s.OneOf) > 0 || len(alts) != 2 || s.Types != nil {
			return mapped{}, nil
		}
		var other *jsv.Schema
		switch {
		case isNull(alts[0]):
			other = alts[1]
		case isNull(alts[1]):
			other = alts[0]
		default:
			return mapped{}, nil
		}
		mp, err := m.shape(other)
		mp.nullable = true
		return mp, err
	}
	var types []string
	nullable := false
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			if t == "null" {
				nullable = true
			} else {
				types = append(types, t)
			}
		}
	}
	if len(types) == 2 && types[0] == "number" && types[1] == "integer" {
		types = types[:1]
	}
	if s.Enum != nil {
		strs, null := true, false
		for _, v := range s.Enum.Values {
			switch v.(type) {
			case string:
			case nil:
				null = true
			default:
				strs = false
			}
		}
		if strs && (len(types) == 0 || len(types) == 1 && types[0] == "string") {
			return mapped{node: schema.Leaf("", 0, meta.TypeByteArray, schema.Logical{Kind: schema.Enum}), nullable: nullable || null}, nil
		}
		return mapped{}, nil
	}
	if len(types) == 0 && nullable {
		return mapped{node: schema.Leaf("", schema.Optional, meta.TypeInt32, schema.Logical{Kind: schema.Unknown}), nullable: true}, nil
	}
	if len(types) != 1 {
		return mapped{}, nil
	}
	leaf := func(t meta.Type, l schema.Logical) (mapped, error) {
		return mapped{node: schema.Leaf("", 0, t, l), nullable: nullable}, nil
	}
	switch types[0] {
	case "boolean":
		return leaf(meta.TypeBoolean, schema.Logical{})
	case "integer":
		return leaf(meta.TypeInt64, schema.Logical{})
	case "number":
		if sc, ok := decimalScale(s.MultipleOf); ok {
			return mapped{node: schema.FixedLeaf("", 0, 16, schema.Logical{Kind: schema.Decimal, Precision: 38, Scale: sc}), nullable: nullable}, nil
		}
		return leaf(meta.TypeDouble, schema.Logical{})
	case "string":
		if s.Format != nil {
			switch s.Format.Name {
			case "date-time":
				return leaf(meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: schema.Micros, UTC: true})
			case "date":
				return leaf(meta.TypeInt32, schema.Logical{Kind: schema.Date})
			case "time":
				return leaf(meta.TypeInt64, schema.Logical{Kind: schema.Time, Unit: schema.Micros, UTC: true})
			case "uuid":
				return mapped{node: schema.FixedLeaf("", 0, 16, schema.Logical{Kind: schema.UUID}), nullable: nullable}, nil
			}
		}
		return leaf(meta.TypeByteArray, schema.Logical{Kind: schema.String})
	case "array":
		return m.array(s, nullable)
	case "object":
		return m.object(s, nullable)
	}
	return mapped{}, nil
}

// decimalScale returns s when r is 10^-s, 0 <= s <= 38.
func decimalScale(r *big.Rat) (int32, bool) {
	if r == nil || r.Num().Cmp(big.NewInt(1)) != 0 {
		return 0, false
	}
	d := new(big.Int).Set(r.Denom())
	ten := big.NewInt(10)
	var s int32
	for d.Cmp(big.NewInt(1)) > 0 {
		q, rem := new(big.Int).QuoRem(d, ten, new(big.Int))
		if rem.Sign() != 0 || s == 38 {
			return 0, false
		}
		d, s = q, s+1
	}
	return s, true
}

func (m *mapper) array(s *jsv.Schema, nullable bool) (mapped, error) {
	var items *jsv.Schema
	switch it := s.Items.(type) {
	case *jsv.Schema:
		items = it
	case []*jsv.Schema:
		return mapped{}, nil // a tuple
	}
	if len(s.PrefixItems) > 0 {
		return mapped{}, nil
	}
	if s.Items2020 != nil {
		items = s.Items2020
	}
	m.stack = append(m.stack, s)
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	var elem *schema.Node
	if items == nil {
		elem = variantNode("element", schema.Optional)
	} else {
		var err error
		m.path = append(m.path, "list")
		elem, err = m.node("element", items, true)
		m.path = m.path[:len(m.path)-1]
		if err != nil {
			return mapped{}, err
		}
	}
	list := schema.Group("", 0, schema.Logical{Kind: schema.List},
		schema.Group("list", schema.Repeated, schema.Logical{}, elem))
	return mapped{node: list, nullable: nullable}, nil
}

func (m *mapper) object(s *jsv.Schema, nullable bool) (mapped, error) {
	closed := s.AdditionalProperties == false ||
		s.UnevaluatedProperties != nil && s.UnevaluatedProperties.Bool != nil && !*s.UnevaluatedProperties.Bool
	if !closed || len(s.PatternProperties) > 0 || len(s.Properties) == 0 {
		return mapped{}, nil
	}
	m.stack = append(m.stack, s)
	defer func() { m.stack = m.stack[:len(m.stack)-1] }()
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var fields []*schema.Node
	for _, name := range m.idx.propertyOrder(s) {
		f, err := m.node(name, s.Properties[name], required[name])
		if err != nil {
			return mapped{}, err
		}
		fields = append(fields, f)
	}
	return mapped{node: schema.Group("", 0, schema.Logical{}, fields...), nullable: nullable}, nil
}

// assignIDs returns copies of fields, every node with a field id hashed
// from its path.
func (m *mapper) assignIDs(fields []*schema.Node) []*schema.Node {
	out := make([]*schema.Node, len(fields))
	for i, f := range fields {
		out[i] = m.withIDs(f, "")
	}
	return out
}

func (m *mapper) withIDs(n *schema.Node, parent string) *schema.Node {
	path := n.Name
	if parent != "" {
		path = parent + "." + n.Name
	}
	h := fnv.New32a()
	h.Write([]byte(path))
	id := int32(h.Sum32() & 0x7fffffff)
	if id == 0 {
		id = 1
	}
	for m.ids[id] {
		id++
		if id <= 0 {
			id = 1
		}
	}
	m.ids[id] = true
	c := n.WithFieldID(id)
	if len(n.Fields) > 0 {
		c.Fields = make([]*schema.Node, len(n.Fields))
		for i, f := range n.Fields {
			c.Fields[i] = m.withIDs(f, path)
		}
	}
	return c
}

// AppendWrapped appends value as the one member of an object, the record
// the Parquet schema of a Wrapped schema takes: {"value":VALUE}.
func AppendWrapped(dst, value []byte) []byte {
	dst = append(dst, `{"`+ValueField+`":`...)
	dst = append(dst, value...)
	return append(dst, '}')
}

// ReferencesKey is the key-value metadata key that holds the schemas the
// root refers to, for a schema with references: a JSON array of
// FileReference, so that the file's schema compiles again from its
// footer alone.
const ReferencesKey = "json.schema.references"

// IDKey is the key-value metadata key that holds the Schema Registry id
// of the files' schema, in decimal, when the values came in Confluent's
// wire format: replay then writes them back in it.
const IDKey = "json.schema.id"

// FileReference is a schema the root refers to, as a file's footer
// keeps it: the name $ref uses, where the registry holds it (subject and
// version; empty for a local file) and its text.
type FileReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject,omitempty"`
	Version int    `json:"version,omitempty"`
	Schema  string `json:"schema"`
}
