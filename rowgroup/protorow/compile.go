package protorow

import (
	"fmt"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/protobuf"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// code is what a value step reads and writes.
type code uint8

const (
	cBool code = iota
	cInt32
	cInt64
	cUint32
	cUint64
	cSint32
	cSint64
	cFixed32
	cFixed64
	cSfixed32
	cSfixed64
	cFloat
	cDouble
	cString
	cBytes
	cEnum
	cMessage         // a message's fields (also a wrapper's and a map entry's)
	cTimestamp       // seconds and nanos into nanoseconds since the epoch
	cTimestampMicros // seconds and nanos into microseconds since the epoch, the nanoseconds below them cut
	cDuration        // seconds and nanos into nanoseconds
	cVariant         // Struct, Value, ListValue, Any, a message without fields
)

// card is how often a field occurs and what its absence writes.
type card uint8

const (
	cardImplicit card = iota // no presence: the default when absent
	cardOptional             // presence: NULL when absent
	cardRequired             // proto2 required: absence rejects the message
	cardList                 // repeated: an empty LIST when absent
	cardMap                  // map: an empty MAP when absent
)

// variantKind is the message a cVariant step reads.
type variantKind uint8

const (
	vEmpty variantKind = iota // a message without fields: {}
	vStruct
	vValue
	vList
	vAny
)

// fieldOp is the compiled step of one field of a message.
type fieldOp struct {
	num     protowire.Number
	index   int // in its message's fields
	code    code
	card    card
	wire    protowire.Type // of one value
	packed  bool           // a repeated scalar: accepts the packed encoding
	oneof   int            // index of its oneof in the message's oneofs, or -1
	col     *rowgroup.Column
	col2    *rowgroup.Column   // cVariant: the value column (col is metadata)
	cols    []*rowgroup.Column // every leaf of the field, for NULLs and empty collections
	nullDef uint8              // cardOptional: the level of a NULL; list and map: of an empty one
	elemRep uint8              // list and map: the repetition level of items after the first
	msg     *msgOp             // cMessage
	names   enumNames          // cEnum
	variant variantKind        // cVariant
	path    string
}

// msgOp is the compiled step of one message type into one group.
type msgOp struct {
	fields []*fieldOp
	dense  []*fieldOp // by field number, for numbers below len(dense)
	sparse map[protowire.Number]*fieldOp
	oneofs [][]int // field indexes of each oneof with more than one member
}

// maxDense bounds the field numbers looked up in a slice; larger ones go
// to a map.
const maxDense = 256

func (m *msgOp) lookup(n protowire.Number) *fieldOp {
	if n >= 0 && int(n) < len(m.dense) {
		return m.dense[n]
	}
	return m.sparse[n]
}

func (m *msgOp) add(f *fieldOp) {
	f.index = len(m.fields)
	m.fields = append(m.fields, f)
	if f.num < maxDense {
		for int(f.num) >= len(m.dense) {
			m.dense = append(m.dense, nil)
		}
		m.dense[f.num] = f
		return
	}
	if m.sparse == nil {
		m.sparse = map[protowire.Number]*fieldOp{}
	}
	m.sparse[f.num] = f
}

// enumNames are the names of an enum's values by number.
type enumNames struct {
	dense  [][]byte // numbers 0 to len-1
	sparse map[int32][]byte
}

func newEnumNames(e protoreflect.EnumDescriptor) enumNames {
	var n enumNames
	vs := e.Values()
	for i := range vs.Len() {
		v := vs.Get(i)
		num := int32(v.Number())
		if num >= 0 && num < maxDense {
			for int(num) >= len(n.dense) {
				n.dense = append(n.dense, nil)
			}
			if n.dense[num] == nil { // the first name of an aliased number
				n.dense[num] = []byte(v.Name())
			}
			continue
		}
		if n.sparse == nil {
			n.sparse = map[int32][]byte{}
		}
		if _, ok := n.sparse[num]; !ok {
			n.sparse[num] = []byte(v.Name())
		}
	}
	return n
}

func (n *enumNames) name(num int32) []byte {
	if num >= 0 && int(num) < len(n.dense) {
		return n.dense[num]
	}
	return n.sparse[num]
}

type compiler struct {
	g *rowgroup.RowGroup
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (c *compiler) leaves(n *schema.Node, out []*rowgroup.Column) []*rowgroup.Column {
	if n.IsLeaf() {
		return append(out, c.g.Column(n.Column))
	}
	for _, f := range n.Fields {
		out = c.leaves(f, out)
	}
	return out
}

// message compiles message type m, whose fields' nodes field returns.
func (c *compiler) message(m protoreflect.MessageDescriptor, field func(string) *schema.Node, path string) (*msgOp, error) {
	op := &msgOp{}
	fs := m.Fields()
	oneofIndex := map[protoreflect.FullName]int{}
	for i := range fs.Len() {
		fd := fs.Get(i)
		n := field(string(fd.Name()))
		if n == nil {
			return nil, fmt.Errorf("field %s: not in the row group's schema", join(path, string(fd.Name())))
		}
		f, err := c.field(fd, n, join(path, string(fd.Name())))
		if err != nil {
			return nil, err
		}
		f.oneof = -1
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() && o.Fields().Len() > 1 {
			k, ok := oneofIndex[o.FullName()]
			if !ok {
				k = len(op.oneofs)
				oneofIndex[o.FullName()] = k
				op.oneofs = append(op.oneofs, nil)
			}
			f.oneof = k
		}
		op.add(f)
		if f.oneof >= 0 {
			op.oneofs[f.oneof] = append(op.oneofs[f.oneof], f.index)
		}
	}
	return op, nil
}

// field compiles field fd into node n, the field's node.
func (c *compiler) field(fd protoreflect.FieldDescriptor, n *schema.Node, path string) (*fieldOp, error) {
	switch {
	case fd.IsMap():
		kv := n.Fields[0]
		entry := &msgOp{}
		key, err := c.value(fd.MapKey(), kv.Fields[0], path+".key")
		if err != nil {
			return nil, err
		}
		key.num, key.card, key.oneof = 1, cardImplicit, -1
		val, err := c.value(fd.MapValue(), kv.Fields[1], path+".value")
		if err != nil {
			return nil, err
		}
		val.num, val.card, val.oneof = 2, cardImplicit, -1
		if fd.MapValue().Kind() == protoreflect.MessageKind {
			val.card, val.cols, val.nullDef = cardOptional, c.leaves(kv.Fields[1], nil), uint8(kv.Fields[1].MaxDef-1)
		}
		entry.add(key)
		entry.add(val)
		return &fieldOp{num: fd.Number(), code: cMessage, card: cardMap, wire: protowire.BytesType, msg: entry,
			cols: c.leaves(n, nil), nullDef: uint8(n.MaxDef), elemRep: uint8(kv.MaxRep), path: path}, nil
	case fd.IsList():
		f, err := c.value(fd, n.Fields[0].Fields[0], path)
		if err != nil {
			return nil, err
		}
		f.card, f.cols, f.nullDef, f.elemRep = cardList, c.leaves(n, nil), uint8(n.MaxDef), uint8(n.Fields[0].MaxRep)
		f.packed = f.wire != protowire.BytesType
		return f, nil
	}
	f, err := c.value(fd, n, path)
	if err != nil {
		return nil, err
	}
	switch {
	case fd.Cardinality() == protoreflect.Required:
		f.card = cardRequired
	case n.Repetition == schema.Optional:
		f.card, f.cols, f.nullDef = cardOptional, c.leaves(n, nil), uint8(n.MaxDef-1)
	default:
		f.card = cardImplicit
	}
	return f, nil
}

// value compiles the step that reads one value of fd's type into node n.
func (c *compiler) value(fd protoreflect.FieldDescriptor, n *schema.Node, path string) (*fieldOp, error) {
	f := &fieldOp{num: fd.Number(), path: path, oneof: -1}
	k := fd.Kind()
	if k == protoreflect.MessageKind {
		m := fd.Message()
		f.wire = protowire.BytesType
		switch protobuf.SpecialOf(m) {
		case protobuf.Timestamp:
			f.code, f.col = cTimestamp, c.g.Column(n.Column)
			if n.Logical.Kind == schema.Timestamp && n.Logical.Unit == schema.Micros {
				// A table's column (schema.NarrowNanos).
				f.code = cTimestampMicros
			}
		case protobuf.Duration:
			f.code, f.col = cDuration, c.g.Column(n.Column)
		case protobuf.Wrapper:
			inner, err := c.value(m.Fields().ByNumber(1), n, path)
			if err != nil {
				return nil, err
			}
			f.code, f.msg = cMessage, &msgOp{}
			f.msg.add(inner)
		case protobuf.AsVariant:
			f.code = cVariant
			f.col, f.col2 = c.g.Column(n.Fields[0].Column), c.g.Column(n.Fields[1].Column)
			switch m.FullName() {
			case "google.protobuf.Struct":
				f.variant = vStruct
			case "google.protobuf.Value":
				f.variant = vValue
			case "google.protobuf.ListValue":
				f.variant = vList
			case "google.protobuf.Any":
				f.variant = vAny
			}
		default:
			msg, err := c.message(m, n.Field, path)
			if err != nil {
				return nil, err
			}
			f.code, f.msg = cMessage, msg
		}
		return f, nil
	}
	if !n.IsLeaf() {
		return nil, fmt.Errorf("field %s: the row group has a group where the message has a %s", path, k)
	}
	f.col = c.g.Column(n.Column)
	switch k {
	case protoreflect.BoolKind:
		f.code, f.wire = cBool, protowire.VarintType
	case protoreflect.Int32Kind:
		f.code, f.wire = cInt32, protowire.VarintType
	case protoreflect.Int64Kind:
		f.code, f.wire = cInt64, protowire.VarintType
	case protoreflect.Uint32Kind:
		f.code, f.wire = cUint32, protowire.VarintType
	case protoreflect.Uint64Kind:
		f.code, f.wire = cUint64, protowire.VarintType
	case protoreflect.Sint32Kind:
		f.code, f.wire = cSint32, protowire.VarintType
	case protoreflect.Sint64Kind:
		f.code, f.wire = cSint64, protowire.VarintType
	case protoreflect.Fixed32Kind:
		f.code, f.wire = cFixed32, protowire.Fixed32Type
	case protoreflect.Sfixed32Kind:
		f.code, f.wire = cSfixed32, protowire.Fixed32Type
	case protoreflect.FloatKind:
		f.code, f.wire = cFloat, protowire.Fixed32Type
	case protoreflect.Fixed64Kind:
		f.code, f.wire = cFixed64, protowire.Fixed64Type
	case protoreflect.Sfixed64Kind:
		f.code, f.wire = cSfixed64, protowire.Fixed64Type
	case protoreflect.DoubleKind:
		f.code, f.wire = cDouble, protowire.Fixed64Type
	case protoreflect.StringKind:
		f.code, f.wire = cString, protowire.BytesType
	case protoreflect.BytesKind:
		f.code, f.wire = cBytes, protowire.BytesType
	case protoreflect.EnumKind:
		f.code, f.wire = cEnum, protowire.VarintType
		f.names = newEnumNames(fd.Enum())
	default:
		return nil, fmt.Errorf("field %s: %s fields are not supported", path, k)
	}
	return f, nil
}
