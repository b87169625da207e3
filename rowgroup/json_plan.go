package rowgroup

import (
	"fmt"
	"math"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// planKind says how a schema node takes its JSON value.
type planKind uint8

const (
	planLeaf    planKind = iota // a scalar (or, for JSON and INTERVAL, a small document)
	planGroup                   // an object whose members are the fields
	planList                    // a LIST-annotated group: an array
	planMap                     // a MAP-annotated group: an object whose members are entries
	planVariant                 // a VARIANT group: any value
)

// leafConv is the conversion from JSON to a leaf's physical values.
type leafConv uint8

const (
	convNull      leafConv = iota // UNKNOWN: null only
	convBool                      // BOOLEAN
	convInt                       // INT32/INT64, with or without INTEGER
	convDate                      // DATE
	convTime                      // TIME
	convTimestamp                 // TIMESTAMP
	convInt96                     // legacy INT96 timestamp
	convFloat                     // FLOAT
	convDouble                    // DOUBLE
	convFloat16                   // FLOAT16
	convString                    // STRING, ENUM
	convJSON                      // JSON
	convBinary                    // base64: BSON, geometries, unannotated binary
	convUUID                      // UUID
	convDecimal                   // DECIMAL on any physical type
	convInterval                  // INTERVAL
)

// jsonPlan is a schema node prepared for shredding: levels as uint8, the
// columns underneath for writing nulls, and per kind what the walk needs.
// Plans are built once per shredder; the walk never looks at the schema.
type jsonPlan struct {
	node     *schema.Node
	name     string              // node.Name, kept here for the member name comparisons
	key      jsonscan.MemberName // node.Name for Scanner.NextIs
	kind     planKind
	required bool      // node.Repetition == schema.Required
	repeated bool      // node.Repetition == schema.Repeated
	def      uint8     // definition level of a present value
	rep      uint8     // repetition level of a repeated node's later elements
	cols     []*Column // every leaf column under the node

	// planGroup
	fields  []*jsonPlan
	members []planMember   // fields[i] as the walk reads it, side by side
	index   map[string]int // field name → position in fields
	seen    []bool         // fields met in the current object; instances of a node never nest

	// planList and planMap: the levels of the repeated middle group, and
	// elem (the list element or the map key) and value (nil for a key set).
	innerDef, innerRep uint8
	twoLevel           bool     // the repeated field is the element itself
	elemFlat           bool     // planList: elem is a leaf of one value (not repeated)
	elemFast           fastKind // planList: how the fast path reads an element
	elem, value        *jsonPlan

	// planLeaf
	col      *Column
	conv     leafConv
	rng      intRange  // convInt
	typeName string    // for messages, e.g. "INTEGER(8,true)"
	dates    dateCache // convTimestamp: the last date parsed

	// planVariant
	metadata, variantValue *Column
}

// compilePlan prepares node n, whose leaves are cols[leaf.Column].
func compilePlan(n *schema.Node, cols []*Column) (*jsonPlan, error) {
	p := &jsonPlan{
		node: n, name: n.Name, key: jsonscan.NewMemberName(n.Name), def: uint8(n.MaxDef), rep: uint8(n.MaxRep),
		required: n.Repetition == schema.Required, repeated: n.Repetition == schema.Repeated,
	}
	p.cols = appendLeafColumns(nil, n, cols)
	if n.IsLeaf() {
		p.kind = planLeaf
		p.col = cols[n.Column]
		return p, p.compileLeaf()
	}
	switch {
	case n.Logical.Kind == schema.Variant:
		return p, p.compileVariant()
	case n.Logical.Kind == schema.List:
		return p, p.compileList(cols)
	case n.Logical.Kind == schema.Map:
		return p, p.compileMap(cols)
	case n.HasLegacy && n.Legacy == meta.ConvertedMapKeyValue:
		// A MAP_KEY_VALUE group outside a MAP is a map (LogicalTypes.md,
		// backward compatibility) when it has the shape of one. A proper
		// map's key_value group never gets here: maps compile their key and
		// value directly.
		if k, _ := n.MapKeyValue(); k != nil {
			return p, p.compileMap(cols)
		}
	}
	p.kind = planGroup
	p.index = make(map[string]int, len(n.Fields))
	p.seen = make([]bool, len(n.Fields))
	for i, f := range n.Fields {
		c, err := compilePlan(f, cols)
		if err != nil {
			return nil, err
		}
		p.fields = append(p.fields, c)
		p.members = append(p.members, newPlanMember(c))
		p.index[f.Name] = i
	}
	p.prepareMembers()
	return p, nil
}

// planMember is a group's field as the walk of the group reads it: the
// name to expect, the plan and whether the plan is a leaf of one value, all
// in one place rather than behind the pointer to the plan.
type planMember struct {
	key  jsonscan.MemberName
	plan *jsonPlan
	flat bool     // plan.kind == planLeaf && !plan.repeated
	str  bool     // flat, and a STRING or ENUM: a String token is the value as is
	fast fastKind // how the fast path reads the value, fastNone if it cannot

	// lit is how the member starts in compact JSON, for the fast path: the
	// ',' before all but the first member, the quoted name, ':' and, when
	// open is not 0, the first byte of the expected value (a string's
	// quote, '{' or '[').
	lit    jsonscan.Literal
	litLen int // len(lit.String())
	open   byte
}

// prepareMembers sets the literals of the members of group p; a member
// whose name JSON can only spell with escapes gets no fast kind.
func (p *jsonPlan) prepareMembers() {
	for j := range p.members {
		m := &p.members[j]
		q := m.key.Quoted()
		if q == "" {
			m.fast = fastNone
			continue
		}
		lit := q + ":"
		if j > 0 {
			lit = "," + lit
		}
		switch m.fast {
		case fastString, fastTimestamp:
			m.open = '"'
		case fastGroup:
			m.open = '{'
		case fastList:
			m.open = '['
		}
		if m.open != 0 {
			lit += string(m.open)
		}
		m.lit = jsonscan.NewLiteral(lit)
		m.litLen = len(lit)
	}
}

func newPlanMember(p *jsonPlan) planMember {
	flat := p.kind == planLeaf && !p.repeated
	return planMember{key: p.key, plan: p, flat: flat, str: flat && p.conv == convString, fast: p.fastKind()}
}

// fastKind is how the fast path (JSONShredder.fastRecord) reads a field's
// value straight from the record's bytes.
type fastKind uint8

const (
	fastNone      fastKind = iota // a record with the field cannot take the fast path
	fastString                    // STRING, ENUM
	fastInt32                     // convInt on INT32
	fastInt64                     // convInt on INT64
	fastDouble                    // DOUBLE
	fastBool                      // BOOLEAN
	fastTimestamp                 // TIMESTAMP from an RFC 3339 string
	fastGroup                     // a group whose fields all have a fast kind
	fastList                      // a 3-level LIST of single leaves with a fast kind
	fastUUID                      // UUID from its canonical string
	fastDecimal                   // DECIMAL on INT32 or INT64, from a number or a numeric string
)

// maxFastDepth bounds the nesting the fast path takes on: far below the
// Scanner's limit, so that the fast path never accepts a record the
// Scanner would reject as too deep.
const maxFastDepth = 64

// fastKind returns how the fast path reads p, a field that is not the
// root. Only shapes whose every value the walk would convert the same way
// from the same bytes qualify; anything else keeps records on the walk.
func (p *jsonPlan) fastKind() fastKind {
	if p.repeated {
		return fastNone
	}
	switch p.kind {
	case planLeaf:
		return p.leafFastKind()
	case planGroup:
		if p.fastDepth() > maxFastDepth {
			return fastNone
		}
		for _, m := range p.members {
			if m.fast == fastNone {
				return fastNone
			}
		}
		return fastGroup
	case planList:
		if p.twoLevel || !p.elemFlat || p.elem.leafFastKind() == fastNone {
			return fastNone
		}
		return fastList
	}
	return fastNone
}

// leafFastKind is fastKind for a leaf, ignoring its repetition.
func (p *jsonPlan) leafFastKind() fastKind {
	if p.kind != planLeaf {
		return fastNone
	}
	switch p.conv {
	case convString:
		return fastString
	case convInt:
		if p.col.Leaf.Physical == meta.TypeInt32 {
			return fastInt32
		}
		return fastInt64
	case convDouble:
		return fastDouble
	case convBool:
		return fastBool
	case convTimestamp:
		return fastTimestamp
	case convTimestampMillis:
		return fastTimestampMillis
	case convUUID:
		return fastUUID
	case convDecimal:
		switch p.col.Leaf.Physical {
		case meta.TypeInt32, meta.TypeInt64:
			return fastDecimal
		}
	}
	return fastNone
}

// fastDepth returns the nesting of objects and arrays under p, a group.
func (p *jsonPlan) fastDepth() int {
	d := 0
	for _, f := range p.fields {
		switch f.kind {
		case planGroup:
			d = max(d, f.fastDepth())
		case planList:
			d = max(d, 1)
		}
	}
	return d + 1
}

func appendLeafColumns(dst []*Column, n *schema.Node, cols []*Column) []*Column {
	if n.IsLeaf() {
		return append(dst, cols[n.Column])
	}
	for _, f := range n.Fields {
		dst = appendLeafColumns(dst, f, cols)
	}
	return dst
}

func (p *jsonPlan) compileList(cols []*Column) error {
	elem := p.node.ListElement()
	if elem == nil {
		return fmt.Errorf("field %s: unsupported LIST shape", p.node.PathString())
	}
	middle := p.node.Fields[0]
	p.kind = planList
	p.innerDef, p.innerRep = uint8(middle.MaxDef), uint8(middle.MaxRep)
	p.twoLevel = elem == middle
	var err error
	if p.elem, err = compilePlan(elem, cols); err != nil {
		return err
	}
	p.elemFlat = p.elem.kind == planLeaf && !p.elem.repeated
	p.elemFast = p.elem.leafFastKind()
	return nil
}

func (p *jsonPlan) compileMap(cols []*Column) error {
	key, value := p.node.MapKeyValue()
	if key == nil {
		return fmt.Errorf("field %s: unsupported MAP shape", p.node.PathString())
	}
	if !key.IsLeaf() {
		return fmt.Errorf("field %s: MAP key %s is a group; JSON member names can only fill primitive keys", p.node.PathString(), key.Name)
	}
	middle := p.node.Fields[0]
	p.kind = planMap
	p.innerDef, p.innerRep = uint8(middle.MaxDef), uint8(middle.MaxRep)
	var err error
	if p.elem, err = compilePlan(key, cols); err != nil {
		return err
	}
	switch p.elem.conv {
	case convNull, convInterval:
		return fmt.Errorf("field %s: MAP key of type %s cannot come from a JSON member name", p.node.PathString(), p.elem.typeName)
	}
	if value != nil {
		p.value, err = compilePlan(value, cols)
	}
	return err
}

func (p *jsonPlan) compileVariant() error {
	p.kind = planVariant
	for _, f := range p.node.Fields {
		switch {
		case f.Name == "typed_value":
			return fmt.Errorf("field %s: shredded variant columns not supported yet by the JSON shredder", p.node.PathString())
		case f.Name == "metadata" && f.IsLeaf():
			p.metadata = p.cols[indexOf(p.cols, f.Column)]
		case f.Name == "value" && f.IsLeaf():
			p.variantValue = p.cols[indexOf(p.cols, f.Column)]
		}
	}
	if p.metadata == nil || p.variantValue == nil {
		return fmt.Errorf("field %s: VARIANT group needs metadata and value fields", p.node.PathString())
	}
	return nil
}

// indexOf finds the column of leaf index leaf among cols.
func indexOf(cols []*Column, leaf int) int {
	for i, c := range cols {
		if c.Leaf.Column == leaf {
			return i
		}
	}
	return -1
}

// compileLeaf picks the conversion for the leaf's physical and logical type.
func (p *jsonPlan) compileLeaf() error {
	n := p.node
	l := n.Logical
	p.typeName = n.TypeName()
	if l.Kind != schema.None {
		p.typeName = l.String()
	}
	phys := n.Physical
	ok := true
	switch l.Kind {
	case schema.None:
		switch phys {
		case meta.TypeBoolean:
			p.conv = convBool
		case meta.TypeInt32:
			p.conv, p.rng = convInt, intRange{neg: 1 << 31, pos: math.MaxInt32}
		case meta.TypeInt64:
			p.conv, p.rng = convInt, intRange{neg: 1 << 63, pos: math.MaxInt64}
		case meta.TypeInt96:
			p.conv = convInt96
		case meta.TypeFloat:
			p.conv = convFloat
		case meta.TypeDouble:
			p.conv = convDouble
		case meta.TypeByteArray, meta.TypeFixedLenByteArray:
			p.conv = convBinary
		default:
			ok = false
		}
	case schema.Unknown:
		p.conv = convNull
	case schema.String, schema.Enum:
		p.conv, ok = convString, phys == meta.TypeByteArray
	case schema.JSON:
		p.conv, ok = convJSON, phys == meta.TypeByteArray
	case schema.BSON, schema.Geometry, schema.Geography:
		p.conv, ok = convBinary, phys == meta.TypeByteArray
	case schema.UUID:
		p.conv, ok = convUUID, phys == meta.TypeFixedLenByteArray && n.Length == 16
	case schema.Float16:
		p.conv, ok = convFloat16, phys == meta.TypeFixedLenByteArray && n.Length == 2
	case schema.Interval:
		p.conv, ok = convInterval, phys == meta.TypeFixedLenByteArray && n.Length == 12
	case schema.Int:
		p.conv = convInt
		bits := uint(l.BitWidth)
		if l.Signed {
			p.rng = intRange{neg: 1 << (bits - 1), pos: 1<<(bits-1) - 1}
		} else {
			p.rng = intRange{pos: 1<<bits - 1} // bits == 64 wraps to MaxUint64
			if bits == 64 {
				p.rng.pos = math.MaxUint64
			}
		}
		ok = bits >= 8 && bits <= 64 && (phys == meta.TypeInt32 && bits <= 32 || phys == meta.TypeInt64)
	case schema.Decimal:
		p.conv = convDecimal
		ok = l.Precision >= 1 && l.Scale >= 0 && l.Scale <= l.Precision &&
			(phys == meta.TypeInt32 && l.Precision <= 9 || phys == meta.TypeInt64 && l.Precision <= 18 ||
				phys == meta.TypeFixedLenByteArray || phys == meta.TypeByteArray)
	case schema.Date:
		p.conv, ok = convDate, phys == meta.TypeInt32
	case schema.Time:
		p.conv = convTime
		ok = phys == meta.TypeInt32 && l.Unit == schema.Millis || phys == meta.TypeInt64 && (l.Unit == schema.Micros || l.Unit == schema.Nanos)
	case schema.Timestamp:
		p.conv = convTimestamp
		ok = phys == meta.TypeInt64 && l.Unit >= schema.Millis && l.Unit <= schema.Nanos
	default:
		ok = false
	}
	if !ok {
		return fmt.Errorf("field %s: no JSON conversion for %s on %s", n.PathString(), p.typeName, n.TypeName())
	}
	return nil
}
