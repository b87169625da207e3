package avrofmt

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// The columnar Avro encoder: Avro binary written straight from column
// cursors, walking the Avro schema and the Parquet columns it maps to
// (schema/avro's mapping) together, as reader.JSONAssembler walks the
// Parquet schema for JSON. A file whose columns do not have the mapping's
// shape goes through reader.Rows and appendAvro instead.

// anode is an Avro type bound to the Parquet node that holds it.
type anode struct {
	t      *avro.Type
	n      *schema.Node
	def    uint8 // n's definition level: present when the first leaf's is at least this
	first  *reader.ColumnCursor
	leaves []*reader.ColumnCursor

	fields  []*anode // record
	elem    *anode   // array element, map value
	key     *reader.ColumnCursor
	rdef    uint8    // array, map: definition level of the repeated group
	rrep    uint8    // array, map: repetition level of the repeated group
	inner   *anode   // union of null and one type: that type
	members []*anode // other unions: member0, member1, …
	branch  []int    // union: the branch index of inner, or of each member
	null    int      // union: the null branch, or -1
	symbols map[string]int
	div     int64 // long: what values are divided by (millisDivisor); int: 1000 for a time-millis in microseconds
	mul     int64 // long: what values are multiplied by (nanosMultiplier)
}

// avroColumns encodes the records of a row group.
type avroColumns struct {
	root    *anode
	id      uint32
	cursors []*reader.ColumnCursor
}

// newAvroColumns binds schema a to the payload of row group g of f, with
// the extra columns read under the same budget (the envelope's); it
// returns the encoder and the extra cursors, or an error wrapping
// reader.ErrNotColumnar when the columns do not have the mapping's shape.
func newAvroColumns(f *reader.File, g int, a *encoder, extra []int) (*avroColumns, []*reader.ColumnCursor, error) {
	sch := f.Schema()
	var pairs []struct {
		t *avro.Type
		n *schema.Node
	}
	root := a.schema.Root
	if root.Kind == avro.Record {
		for _, fl := range root.Fields {
			n := sch.Lookup(fl.Name)
			if n == nil {
				return nil, nil, fmt.Errorf("%w: no column for Avro field %s", reader.ErrNotColumnar, fl.Name)
			}
			pairs = append(pairs, struct {
				t *avro.Type
				n *schema.Node
			}{fl.Type, n})
		}
	} else {
		n := sch.Lookup(avro.ValueField)
		if n == nil {
			return nil, nil, fmt.Errorf("%w: no column %s", reader.ErrNotColumnar, avro.ValueField)
		}
		pairs = append(pairs, struct {
			t *avro.Type
			n *schema.Node
		}{root, n})
	}
	var cols []int
	for _, p := range pairs {
		leafColumns(p.n, &cols)
	}
	all, err := f.ColumnCursors(g, append(cols[:len(cols):len(cols)], extra...))
	if err != nil {
		return nil, nil, err
	}
	byCol := map[int]*reader.ColumnCursor{}
	for i, c := range all[:len(cols)] {
		byCol[cols[i]] = c
	}
	c := &avroColumns{id: a.id, cursors: all}
	c.root = &anode{t: root}
	for _, p := range pairs {
		an, err := bindAvro(p.t, p.n, byCol, false)
		if err != nil {
			c.Release()
			return nil, nil, err
		}
		c.root.fields = append(c.root.fields, an)
	}
	return c, all[len(cols):], nil
}

func leafColumns(n *schema.Node, cols *[]int) {
	if n.IsLeaf() {
		*cols = append(*cols, n.Column)
		return
	}
	for _, c := range n.Fields {
		leafColumns(c, cols)
	}
}

func (c *avroColumns) Release() {
	for _, cur := range c.cursors {
		cur.Release()
	}
}

// bindAvro binds Avro type t to Parquet node n, which is optional when t
// is the type of a union with null (nullable) and required otherwise.
func bindAvro(t *avro.Type, n *schema.Node, byCol map[int]*reader.ColumnCursor, nullable bool) (*anode, error) {
	a := &anode{t: t, n: n, def: uint8(n.MaxDef), null: -1}
	var cols []int
	leafColumns(n, &cols)
	for _, col := range cols {
		a.leaves = append(a.leaves, byCol[col])
	}
	a.first = a.leaves[0]
	shape := func(why string) (*anode, error) {
		return nil, fmt.Errorf("%w: column %s: %s for Avro %s", reader.ErrNotColumnar, n.PathString(), why, t.Kind)
	}
	want := schema.Required
	if nullable {
		want = schema.Optional
	}
	if t.Kind == avro.Null {
		want = schema.Optional // a field that is always null
	}
	if t.Kind != avro.Union && n.Repetition != want {
		return shape("a column of repetition " + n.Repetition.String())
	}
	leaf := func(phys meta.Type) (*anode, error) {
		if !n.IsLeaf() || n.Physical != phys || n.Repetition == schema.Repeated {
			return shape("not a " + phys.String() + " leaf")
		}
		return a, nil
	}
	switch t.Kind {
	case avro.Null:
		return leaf(meta.TypeInt32)
	case avro.Boolean:
		return leaf(meta.TypeBoolean)
	case avro.Int:
		if avro.TimeMillisInMicros(t, n) {
			a.div = 1000
			return leaf(meta.TypeInt64)
		}
		return leaf(meta.TypeInt32)
	case avro.Long:
		a.div, a.mul = millisDivisor(t, n), nanosMultiplier(t, n)
		return leaf(meta.TypeInt64)
	case avro.Float:
		return leaf(meta.TypeFloat)
	case avro.Double:
		return leaf(meta.TypeDouble)
	case avro.Bytes:
		return leaf(meta.TypeByteArray)
	case avro.String:
		if t.Logical == avro.UUID {
			if !n.IsLeaf() || n.Physical != meta.TypeFixedLenByteArray || n.Length != 16 {
				return shape("not a 16-byte UUID leaf")
			}
			return a, nil
		}
		return leaf(meta.TypeByteArray)
	case avro.Enum:
		a.symbols = make(map[string]int, len(t.Symbols))
		for i, s := range t.Symbols {
			a.symbols[s] = i
		}
		return leaf(meta.TypeByteArray)
	case avro.Fixed:
		if !n.IsLeaf() || n.Physical != meta.TypeFixedLenByteArray || int(n.Length) != t.Size {
			return shape("not a fixed leaf of the same size")
		}
		return a, nil
	case avro.Record:
		if n.IsLeaf() || len(n.Fields) != len(t.Fields) {
			return shape("not a group of the record's fields")
		}
		for _, fl := range t.Fields {
			cn := n.Field(fl.Name)
			if cn == nil {
				return shape("no field " + fl.Name)
			}
			ca, err := bindAvro(fl.Type, cn, byCol, false)
			if err != nil {
				return nil, err
			}
			a.fields = append(a.fields, ca)
		}
		return a, nil
	case avro.Array:
		el := n.ListElement()
		if el == nil || el == n.Fields[0] {
			return shape("not a three-level LIST")
		}
		a.rdef, a.rrep = uint8(n.Fields[0].MaxDef), uint8(n.Fields[0].MaxRep)
		e, err := bindAvro(t.Items, el, byCol, false)
		if err != nil {
			return nil, err
		}
		a.elem = e
		return a, nil
	case avro.Map:
		k, v := n.MapKeyValue()
		if k == nil || v == nil || !k.IsLeaf() || k.Physical != meta.TypeByteArray || k.Repetition != schema.Required {
			return shape("not a MAP of required string keys")
		}
		a.rdef, a.rrep, a.key = uint8(n.Fields[0].MaxDef), uint8(n.Fields[0].MaxRep), byCol[k.Column]
		e, err := bindAvro(t.Values, v, byCol, false)
		if err != nil {
			return nil, err
		}
		a.elem = e
		return a, nil
	case avro.Union:
		var members []int
		for i, b := range t.Branches {
			if b.Kind == avro.Null {
				a.null = i
			} else {
				members = append(members, i)
			}
		}
		if (a.null >= 0) != (n.Repetition == schema.Optional) || n.Repetition == schema.Repeated {
			return shape("a union whose column is optional exactly when it has null")
		}
		switch {
		case len(members) == 0:
			return leaf(meta.TypeInt32)
		case len(members) == 1 && a.null >= 0:
			in, err := bindAvro(t.Branches[members[0]], n, byCol, true)
			if err != nil {
				return nil, err
			}
			a.inner, a.branch = in, members
			return a, nil
		}
		if n.IsLeaf() || len(n.Fields) != len(members) {
			return shape("not a group of one field per branch")
		}
		for i, bi := range members {
			mn := n.Field(fmt.Sprintf("member%d", i))
			if mn == nil || mn.Repetition != schema.Optional {
				return shape(fmt.Sprintf("no optional member%d", i))
			}
			m, err := bindAvro(t.Branches[bi], mn, byCol, true)
			if err != nil {
				return nil, err
			}
			a.members = append(a.members, m)
		}
		a.branch = members
		return a, nil
	}
	return shape("an Avro type without a mapping")
}

// skipAll consumes one entry of each leaf under a: an absent value.
func skipAll(a *anode) error {
	for _, c := range a.leaves {
		if err := c.Advance(); err != nil {
			return err
		}
	}
	return nil
}

// present says whether a's optional column holds a value here.
func (a *anode) present() bool { return !a.first.EOF() && a.first.Def() >= a.def }

// AppendNext appends the next record in the Confluent wire format.
func (c *avroColumns) AppendNext(dst []byte) ([]byte, error) {
	dst = schemaregistry.AppendWire(dst, c.id)
	var err error
	for _, f := range c.root.fields {
		if dst, err = encodeAvro(dst, f); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// SkipNext consumes the next record.
func (c *avroColumns) SkipNext() error {
	for _, f := range c.root.fields {
		if err := skipAll(f); err != nil {
			return err
		}
	}
	return nil
}

// encodeAvro appends the value at a's cursors, which is present unless a
// is a union with null.
func encodeAvro(dst []byte, a *anode) ([]byte, error) {
	t := a.t
	if t.Kind == avro.Union {
		return encodeUnion(dst, a)
	}
	if t.Kind == avro.Null {
		return dst, skipAll(a)
	}
	c := a.first
	if t.Kind != avro.Record && t.Kind != avro.Array && t.Kind != avro.Map && !c.HasValue() {
		return dst, fmt.Errorf("%w: column %s: null for the non-nullable Avro type %s", reader.ErrCorrupt, a.n.PathString(), t.Kind)
	}
	var err error
	switch t.Kind {
	case avro.Boolean:
		v, i := c.Values()
		if v.Bool[i] {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
	case avro.Int:
		if a.div > 1 {
			ms, err := timeMillisBack(c.Int64(), a.n.PathString())
			if err != nil {
				return dst, err
			}
			dst = avro.AppendLong(dst, ms)
		} else {
			dst = avro.AppendLong(dst, int64(c.Int32()))
		}
	case avro.Long:
		v := c.Int64()
		if a.div > 1 {
			v /= a.div
		}
		if a.mul > 1 {
			v = schema.NanosBack(v, a.mul)
		}
		dst = avro.AppendLong(dst, v)
	case avro.Float:
		v, i := c.Values()
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v.Float[i]))
	case avro.Double:
		v, i := c.Values()
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Double[i]))
	case avro.Bytes:
		b := c.Bytes()
		dst = append(avro.AppendLong(dst, int64(len(b))), b...)
	case avro.String:
		b := c.Bytes()
		if t.Logical == avro.UUID {
			dst = avro.AppendLong(dst, 36)
			for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
				if i > 0 {
					dst = append(dst, '-')
				}
				dst = hex.AppendEncode(dst, b[part[0]:part[1]])
			}
		} else {
			dst = append(avro.AppendLong(dst, int64(len(b))), b...)
		}
	case avro.Enum:
		i, ok := a.symbols[string(c.Bytes())]
		if !ok {
			return dst, fmt.Errorf("column %s: %q is not a symbol of enum %s", a.n.PathString(), c.Bytes(), t.Name)
		}
		dst = avro.AppendLong(dst, int64(i))
	case avro.Fixed:
		dst = append(dst, c.Bytes()...)
	case avro.Record:
		for _, f := range a.fields {
			if dst, err = encodeAvro(dst, f); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case avro.Array, avro.Map:
		return encodeBlocks(dst, a)
	}
	return dst, c.Advance()
}

// encodeBlocks appends an array or a map: one block of its items (their
// count first), then the empty block.
func encodeBlocks(dst []byte, a *anode) ([]byte, error) {
	if a.first.EOF() || a.first.Def() < a.rdef {
		return append(dst, 0), skipAll(a)
	}
	start := len(dst)
	var err error
	n := 0
	for {
		if a.key != nil {
			k := a.key
			if !k.HasValue() {
				return dst, fmt.Errorf("%w: map %s: null key", reader.ErrCorrupt, a.n.PathString())
			}
			b := k.Bytes()
			dst = append(avro.AppendLong(dst, int64(len(b))), b...)
			if err := k.Advance(); err != nil {
				return dst, err
			}
		}
		if dst, err = encodeAvro(dst, a.elem); err != nil {
			return dst, err
		}
		n++
		if a.first.EOF() || a.first.Rep() != a.rrep {
			break
		}
	}
	// The count goes before the items: move them up behind it.
	var hdr [binary.MaxVarintLen64]byte
	h := avro.AppendLong(hdr[:0], int64(n))
	dst = append(dst, h...)
	copy(dst[start+len(h):], dst[start:len(dst)-len(h)])
	copy(dst[start:], h)
	return append(dst, 0), nil
}

// encodeUnion appends a union: the branch index, then the value.
func encodeUnion(dst []byte, a *anode) ([]byte, error) {
	if a.null >= 0 && !a.present() {
		return avro.AppendLong(dst, int64(a.null)), skipAll(a)
	}
	if a.inner != nil {
		return encodeAvro(avro.AppendLong(dst, int64(a.branch[0])), a.inner)
	}
	if len(a.members) == 0 {
		return dst, skipAll(a) // a union of null alone: always null
	}
	chosen := -1
	var err error
	for i, m := range a.members {
		if chosen < 0 && m.present() {
			chosen = i
			dst = avro.AppendLong(dst, int64(a.branch[i]))
			if dst, err = encodeAvro(dst, m); err != nil {
				return dst, err
			}
			continue
		}
		if err := skipAll(m); err != nil {
			return dst, err
		}
	}
	if chosen < 0 {
		if a.null < 0 {
			return dst, fmt.Errorf("%w: union %s: no member is set", reader.ErrCorrupt, a.n.PathString())
		}
		dst = avro.AppendLong(dst, int64(a.null))
	}
	return dst, nil
}
