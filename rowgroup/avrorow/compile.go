package avrorow

import (
	"fmt"
	"slices"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// avroCode is the step an avroOp takes.
type avroCode uint8

const (
	// Steps that read a value into a column. The name says the writer's
	// type and the column's physical type.
	avroBool avroCode = iota
	avroIntI32
	avroIntI64
	avroIntF32
	avroIntF64
	avroLongI64
	avroLongF32
	avroLongF64
	avroMillisMicros // a millisecond timestamp long into a TIMESTAMP(MICROS) INT64
	avroNanosMicros  // a nanosecond timestamp long into a TIMESTAMP(MICROS) INT64, floored
	avroTimeMicros   // a time-millis int into a TIME(MICROS) INT64
	avroFloatF32
	avroFloatF64
	avroDoubleF64
	avroBytes      // bytes or string into BYTE_ARRAY
	avroString     // bytes or string into a STRING BYTE_ARRAY: UTF-8 checked
	avroDecimal    // bytes into a BYTE_ARRAY DECIMAL: empty is zero
	avroUUIDText   // bytes or string, RFC 4122 text, into FIXED_LEN_BYTE_ARRAY(16)
	avroFixed      // fixed into FIXED_LEN_BYTE_ARRAY
	avroEnum       // enum index into the symbol's bytes
	avroNull       // nothing to read; nulls into cols at level def
	avroRecord     // fields in order
	avroUnion      // writer union: branch index, then branches[i]
	avroToUnion    // a reader union's member: nulls into the other members, then items
	avroArray      // blocks of items
	avroMap        // blocks of key and value
	avroDefault    // items decoded from value, the reader field's default
	avroSkipLong   // a writer field the reader lacks: int, long, enum, boolean
	avroSkipFixedN // float, double, fixed: size bytes
	avroSkipBytes  // bytes, string
	avroSkipRecord
	avroSkipUnion
	avroSkipArray
	avroSkipMap
)

// avroOp is one compiled step of a Decoder.
type avroOp struct {
	code avroCode
	col  *rowgroup.Column
	def  uint8 // avroNull: the level of the nulls; avroArray, avroMap: of an empty collection
	rep  uint8 // avroArray, avroMap: the repetition level of items after the first
	size int   // fixed, skipped fixed-size values
	path string

	fields   []*avroOp          // record
	branches []*avroOp          // union
	items    *avroOp            // array items, map values, toUnion's member, default
	key      *rowgroup.Column   // map keys
	cols     []*rowgroup.Column // avroNull
	others   []nullRun          // avroToUnion
	symbols  [][]byte           // enum: reader symbol of each writer index
	value    []byte             // avroDefault
	minSize  int                // fewest bytes a value takes (0 for null and empty records)
}

// nullRun is a set of columns that take a null at one level.
type nullRun struct {
	cols []*rowgroup.Column
	def  uint8
}

type avroCompiler struct {
	g *rowgroup.RowGroup
}

// compileRoot matches the reader schema's Parquet fields with the row
// group's top-level fields, and compiles the resolution.
func (c *avroCompiler) compileRoot(res *avro.Resolution) (*avroOp, error) {
	r := res.Reader
	want, err := (&avro.Schema{Root: r}).Parquet()
	if err != nil {
		return nil, err
	}
	// The row group may hold the millisecond timestamps in microseconds,
	// as a table's files do (schema.WidenMillis): the decoder multiplies.
	wide, _, err := schema.WidenMillis(want)
	if err != nil {
		return nil, err
	}
	// And the nanosecond ones too (schema.NarrowNanos, with
	// table.timestamp_precision micros): the decoder floors.
	both, _, err := schema.NarrowNanos(wide)
	if err != nil {
		return nil, err
	}
	// And the times of day in milliseconds in INT64 microseconds
	// (schema.WidenTimeMillis), Iceberg's time: the decoder multiplies.
	shapes := []*schema.Schema{want, wide, both}
	for _, s := range []*schema.Schema{wide, both} {
		timed, changed, err := schema.WidenTimeMillis(s)
		if err != nil {
			return nil, err
		}
		if changed {
			shapes = append(shapes, timed)
		}
	}
	top := c.g.Schema()
	for i, f := range want.Fields() {
		got := top.Lookup(f.Name)
		if got == nil {
			return nil, fmt.Errorf("the row group's schema has no field %s of the Avro schema", f.Name)
		}
		if !slices.ContainsFunc(shapes, func(s *schema.Schema) bool { return s.Fields()[i].SameShape(got) }) {
			return nil, fmt.Errorf("field %s of the row group's schema is not the Avro schema's Parquet field", f.Name)
		}
	}
	if r.Kind != avro.Record {
		return c.compile(res, top.Lookup(avro.ValueField), "")
	}
	if res.Writer.Kind != avro.Record {
		return nil, fmt.Errorf("a writer schema of type %s cannot be read as record %s", res.Writer.Kind, r.Name)
	}
	return c.record(res, func(name string) *schema.Node { return top.Lookup(name) }, "")
}

func (c *avroCompiler) leaves(n *schema.Node, out []*rowgroup.Column) []*rowgroup.Column {
	if n.IsLeaf() {
		return append(out, c.g.Column(n.Column))
	}
	for _, f := range n.Fields {
		out = c.leaves(f, out)
	}
	return out
}

func (c *avroCompiler) nulls(n *schema.Node, def int) *avroOp {
	return &avroOp{code: avroNull, cols: c.leaves(n, nil), def: uint8(def)}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// compile compiles res, whose reader type's values go to node n.
func (c *avroCompiler) compile(res *avro.Resolution, n *schema.Node, path string) (*avroOp, error) {
	w, r := res.Writer, res.Reader
	if w.Kind == avro.Union {
		op := &avroOp{code: avroUnion, path: path, minSize: 1}
		for _, b := range res.Branches {
			bop, err := c.compile(b, n, path)
			if err != nil {
				return nil, err
			}
			op.branches = append(op.branches, bop)
		}
		return op, nil
	}
	if r.Kind == avro.Union {
		return c.intoUnion(res, n, path)
	}
	if r.Kind == avro.Null {
		return c.nulls(n, n.MaxDef-1), nil
	}
	switch r.Kind {
	case avro.Record:
		return c.record(res, n.Field, path)
	case avro.Array:
		el := n.Fields[0].Fields[0]
		items, err := c.compile(res.Items, el, path+"[]")
		if err != nil {
			return nil, err
		}
		return &avroOp{code: avroArray, path: path, items: items, cols: c.leaves(n, nil),
			def: uint8(n.MaxDef), rep: uint8(n.Fields[0].MaxRep), minSize: 1}, nil
	case avro.Map:
		kv := n.Fields[0]
		values, err := c.compile(res.Values, kv.Fields[1], path+"{}")
		if err != nil {
			return nil, err
		}
		return &avroOp{code: avroMap, path: path, items: values, key: c.g.Column(kv.Fields[0].Column),
			cols: c.leaves(n, nil), def: uint8(n.MaxDef), rep: uint8(kv.MaxRep), minSize: 1}, nil
	}
	return c.leaf(res, n, path)
}

// intoUnion compiles a writer value that is not a union into the reader
// union's branch res.ReaderBranch.
func (c *avroCompiler) intoUnion(res *avro.Resolution, n *schema.Node, path string) (*avroOp, error) {
	r := res.Reader
	b := r.Branches[res.ReaderBranch]
	if b.Kind == avro.Null {
		return c.nulls(n, n.MaxDef-1), nil
	}
	member, nonNull, hasNull := 0, 0, false
	for i, br := range r.Branches {
		if br.Kind == avro.Null {
			hasNull = true
			continue
		}
		if i == res.ReaderBranch {
			member = nonNull
		}
		nonNull++
	}
	if nonNull == 1 && hasNull {
		return c.compile(res.Inner, n, path) // optional X
	}
	m := n.Fields[member]
	inner, err := c.compile(res.Inner, m, join(path, m.Name))
	if err != nil {
		return nil, err
	}
	op := &avroOp{code: avroToUnion, path: path, items: inner, minSize: inner.minSize}
	for i, f := range n.Fields {
		if i != member {
			op.others = append(op.others, nullRun{cols: c.leaves(f, nil), def: uint8(f.MaxDef - 1)})
		}
	}
	return op, nil
}

// record compiles a record whose reader fields are the nodes field returns.
func (c *avroCompiler) record(res *avro.Resolution, field func(string) *schema.Node, path string) (*avroOp, error) {
	op := &avroOp{code: avroRecord, path: path}
	r := res.Reader
	for _, fr := range res.Fields {
		if fr.Reader < 0 {
			op.fields = append(op.fields, skipOp(fr.Writer.Type, join(path, fr.Writer.Name)))
			continue
		}
		rf := r.Fields[fr.Reader]
		fop, err := c.compile(fr.Resolution, field(rf.Name), join(path, rf.Name))
		if err != nil {
			return nil, err
		}
		op.fields = append(op.fields, fop)
	}
	for _, d := range res.Defaults {
		rf := r.Fields[d.Reader]
		self, err := avro.ResolveTypes(rf.Type, rf.Type)
		if err != nil {
			return nil, err
		}
		inner, err := c.compile(self, field(rf.Name), join(path, rf.Name))
		if err != nil {
			return nil, err
		}
		op.fields = append(op.fields, &avroOp{code: avroDefault, path: join(path, rf.Name), items: inner, value: d.Value})
	}
	for _, f := range op.fields {
		op.minSize += f.minSize
	}
	return op, nil
}

// leaf compiles a primitive, enum or fixed writer value into leaf n.
func (c *avroCompiler) leaf(res *avro.Resolution, n *schema.Node, path string) (*avroOp, error) {
	w := res.Writer
	op := &avroOp{path: path, col: c.g.Column(n.Column), minSize: 1}
	bad := func() (*avroOp, error) {
		return nil, fmt.Errorf("field %s: Avro %s cannot fill Parquet %s %s", path, w.Kind, n.Physical, n.Logical)
	}
	phys := n.Physical
	switch w.Kind {
	case avro.Boolean:
		if phys != meta.TypeBoolean {
			return bad()
		}
		op.code = avroBool
	case avro.Int, avro.Long:
		codes := map[meta.Type]avroCode{meta.TypeInt32: avroIntI32, meta.TypeInt64: avroIntI64, meta.TypeFloat: avroIntF32, meta.TypeDouble: avroIntF64}
		if w.Kind == avro.Long {
			codes = map[meta.Type]avroCode{meta.TypeInt64: avroLongI64, meta.TypeFloat: avroLongF32, meta.TypeDouble: avroLongF64}
		}
		code, ok := codes[phys]
		if !ok {
			return bad()
		}
		op.code = code
		if code == avroLongI64 && millisInMicros(res, n) {
			op.code = avroMillisMicros
		}
		if code == avroLongI64 && nanosInMicros(res, n) {
			op.code = avroNanosMicros
		}
		if code == avroIntI64 && timeMillisInMicros(res, n) {
			op.code = avroTimeMicros
		}
	case avro.Float:
		switch phys {
		case meta.TypeFloat:
			op.code = avroFloatF32
		case meta.TypeDouble:
			op.code = avroFloatF64
		default:
			return bad()
		}
		op.minSize = 4
	case avro.Double:
		if phys != meta.TypeDouble {
			return bad()
		}
		op.code, op.minSize = avroDoubleF64, 8
	case avro.Bytes, avro.String:
		switch {
		case n.Logical.Kind == schema.UUID:
			op.code = avroUUIDText
		case phys != meta.TypeByteArray:
			return bad()
		case n.Logical.Kind == schema.String:
			op.code = avroString
		case n.Logical.Kind == schema.Decimal:
			op.code = avroDecimal
		default:
			op.code = avroBytes
		}
	case avro.Fixed:
		if phys != meta.TypeFixedLenByteArray || int(n.Length) != w.Size {
			return bad()
		}
		op.code, op.size, op.minSize = avroFixed, w.Size, w.Size
	case avro.Enum:
		if phys != meta.TypeByteArray {
			return bad()
		}
		op.code = avroEnum
		for _, i := range res.Symbols {
			op.symbols = append(op.symbols, []byte(res.Reader.Symbols[i]))
		}
	default:
		return bad()
	}
	return op, nil
}

// skipOp compiles skipping a value of writer type t.
func skipOp(t *avro.Type, path string) *avroOp {
	op := &avroOp{path: path, minSize: 1}
	switch t.Kind {
	case avro.Null:
		op.code, op.size, op.minSize = avroSkipFixedN, 0, 0
	case avro.Boolean, avro.Int, avro.Long, avro.Enum:
		op.code = avroSkipLong
	case avro.Float:
		op.code, op.size, op.minSize = avroSkipFixedN, 4, 4
	case avro.Double:
		op.code, op.size, op.minSize = avroSkipFixedN, 8, 8
	case avro.Fixed:
		op.code, op.size, op.minSize = avroSkipFixedN, t.Size, t.Size
	case avro.Bytes, avro.String:
		op.code = avroSkipBytes
	case avro.Record:
		op.code, op.minSize = avroSkipRecord, 0
		for _, f := range t.Fields {
			fop := skipOp(f.Type, join(path, f.Name))
			op.fields = append(op.fields, fop)
			op.minSize += fop.minSize
		}
	case avro.Union:
		op.code = avroSkipUnion
		for _, b := range t.Branches {
			op.branches = append(op.branches, skipOp(b, path))
		}
	case avro.Array:
		op.code, op.items = avroSkipArray, skipOp(t.Items, path+"[]")
	case avro.Map:
		op.code, op.items = avroSkipMap, skipOp(t.Values, path+"{}")
	}
	return op
}

// millisInMicros reports whether a long read as a timestamp in
// milliseconds (the reader's type, which the column was made from, or the
// writer's) goes into a microsecond timestamp column: one that
// schema.WidenMillis made for a table, which takes the value times 1000.
func millisInMicros(res *avro.Resolution, n *schema.Node) bool {
	t := res.Reader
	if t == nil {
		t = res.Writer
	}
	return avro.MillisInMicros(t, n)
}
