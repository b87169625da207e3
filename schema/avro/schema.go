// Package avro maps Apache Avro onto pqsink's Parquet schemas: it parses
// Avro schemas (validated and canonicalised by github.com/linkedin/goavro/v2)
// into a tree of Types, converts that tree to a Parquet schema the way
// parquet-java's AvroSchemaConverter does, resolves a writer schema onto a
// reader schema by Avro's schema resolution rules, encodes field defaults,
// reads object container files block by block, splits the Confluent wire
// format and talks to a Confluent Schema Registry.
//
// It holds no column buffers: avrorow.Decoder compiles a Resolution
// into a decoder that reads Avro binary straight into a row group.
package avro

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/linkedin/goavro/v2"
)

// Kind is an Avro type.
type Kind uint8

// The Avro types.
const (
	Null Kind = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var kindNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum", "array", "map", "union", "fixed"}

// String returns the type's name in Avro schemas, e.g. "long".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// LogicalKind is an Avro logical type that this package understands. A
// logicalType attribute that is unknown, or invalid on its underlying type
// (a decimal whose precision does not fit its fixed size, a date on a
// string), is ignored as the Avro specification requires: the type is read
// as its underlying type, and Type.LogicalName still says what was given.
type LogicalKind uint8

// The logical types of the Avro specification (1.12).
const (
	NoLogical            LogicalKind = iota
	Decimal                          // bytes or fixed: Precision, Scale
	UUID                             // string (RFC 4122 text) or fixed(16)
	Date                             // int: days since 1970-01-01
	TimeMillis                       // int
	TimeMicros                       // long
	TimestampMillis                  // long, UTC
	TimestampMicros                  // long, UTC
	TimestampNanos                   // long, UTC
	LocalTimestampMillis             // long, local time
	LocalTimestampMicros             // long, local time
	LocalTimestampNanos              // long, local time
	Duration                         // fixed(12): months, days, milliseconds, little-endian uint32s
)

var logicalNames = map[string]LogicalKind{
	"decimal":                Decimal,
	"uuid":                   UUID,
	"date":                   Date,
	"time-millis":            TimeMillis,
	"time-micros":            TimeMicros,
	"timestamp-millis":       TimestampMillis,
	"timestamp-micros":       TimestampMicros,
	"timestamp-nanos":        TimestampNanos,
	"local-timestamp-millis": LocalTimestampMillis,
	"local-timestamp-micros": LocalTimestampMicros,
	"local-timestamp-nanos":  LocalTimestampNanos,
	"duration":               Duration,
}

// Type is one node of a parsed Avro schema. Named types (records, enums,
// fixed) are shared: every reference to a name is the same *Type. Types
// reached through a Schema must not be modified.
type Type struct {
	Kind Kind

	// Named types.
	Name    string   // full name, e.g. "com.example.Event"
	Aliases []string // full names
	Doc     string

	Fields []*Field // Record

	Symbols     []string // Enum
	EnumDefault string   // Enum: the symbol read for unknown writer symbols
	HasDefault  bool     // Enum: EnumDefault is set

	Size int // Fixed: bytes per value

	Items    *Type   // Array
	Values   *Type   // Map
	Branches []*Type // Union

	// Logical is the logical type in force; NoLogical when there is none
	// or LogicalName was not valid here.
	Logical     LogicalKind
	LogicalName string // the logicalType attribute as given, valid or not
	Precision   int    // Decimal
	Scale       int    // Decimal
}

// Field is a field of a record.
type Field struct {
	Name       string
	Aliases    []string
	Doc        string
	Type       *Type
	Default    json.RawMessage // the default as written in the schema; nil when HasDefault is false
	HasDefault bool
}

// ShortName returns the name without its namespace.
func (t *Type) ShortName() string {
	if i := strings.LastIndexByte(t.Name, '.'); i >= 0 {
		return t.Name[i+1:]
	}
	return t.Name
}

// Nullable reports whether t is a union with a null branch, and returns
// the index of that branch.
func (t *Type) Nullable() (int, bool) {
	if t.Kind != Union {
		return -1, false
	}
	for i, b := range t.Branches {
		if b.Kind == Null {
			return i, true
		}
	}
	return -1, false
}

// Schema is a parsed, validated Avro schema.
type Schema struct {
	Root *Type

	text      string // the schema JSON as given, compacted
	canonical string
	codec     *goavro.Codec
}

// Parse parses an Avro schema in its JSON form. goavro validates it and
// computes its Parsing Canonical Form; Parse builds the Type tree. A
// recursive schema (a named type that contains itself) is an error: it
// has no Parquet equivalent.
//
// goavro is given the schema without its logicalType attributes: neither
// the binary nor the JSON encoding depends on them, the canonical form
// drops them, and goavro rejects (or, for some decimals, panics on) logical
// types that the specification says to ignore when invalid. Parse
// interprets them itself.
func Parse(text string) (*Schema, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(text)); err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	plain, err := json.Marshal(stripLogical(v))
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	codec, err := newCodec(string(plain))
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	p := parser{named: make(map[string]*Type)}
	root, err := p.parse(v, "", "")
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	return &Schema{Root: root, text: compact.String(), canonical: codec.CanonicalSchema(), codec: codec}, nil
}

// newCodec is goavro.NewCodec, with a panic on a malformed schema turned
// into an error: schemas come from registries and files, not from us.
func newCodec(text string) (c *goavro.Codec, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("goavro: malformed schema (%v)", p)
		}
	}()
	return goavro.NewCodec(text)
}

// stripLogical returns a copy of the schema v without logicalType
// attributes, leaving defaults and other values alone.
func stripLogical(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, b := range x {
			out[i] = stripLogical(b)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			switch k {
			case "logicalType":
				continue
			case "type", "items", "values":
				val = stripLogical(val)
			case "fields":
				if fs, ok := val.([]any); ok {
					nf := make([]any, len(fs))
					for i, f := range fs {
						if fm, ok := f.(map[string]any); ok {
							c := make(map[string]any, len(fm))
							for fk, fv := range fm {
								if fk == "type" {
									fv = stripLogical(fv)
								}
								c[fk] = fv
							}
							f = c
						}
						nf[i] = f
					}
					val = nf
				}
			}
			out[k] = val
		}
		return out
	}
	return v
}

// MustParse is Parse for schemas known to be valid, such as constants in
// tests; it panics on error.
func MustParse(text string) *Schema {
	s, err := Parse(text)
	if err != nil {
		panic(err)
	}
	return s
}

// String returns the schema JSON as given (compacted), with docs,
// defaults, aliases and custom attributes: what parquet-java stores under
// the avro.schema key of a file's key-value metadata.
func (s *Schema) String() string { return s.text }

// Canonical returns the schema's Parsing Canonical Form.
func (s *Schema) Canonical() string { return s.canonical }

// Fingerprint returns the CRC-64-AVRO (Rabin) fingerprint of the
// Parsing Canonical Form.
func (s *Schema) Fingerprint() uint64 { return uint64(s.codec.SchemaCRC64Avro()) }

// Codec returns goavro's codec for the schema (the reference decoder).
func (s *Schema) Codec() *goavro.Codec { return s.codec }

// MetadataKey is the key-value metadata key under which the Avro schema of
// a file's records is stored, as parquet-java does.
const MetadataKey = "avro.schema"

type parser struct {
	named    map[string]*Type
	building []string // named types being defined, outermost first
}

var primitives = map[string]Kind{
	"null": Null, "boolean": Boolean, "int": Int, "long": Long,
	"float": Float, "double": Double, "bytes": Bytes, "string": String,
}

// fullName qualifies name by namespace as the specification says: a name
// with a dot is already full.
func fullName(name, namespace string) string {
	if strings.IndexByte(name, '.') >= 0 || namespace == "" {
		return name
	}
	return namespace + "." + name
}

func namespaceOf(full string) string {
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		return full[:i]
	}
	return ""
}

func (p *parser) parse(v any, namespace, where string) (*Type, error) {
	switch x := v.(type) {
	case string:
		return p.ref(x, namespace, where)
	case []any:
		t := &Type{Kind: Union}
		for i, b := range x {
			bt, err := p.parse(b, namespace, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			t.Branches = append(t.Branches, bt)
		}
		return t, nil
	case map[string]any:
		return p.parseObject(x, namespace, where)
	}
	return nil, fmt.Errorf("%s: a type is a name, an array or an object, not %T", name(where), v)
}

func name(where string) string {
	if where == "" {
		return "top level"
	}
	return where
}

func (p *parser) ref(n, namespace, where string) (*Type, error) {
	if k, ok := primitives[n]; ok {
		return &Type{Kind: k}, nil
	}
	full := fullName(n, namespace)
	t, ok := p.named[full]
	if !ok {
		if t, ok = p.named[n]; ok {
			full = n
		}
	}
	if !ok {
		return nil, fmt.Errorf("%s: unknown type %q", name(where), n)
	}
	if i := slices.Index(p.building, full); i >= 0 {
		return nil, fmt.Errorf("%s: recursive schema: %s refers to itself (through %s); Parquet has no recursive types", name(where), full, strings.Join(p.building[i:], " > "))
	}
	return t, nil
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func strs(m map[string]any, key, namespace string) []string {
	list, _ := m[key].([]any)
	var out []string
	for _, a := range list {
		if s, ok := a.(string); ok {
			out = append(out, fullName(s, namespace))
		}
	}
	return out
}

func (p *parser) parseObject(m map[string]any, namespace, where string) (*Type, error) {
	typ := m["type"]
	ts, isName := typ.(string)
	if !isName {
		// {"type": {...}} or {"type": [...]}: the attribute holds the type.
		return p.parse(typ, namespace, where)
	}
	var t *Type
	switch ts {
	case "record", "error", "enum", "fixed":
		full := fullName(str(m, "name"), str(m, "namespace"))
		if str(m, "namespace") == "" && strings.IndexByte(str(m, "name"), '.') < 0 {
			full = fullName(str(m, "name"), namespace)
		}
		ns := namespaceOf(full)
		t = &Type{Name: full, Doc: str(m, "doc"), Aliases: strs(m, "aliases", ns)}
		p.named[full] = t
		switch ts {
		case "enum":
			t.Kind = Enum
			for _, s := range m["symbols"].([]any) {
				t.Symbols = append(t.Symbols, s.(string))
			}
			if d, ok := m["default"].(string); ok {
				t.EnumDefault, t.HasDefault = d, true
			}
		case "fixed":
			t.Kind = Fixed
			size, err := m["size"].(json.Number).Int64()
			if err != nil || size < 0 || size > 1<<30 {
				return nil, fmt.Errorf("%s: fixed %s: bad size %v", name(where), full, m["size"])
			}
			t.Size = int(size)
		default:
			t.Kind = Record
			p.building = append(p.building, full)
			fields, _ := m["fields"].([]any)
			for i, f := range fields {
				fm, ok := f.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s: record %s: field %d is not an object", name(where), full, i)
				}
				fname := str(fm, "name")
				ft, err := p.parse(fm["type"], ns, joinPath(where, fname))
				if err != nil {
					return nil, err
				}
				fld := &Field{Name: fname, Doc: str(fm, "doc"), Type: ft}
				for _, a := range strs(fm, "aliases", "") {
					fld.Aliases = append(fld.Aliases, a)
				}
				if d, ok := fm["default"]; ok {
					raw, err := json.Marshal(d)
					if err != nil {
						return nil, err
					}
					fld.Default, fld.HasDefault = raw, true
				}
				t.Fields = append(t.Fields, fld)
			}
			p.building = p.building[:len(p.building)-1]
		}
	case "array":
		items, err := p.parse(m["items"], namespace, where+"[]")
		if err != nil {
			return nil, err
		}
		t = &Type{Kind: Array, Items: items}
	case "map":
		values, err := p.parse(m["values"], namespace, where+"{}")
		if err != nil {
			return nil, err
		}
		t = &Type{Kind: Map, Values: values}
	default:
		k, ok := primitives[ts]
		if !ok {
			// {"type": "SomeNamedType"}
			return p.ref(ts, namespace, where)
		}
		t = &Type{Kind: k}
	}
	if ln, ok := m["logicalType"].(string); ok {
		t.LogicalName = ln
		t.Logical = validLogical(t, ln, m)
	}
	return t, nil
}

func joinPath(where, field string) string {
	if where == "" {
		return field
	}
	return where + "." + field
}

// validLogical returns the logical type of t given as ln, or NoLogical when
// it is unknown or not valid on t (the Avro specification: "an
// implementation must ignore unknown or invalid logical types").
func validLogical(t *Type, ln string, m map[string]any) LogicalKind {
	l, ok := logicalNames[ln]
	if !ok {
		return NoLogical
	}
	switch l {
	case Decimal:
		if t.Kind != Bytes && t.Kind != Fixed {
			return NoLogical
		}
		prec, perr := intAttr(m, "precision")
		scale, serr := intAttr(m, "scale")
		if _, has := m["scale"]; !has {
			scale, serr = 0, nil
		}
		if perr != nil || serr != nil || prec < 1 || scale < 0 || scale > prec {
			return NoLogical
		}
		if t.Kind == Fixed && prec > maxFixedPrecision(t.Size) {
			return NoLogical
		}
		t.Precision, t.Scale = prec, scale
	case UUID:
		if t.Kind != String && !(t.Kind == Fixed && t.Size == 16) {
			return NoLogical
		}
	case Date, TimeMillis:
		if t.Kind != Int {
			return NoLogical
		}
	case TimeMicros, TimestampMillis, TimestampMicros, TimestampNanos,
		LocalTimestampMillis, LocalTimestampMicros, LocalTimestampNanos:
		if t.Kind != Long {
			return NoLogical
		}
	case Duration:
		if t.Kind != Fixed || t.Size != 12 {
			return NoLogical
		}
	}
	return l
}

func intAttr(m map[string]any, key string) (int, error) {
	n, ok := m[key].(json.Number)
	if !ok {
		return 0, errors.New("not a number")
	}
	v, err := n.Int64()
	if err != nil || v < 0 || v > 1<<20 {
		return 0, errors.New("out of range")
	}
	return int(v), nil
}

// maxFixedPrecision is the number of decimal digits that a two's
// complement integer of size bytes always holds: floor(log10(2^(8*size-1)-1)).
func maxFixedPrecision(size int) int {
	if size <= 0 {
		return 0
	}
	if size > 128 {
		size = 128 // beyond any precision Parquet readers accept anyway
	}
	// 2^(8*size-1) has floor((8*size-1)*log10(2))+1 digits; the largest
	// value below it has at least that many minus one full digits.
	bits := 8*size - 1
	digits := 0
	// count digits of 2^bits - 1 by repeated multiplication, exactly
	v := []int{1} // little-endian base-10 digits of 2^bits
	for range bits {
		carry := 0
		for i := range v {
			d := v[i]*2 + carry
			v[i], carry = d%10, d/10
		}
		if carry > 0 {
			v = append(v, carry)
		}
	}
	// 2^bits - 1 has the same number of digits as 2^bits (a power of two
	// is never a power of ten), and holds every number of one digit less.
	digits = len(v) - 1
	return digits
}
