package schema

import (
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/meta"
)

// Elements returns the schema flattened as a file footer stores it: the
// root first, then every node in depth-first order. Each annotated node gets
// its LogicalType and also the matching legacy ConvertedType, with scale and
// precision for decimals, as LogicalTypes.md asks of writers so that old
// readers understand the file. INTERVAL, which has no LogicalType, gets only
// its ConvertedType.
func (s *Schema) Elements() []meta.SchemaElement {
	elems := make([]meta.SchemaElement, 0, 1+countNodes(s.fields))
	elems = append(elems, meta.SchemaElement{Name: s.name, NumChildren: ptr(int32(len(s.fields)))})
	for _, f := range s.fields {
		elems = f.appendElements(elems)
	}
	return elems
}

func countNodes(fields []*Node) int {
	n := len(fields)
	for _, f := range fields {
		n += countNodes(f.Fields)
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func (n *Node) appendElements(elems []meta.SchemaElement) []meta.SchemaElement {
	e := meta.SchemaElement{
		Name:           n.Name,
		RepetitionType: ptr(meta.FieldRepetitionType(n.Repetition)),
	}
	if n.isGroup() {
		e.NumChildren = ptr(int32(len(n.Fields)))
	} else {
		e.Type = ptr(n.Physical)
		if n.Physical == meta.TypeFixedLenByteArray {
			e.TypeLength = ptr(n.Length)
		}
	}
	if n.HasFieldID {
		e.FieldID = ptr(n.FieldID)
	}
	if n.HasLegacy {
		e.ConvertedType = ptr(n.Legacy)
	}
	if c, ok := n.Logical.Converted(); ok {
		e.ConvertedType = ptr(c)
	}
	if n.Logical.Kind == Decimal {
		e.Precision, e.Scale = ptr(n.Logical.Precision), ptr(n.Logical.Scale)
	}
	e.LogicalType = n.Logical.element()
	elems = append(elems, e)
	for _, f := range n.Fields {
		elems = f.appendElements(elems)
	}
	return elems
}

// element returns the thrift form of l, or nil for no annotation and for
// INTERVAL, which parquet.thrift reserves but does not define.
func (l Logical) element() *meta.LogicalType {
	var t meta.LogicalType
	switch l.Kind {
	case String:
		t.String = &meta.StringType{}
	case Enum:
		t.Enum = &meta.EnumType{}
	case UUID:
		t.UUID = &meta.UUIDType{}
	case Int:
		t.Integer = &meta.IntType{BitWidth: l.BitWidth, IsSigned: l.Signed}
	case Decimal:
		t.Decimal = &meta.DecimalType{Precision: l.Precision, Scale: l.Scale}
	case Float16:
		t.Float16 = &meta.Float16Type{}
	case Date:
		t.Date = &meta.DateType{}
	case Time:
		t.Time = &meta.TimeType{IsAdjustedToUTC: l.UTC, Unit: unitElement(l.Unit)}
	case Timestamp:
		t.Timestamp = &meta.TimestampType{IsAdjustedToUTC: l.UTC, Unit: unitElement(l.Unit)}
	case JSON:
		t.JSON = &meta.JsonType{}
	case BSON:
		t.BSON = &meta.BsonType{}
	case List:
		t.List = &meta.ListType{}
	case Map:
		t.Map = &meta.MapType{}
	case Unknown:
		t.Unknown = &meta.NullType{}
	case Variant:
		v := l.SpecVersion
		if v == 0 {
			v = 1
		}
		t.Variant = &meta.VariantType{SpecificationVersion: &v}
	case Geometry:
		t.Geometry = &meta.GeometryType{}
		if l.CRS != "" {
			t.Geometry.CRS = ptr(l.CRS)
		}
	case Geography:
		t.Geography = &meta.GeographyType{}
		if l.CRS != "" {
			t.Geography.CRS = ptr(l.CRS)
		}
		if l.Algorithm != "" {
			for i, name := range geographyAlgorithms {
				if name == l.Algorithm {
					t.Geography.Algorithm = ptr(meta.EdgeInterpolationAlgorithm(i))
				}
			}
		}
	case File:
		t.File = &meta.FileType{}
	default:
		return nil
	}
	return &t
}

func unitElement(u TimeUnit) meta.TimeUnit {
	switch u {
	case Millis:
		return meta.TimeUnit{Millis: &meta.MilliSeconds{}}
	case Micros:
		return meta.TimeUnit{Micros: &meta.MicroSeconds{}}
	case Nanos:
		return meta.TimeUnit{Nanos: &meta.NanoSeconds{}}
	}
	return meta.TimeUnit{}
}

func unitFromElement(u meta.TimeUnit) TimeUnit {
	switch {
	case u.Millis != nil:
		return Millis
	case u.Micros != nil:
		return Micros
	case u.Nanos != nil:
		return Nanos
	}
	return 0
}

// FromElements builds a schema from the flattened elements of a file
// footer, root first. An element's LogicalType wins over its ConvertedType;
// a ConvertedType alone stands for the logical type it implies (UTF8 for
// STRING, INT_8 for INTEGER(8,true), TIMESTAMP_MILLIS for
// TIMESTAMP(MILLIS,true), DECIMAL with the element's precision and scale,
// ...), except MAP_KEY_VALUE, which is kept in Node.Legacy. A LogicalType
// this package does not know, or whose time unit it does not know, counts
// as absent, as LogicalTypes.md asks of readers. The legacy LIST and MAP
// shapes are accepted. The elements are untrusted: a malformed list gives an
// error, never a panic.
func FromElements(elems []meta.SchemaElement) (*Schema, error) {
	if len(elems) == 0 {
		return nil, fmt.Errorf("schema: no elements")
	}
	root := &elems[0]
	if root.NumChildren == nil && root.Type != nil {
		return nil, fmt.Errorf("schema: root element %q is a leaf", root.Name)
	}
	r := elementReader{elems: elems, pos: 1}
	fields, err := r.children(root, nil, 0)
	if err != nil {
		return nil, err
	}
	if r.pos != len(elems) {
		return nil, fmt.Errorf("schema: %d elements after the end of the schema tree", len(elems)-r.pos)
	}
	return build(root.Name, fields, false)
}

type elementReader struct {
	elems []meta.SchemaElement
	pos   int
}

// children reads the num_children elements that follow parent.
func (r *elementReader) children(e *meta.SchemaElement, path []string, depth int) ([]*Node, error) {
	var count int32
	if e.NumChildren != nil {
		count = *e.NumChildren
	}
	where := "root"
	if path != nil {
		where = "field " + joinPath(path)
	}
	// Each child takes at least one element, so a count beyond what is left
	// is a lie; checking first keeps a hostile count from sizing the slice.
	if count < 0 || int(count) > len(r.elems)-r.pos {
		return nil, fmt.Errorf("schema: %s: %d children, but %d elements remain", where, count, len(r.elems)-r.pos)
	}
	if depth >= maxDepth {
		return nil, fmt.Errorf("schema: %s: groups nested more than %d deep", where, maxDepth)
	}
	fields := make([]*Node, count)
	for i := range fields {
		// Earlier children may have used up what the check above counted.
		if r.pos == len(r.elems) {
			return nil, fmt.Errorf("schema: %s: elements end after %d of %d children", where, i, count)
		}
		f, err := r.node(path, depth)
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	return fields, nil
}

func (r *elementReader) node(parent []string, depth int) (*Node, error) {
	e := &r.elems[r.pos]
	r.pos++
	path := append(parent[:len(parent):len(parent)], e.Name)
	if e.RepetitionType == nil {
		return nil, fmt.Errorf("schema: field %s: no repetition type", joinPath(path))
	}
	n := &Node{Name: e.Name, Repetition: Repetition(*e.RepetitionType)}
	if *e.RepetitionType < meta.Required || *e.RepetitionType > meta.Repeated {
		return nil, fmt.Errorf("schema: field %s: invalid repetition type %d", joinPath(path), *e.RepetitionType)
	}
	if e.FieldID != nil {
		n.FieldID, n.HasFieldID = *e.FieldID, true
	}
	// A leaf has a type and no children; some writers set num_children = 0
	// on leaves, so a count of zero does not make a group.
	if e.Type == nil || (e.NumChildren != nil && *e.NumChildren > 0) {
		n.group = true
		var err error
		if n.Fields, err = r.children(e, path, depth+1); err != nil {
			return nil, err
		}
	} else {
		n.Physical = *e.Type
		if n.Physical == meta.TypeFixedLenByteArray {
			if e.TypeLength == nil {
				return nil, fmt.Errorf("schema: field %s: FIXED_LEN_BYTE_ARRAY without a type length", joinPath(path))
			}
			n.Length = *e.TypeLength
		}
	}
	if e.LogicalType != nil {
		n.Logical = logicalFromElement(e.LogicalType)
	}
	if n.Logical.Kind == None && e.ConvertedType != nil {
		var precision, scale int32
		if e.Precision != nil {
			precision = *e.Precision
		}
		if e.Scale != nil {
			scale = *e.Scale
		}
		l, ok := fromConverted(*e.ConvertedType, precision, scale)
		switch {
		case ok:
			n.Logical = l
		case *e.ConvertedType == meta.ConvertedMapKeyValue:
			n.Legacy, n.HasLegacy = meta.ConvertedMapKeyValue, true
		default:
			return nil, fmt.Errorf("schema: field %s: unknown converted type %d", joinPath(path), *e.ConvertedType)
		}
	}
	return n, nil
}

// logicalFromElement converts a thrift LogicalType; what it does not know
// becomes the zero Logical.
func logicalFromElement(t *meta.LogicalType) Logical {
	switch {
	case t.String != nil:
		return Logical{Kind: String}
	case t.Map != nil:
		return Logical{Kind: Map}
	case t.List != nil:
		return Logical{Kind: List}
	case t.Enum != nil:
		return Logical{Kind: Enum}
	case t.Decimal != nil:
		return Logical{Kind: Decimal, Precision: t.Decimal.Precision, Scale: t.Decimal.Scale}
	case t.Date != nil:
		return Logical{Kind: Date}
	case t.Time != nil:
		if u := unitFromElement(t.Time.Unit); u != 0 {
			return Logical{Kind: Time, Unit: u, UTC: t.Time.IsAdjustedToUTC}
		}
	case t.Timestamp != nil:
		if u := unitFromElement(t.Timestamp.Unit); u != 0 {
			return Logical{Kind: Timestamp, Unit: u, UTC: t.Timestamp.IsAdjustedToUTC}
		}
	case t.Integer != nil:
		return Logical{Kind: Int, BitWidth: t.Integer.BitWidth, Signed: t.Integer.IsSigned}
	case t.Unknown != nil:
		return Logical{Kind: Unknown}
	case t.JSON != nil:
		return Logical{Kind: JSON}
	case t.BSON != nil:
		return Logical{Kind: BSON}
	case t.UUID != nil:
		return Logical{Kind: UUID}
	case t.Float16 != nil:
		return Logical{Kind: Float16}
	case t.Variant != nil:
		l := Logical{Kind: Variant, SpecVersion: 1}
		if v := t.Variant.SpecificationVersion; v != nil {
			l.SpecVersion = *v
		}
		return l
	case t.Geometry != nil:
		l := Logical{Kind: Geometry}
		if t.Geometry.CRS != nil {
			l.CRS = *t.Geometry.CRS
		}
		return l
	case t.Geography != nil:
		l := Logical{Kind: Geography}
		if t.Geography.CRS != nil {
			l.CRS = *t.Geography.CRS
		}
		if a := t.Geography.Algorithm; a != nil {
			l.Algorithm = a.String()
		}
		return l
	case t.File != nil:
		return Logical{Kind: File}
	}
	return Logical{}
}

func joinPath(path []string) string { return strings.Join(path, ".") }
