package reader

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// The columnar API: cursors over the entries of whole column chunks, and a
// JSON assembler that writes records straight from them. Values stay in the
// typed slices their pages decoded into; nothing is boxed per value, so a
// caller that turns rows into bytes (replay, say) pays per page, not per
// value.

// ErrNotColumnar is wrapped by the error of NewJSONAssembler for a shape the
// columnar assembler does not handle (a map whose keys are not strings, a
// shredded VARIANT whose typed_value Rows would refuse); Rows reads those.
var ErrNotColumnar = errors.New("reader: shape not supported by the columnar assembler")

// ColumnCursor walks the entries of one leaf column chunk, page after page:
// each entry has a repetition level, a definition level and, when the
// definition level is the column's maximum, a value. The current entry is
// the next one not consumed; Advance consumes it. A cursor is not safe for
// concurrent use.
type ColumnCursor struct {
	chunk  *ChunkReader
	leaf   *schema.Node
	maxDef uint8
	page   *Page
	rep    []uint8
	def    []uint8
	n      int // entries in the page
	li, vi int // current entry, and the index of its value
	eof    bool
}

// ColumnCursors returns cursors over the chunks of the given leaf columns
// (indexes into Schema().Leaves()) of row group rowGroup, positioned at the
// first entry. They share one memory budget of the size given by
// MaxMemory. Release each when done.
func (f *File) ColumnCursors(rowGroup int, columns []int) ([]*ColumnCursor, error) {
	if rowGroup < 0 || rowGroup >= len(f.md.RowGroups) {
		return nil, fmt.Errorf("reader: row group %d out of range [0, %d)", rowGroup, len(f.md.RowGroups))
	}
	mem := newBudget(f.opts.maxMemory)
	out := make([]*ColumnCursor, 0, len(columns))
	release := func() {
		for _, c := range out {
			c.Release()
		}
	}
	for _, col := range columns {
		if col < 0 || col >= len(f.schema.Leaves()) {
			release()
			return nil, fmt.Errorf("reader: column %d out of range [0, %d)", col, len(f.schema.Leaves()))
		}
		ch, err := f.columnChunk(rowGroup, col, mem)
		if err != nil {
			release()
			return nil, err
		}
		c := &ColumnCursor{chunk: ch, leaf: ch.leaf, maxDef: uint8(ch.leaf.MaxDef)}
		out = append(out, c)
		if err := c.load(); err != nil {
			release()
			return nil, err
		}
	}
	return out, nil
}

// load makes the current entry available, reading pages as needed, or sets
// eof after the last page.
func (c *ColumnCursor) load() error {
	for c.li >= c.n && !c.eof {
		p, err := c.chunk.Next()
		if err == io.EOF {
			c.eof, c.page, c.rep, c.def, c.n, c.li, c.vi = true, nil, nil, nil, 0, 0, 0
			return nil
		}
		if err != nil {
			return err
		}
		c.page, c.rep, c.def, c.n, c.li, c.vi = p, p.Rep, p.Def, p.NumValues, 0, 0
	}
	return nil
}

// Leaf returns the schema leaf of the column.
func (c *ColumnCursor) Leaf() *schema.Node { return c.leaf }

// EOF reports that every entry of the chunk has been consumed.
func (c *ColumnCursor) EOF() bool { return c.eof }

// Rep returns the repetition level of the current entry; 0 at the end.
func (c *ColumnCursor) Rep() uint8 {
	if c.rep == nil || c.eof {
		return 0
	}
	return c.rep[c.li]
}

// Def returns the definition level of the current entry; 0 at the end.
func (c *ColumnCursor) Def() uint8 {
	if c.eof {
		return 0
	}
	if c.def == nil {
		return c.maxDef
	}
	return c.def[c.li]
}

// HasValue reports that the current entry holds a value (its definition
// level is the column's maximum).
func (c *ColumnCursor) HasValue() bool { return !c.eof && c.Def() == c.maxDef }

// Values returns the typed values of the current page and the index of the
// current entry's value among them; valid while HasValue is true, and
// until the cursor leaves the page.
func (c *ColumnCursor) Values() (*Values, int) { return &c.page.Values, c.vi }

// Value returns the current entry's value as a Value of the leaf (a
// struct, not an allocation); valid while HasValue is true, and until the
// cursor leaves the page.
func (c *ColumnCursor) Value() Value { return leafValue(c.leaf, &c.page.Values, c.vi) }

// Int64 returns the current INT64 value; valid while HasValue is true.
func (c *ColumnCursor) Int64() int64 { return c.page.Values.Int64[c.vi] }

// Int32 returns the current INT32 value; valid while HasValue is true.
func (c *ColumnCursor) Int32() int32 { return c.page.Values.Int32[c.vi] }

// Bytes returns the current BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value,
// aliasing the page; valid while HasValue is true, and until the cursor
// leaves the page.
func (c *ColumnCursor) Bytes() []byte { return c.page.Values.Bytes(c.vi) }

// Advance consumes the current entry.
func (c *ColumnCursor) Advance() error {
	// Small enough to be inlined; the last entry of a page and the end of
	// the chunk go to advancePage.
	if c.li+1 < c.n {
		if c.def == nil || c.def[c.li] == c.maxDef {
			c.vi++
		}
		c.li++
		return nil
	}
	return c.advancePage()
}

// advancePage consumes the last entry of a page and loads the next, or
// fails at the end of the chunk.
func (c *ColumnCursor) advancePage() error {
	if c.eof {
		return fmt.Errorf("%w: column %s: entries end before the row group's records do", ErrCorrupt, c.leaf.PathString())
	}
	c.li = c.n
	return c.load()
}

// Release returns the cursor's buffers to the budget. The cursor must not
// be used afterwards.
func (c *ColumnCursor) Release() {
	if c.chunk != nil {
		c.chunk.Release()
	}
	c.page, c.rep, c.def, c.eof = nil, nil, nil, true
}

// jkind is how a node of the JSON assembler renders.
type jkind uint8

const (
	jLeaf    jkind = iota
	jGroup         // an object of its fields
	jList          // a LIST-annotated group, three-level shape
	jMap           // a MAP-annotated group with string keys
	jVariant       // an unshredded VARIANT group
	jRepeat        // a bare repeated field, as an array
)

// jnode is a node of the schema as the assembler walks it.
type jnode struct {
	node     *schema.Node
	kind     jkind
	name     []byte // the quoted field name and a colon
	def, rep uint8  // the node's own definition and repetition levels
	first    *ColumnCursor
	leaves   []*ColumnCursor
	children []*jnode
	elem     *jnode // jList: the element; jMap: the value (nil: none); jRepeat: the element
	rdef     uint8  // jList, jMap: definition level of the repeated group
	rrep     uint8  // jList, jMap: repetition level of the repeated group
	optional bool   // the node is optional
	key      *ColumnCursor
	render   leafRender       // jLeaf: how the value renders
	sv       *shreddedVariant // jShredded: its state (columns_shredded.go)
	ts       tsCache          // renderTimestamp: the last minute written
	unit     schema.TimeUnit  // renderIn: the unit values render in
}

// leafRender selects a leaf's rendering: the common types straight from
// their typed slices, the others through Value.AppendJSON.
type leafRender uint8

const (
	renderValue     leafRender = iota // Value.AppendJSON
	renderInt32                       // signed INT32 without a logical type
	renderInt64                       // signed INT64 without a logical type
	renderDouble                      // DOUBLE
	renderBool                        // BOOLEAN
	renderString                      // BYTE_ARRAY STRING, ENUM or JSON
	renderTimestamp                   // INT64 TIMESTAMP
	renderIn                          // INT64 microseconds in another unit (RenderIn)
)

// renderOf returns the rendering of leaf n.
func renderOf(n *schema.Node) leafRender {
	l := n.Logical
	plainInt := l.Kind == schema.None || (l.Kind == schema.Int && l.Signed)
	switch {
	case n.Physical == meta.TypeInt32 && plainInt:
		return renderInt32
	case n.Physical == meta.TypeInt64 && plainInt:
		return renderInt64
	case n.Physical == meta.TypeInt64 && l.Kind == schema.Timestamp:
		return renderTimestamp
	case n.Physical == meta.TypeDouble:
		return renderDouble
	case n.Physical == meta.TypeBoolean:
		return renderBool
	case n.Physical == meta.TypeByteArray && (l.Kind == schema.String || l.Kind == schema.Enum || l.Kind == schema.JSON):
		return renderString
	}
	return renderValue
}

// JSONAssembler writes the records of a row group as JSON straight from
// column cursors: the form of Value.AppendJSON, except that absent and null
// fields of a group are left out rather than written as null. It handles
// groups, leaves of every type, LIST (three-level and the legacy
// two-level shapes), MAP with string keys, bare repeated fields and VARIANT,
// shredded or not; for any other shape
// NewJSONAssembler fails with ErrNotColumnar.
type JSONAssembler struct {
	fields  []*jnode
	unwrap  bool
	cursors []*ColumnCursor
	extra   []*ColumnCursor // the caller's, read under the same budget
	scratch []byte
	rows    int64 // records in the row group
	done    int64 // records rendered or skipped
	// decimalNumbers renders DECIMAL leaves as JSON numbers
	// (DecimalsAsNumbers).
	decimalNumbers bool
}

// DecimalsAsNumbers makes the assembler render DECIMAL columns as exact
// JSON numbers with the column's scale (Value.AppendDecimalNumber), not as
// the strings of Value.AppendJSON: the form a JSON record held its
// numbers in before they were written to a DECIMAL column. Call it before
// the first Append.
func (a *JSONAssembler) DecimalsAsNumbers() { a.decimalNumbers = true }

// NewJSONAssembler returns an assembler of row group rowGroup of f that
// renders the top-level fields given, in that order. With unwrap and one
// field, a record renders as that field's value alone (a VARIANT payload as
// its JSON, say) rather than as an object. Release it when done.
//
// extra names more leaf columns (indexes into Schema().Leaves()) to read
// under the same memory budget, for the caller to walk beside the records:
// Extra returns their cursors, which the assembler never moves.
func NewJSONAssembler(f *File, rowGroup int, fields []*schema.Node, unwrap bool, extra ...int) (*JSONAssembler, error) {
	if unwrap && len(fields) != 1 {
		return nil, fmt.Errorf("reader: unwrap needs one field, got %d", len(fields))
	}
	if rowGroup < 0 || rowGroup >= len(f.md.RowGroups) {
		return nil, fmt.Errorf("reader: row group %d out of range [0, %d)", rowGroup, len(f.md.RowGroups))
	}
	rows := f.md.RowGroups[rowGroup].NumRows
	if rows <= 0 {
		return &JSONAssembler{unwrap: unwrap}, nil
	}
	var cols []int
	for _, fl := range fields {
		if err := collectLeaves(fl, &cols); err != nil {
			return nil, err
		}
	}
	all, err := f.ColumnCursors(rowGroup, append(cols[:len(cols):len(cols)], extra...))
	if err != nil {
		return nil, err
	}
	cursors := all[:len(cols)]
	byCol := make(map[int]*ColumnCursor, len(cursors))
	for i, c := range cursors {
		byCol[cols[i]] = c
	}
	a := &JSONAssembler{unwrap: unwrap, cursors: cursors, extra: all[len(cols):], rows: rows}
	for _, fl := range fields {
		n, err := buildJNode(fl, byCol)
		if err != nil {
			a.Release()
			return nil, err
		}
		a.fields = append(a.fields, n)
	}
	return a, nil
}

func collectLeaves(n *schema.Node, cols *[]int) error {
	if n.IsLeaf() {
		*cols = append(*cols, n.Column)
		return nil
	}
	for _, c := range n.Fields {
		if err := collectLeaves(c, cols); err != nil {
			return err
		}
	}
	return nil
}

func buildJNode(n *schema.Node, byCol map[int]*ColumnCursor) (*jnode, error) {
	j := &jnode{node: n, def: uint8(n.MaxDef), rep: uint8(n.MaxRep), optional: n.Repetition == schema.Optional}
	j.name = jsontext.AppendString(nil, n.Name)
	j.name = append(j.name, ':')
	var leaves []int
	if err := collectLeaves(n, &leaves); err != nil {
		return nil, err
	}
	for _, col := range leaves {
		j.leaves = append(j.leaves, byCol[col])
	}
	j.first = j.leaves[0]
	unsupported := func(why string) (*jnode, error) {
		return nil, fmt.Errorf("%w: %s: %s", ErrNotColumnar, n.PathString(), why)
	}
	switch {
	case n.IsLeaf():
		j.kind, j.render = jLeaf, renderOf(n)
		if n.Repetition == schema.Repeated {
			// A bare repeated leaf: an array of its values.
			el := *j
			el.kind = jLeaf
			j.kind, j.elem = jRepeat, &el
		}
		return j, nil
	case n.Logical.Kind == schema.Variant:
		if n.Field("typed_value") != nil {
			return buildShredded(j, n, byCol)
		}
		if len(n.Fields) != 2 || n.Field("metadata") == nil || n.Field("value") == nil ||
			!n.Field("metadata").IsLeaf() || !n.Field("value").IsLeaf() {
			return unsupported("a VARIANT group of other fields")
		}
		j.kind = jVariant
		// leaves in schema order; make leaves[0] the metadata.
		if n.Fields[0].Name != "metadata" {
			j.leaves[0], j.leaves[1] = j.leaves[1], j.leaves[0]
		}
		return j, nil
	case n.Logical.Kind == schema.List:
		el := n.ListElement()
		if el == nil {
			return unsupported("a list without an element")
		}
		r := n.Fields[0]
		j.kind, j.rdef, j.rrep = jList, uint8(r.MaxDef), uint8(r.MaxRep)
		e, err := buildJNode(el, byCol)
		if err != nil {
			return nil, err
		}
		if el == r && e.kind == jRepeat {
			// Two-level: the repeated field is the element, one
			// occurrence of it per item.
			e = e.elem
		}
		j.elem = e
	case n.Logical.Kind == schema.Map || n.HasLegacy && n.Legacy == meta.ConvertedMapKeyValue:
		k, v := n.MapKeyValue()
		if k == nil || !k.IsLeaf() || k.Repetition != schema.Required {
			return unsupported("a map without a required key")
		}
		switch k.Logical.Kind {
		case schema.String, schema.Enum, schema.JSON:
		default:
			return unsupported("a map whose keys are not strings")
		}
		r := n.Fields[0]
		j.kind, j.rdef, j.rrep = jMap, uint8(r.MaxDef), uint8(r.MaxRep)
		j.key = byCol[k.Column]
		if v != nil {
			e, err := buildJNode(v, byCol)
			if err != nil {
				return nil, err
			}
			j.elem = e
		}
	default:
		j.kind = jGroup
		for _, c := range n.Fields {
			cj, err := buildJNode(c, byCol)
			if err != nil {
				return nil, err
			}
			j.children = append(j.children, cj)
		}
	}
	if n.Repetition == schema.Repeated {
		el := *j
		j.kind, j.elem = jRepeat, &el
	}
	return j, nil
}

// Extra returns the cursors of the extra columns, in the order given.
func (a *JSONAssembler) Extra() []*ColumnCursor { return a.extra }

// Release returns the assembler's buffers, the extra cursors' included, to
// the budget.
func (a *JSONAssembler) Release() {
	for _, c := range a.cursors {
		c.Release()
	}
	for _, c := range a.extra {
		c.Release()
	}
}

// Done reports that every record of the row group has been read.
func (a *JSONAssembler) Done() bool {
	return a.done >= a.rows
}

// Append appends the next record's JSON to dst. It returns io.EOF after
// the last record.
func (a *JSONAssembler) Append(dst []byte) ([]byte, error) {
	if a.Done() {
		return dst, io.EOF
	}
	for _, c := range a.cursors {
		if c.eof || c.Rep() != 0 {
			return dst, fmt.Errorf("%w: column %s: entries out of step with the row group's %d records at record %d", ErrCorrupt, c.leaf.PathString(), a.rows, a.done)
		}
	}
	a.done++
	var err error
	if a.unwrap {
		f := a.fields[0]
		if f.node.Repetition != schema.Required && f.kind != jRepeat && f.first.Def() < f.def {
			if err := skip(f); err != nil {
				return dst, err
			}
			return append(dst, "null"...), nil
		}
		return a.value(dst, f)
	}
	dst = append(dst, '{')
	if dst, err = a.fieldsOf(dst, a.fields); err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// Skip consumes the next record without rendering it.
func (a *JSONAssembler) Skip() error {
	var err error
	a.scratch, err = a.Append(a.scratch[:0])
	return err
}

// skip consumes one entry of each leaf under n: an absent n, or an empty
// list or map.
func skip(n *jnode) error {
	for _, c := range n.leaves {
		if err := c.Advance(); err != nil {
			return err
		}
	}
	return nil
}

// fieldsOf writes the present fields of a group, comma-separated.
func (a *JSONAssembler) fieldsOf(dst []byte, fields []*jnode) ([]byte, error) {
	var err error
	comma := false
	for _, f := range fields {
		if f.optional && f.first.Def() < f.def {
			if err := skip(f); err != nil {
				return dst, err
			}
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(dst, f.name...)
		if dst, err = a.value(dst, f); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// value writes the value of a present n.
func (a *JSONAssembler) value(dst []byte, n *jnode) ([]byte, error) {
	var err error
	switch n.kind {
	case jLeaf:
		c := n.first
		if !c.HasValue() {
			// A required leaf without a value: levels out of step.
			if c.eof {
				return dst, c.Advance()
			}
			dst = append(dst, "null"...)
			return dst, c.Advance()
		}
		vals, i := &c.page.Values, c.vi
		switch n.render {
		case renderInt32:
			dst = appendInt(dst, int64(vals.Int32[i]))
			return dst, c.Advance()
		case renderInt64:
			dst = appendInt(dst, vals.Int64[i])
			return dst, c.Advance()
		case renderDouble:
			dst = appendDouble(dst, vals.Double[i])
			return dst, c.Advance()
		case renderBool:
			dst = strconv.AppendBool(dst, vals.Bool[i])
			return dst, c.Advance()
		case renderString:
			dst = appendJSONString(dst, vals.Data[vals.Offsets[i]:vals.Offsets[i+1]])
			return dst, c.Advance()
		case renderTimestamp:
			l := c.leaf.Logical
			dst = n.ts.append(dst, vals.Int64[i], l.Unit, l.UTC)
			return dst, c.Advance()
		case renderIn:
			dst = n.appendIn(dst, vals.Int64[i])
			return dst, c.Advance()
		}
		v := c.Value()
		if v.kind == KindBytes && v.node.Logical.Kind == schema.Decimal {
			if err := checkDecimal(v.bytes, v.node.Logical.Precision); err != nil {
				return dst, fmt.Errorf("%w: column %s: %w", ErrCorrupt, c.leaf.PathString(), err)
			}
		}
		if a.decimalNumbers {
			if out, ok := v.AppendDecimalNumber(dst); ok {
				return out, c.Advance()
			}
		}
		dst = v.AppendJSON(dst)
		return dst, c.Advance()
	case jGroup:
		dst = append(dst, '{')
		if dst, err = a.fieldsOf(dst, n.children); err != nil {
			return dst, err
		}
		return append(dst, '}'), nil
	case jShredded:
		return a.shredded(dst, n)
	case jVariant:
		m, v := n.leaves[0], n.leaves[1]
		if !m.HasValue() {
			return dst, fmt.Errorf("%w: variant %s: metadata is null", ErrCorrupt, n.node.PathString())
		}
		value := variantNull
		if v.HasValue() {
			value = v.Bytes()
		}
		start := len(dst)
		out, err := variant.AppendJSON(dst, m.Bytes(), value)
		if err != nil {
			return dst[:start], fmt.Errorf("%w: variant %s: %w", ErrCorrupt, n.node.PathString(), err)
		}
		return out, skip(n)
	case jList:
		dst = append(dst, '[')
		if n.first.Def() < n.rdef {
			if err := skip(n); err != nil {
				return dst, err
			}
			return append(dst, ']'), nil
		}
		for i := 0; ; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			e := n.elem
			if e.optional && e.first.Def() < e.def {
				dst = append(dst, "null"...)
				err = skip(e)
			} else {
				dst, err = a.value(dst, e)
			}
			if err != nil {
				return dst, err
			}
			if n.first.eof || n.first.Rep() != n.rrep {
				break
			}
		}
		return append(dst, ']'), nil
	case jMap:
		dst = append(dst, '{')
		if n.first.Def() < n.rdef {
			if err := skip(n); err != nil {
				return dst, err
			}
			return append(dst, '}'), nil
		}
		for i := 0; ; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			k := n.key
			if !k.HasValue() {
				return dst, fmt.Errorf("%w: map %s: null key", ErrCorrupt, n.node.PathString())
			}
			dst = jsontext.AppendString(dst, string(k.Bytes()))
			dst = append(dst, ':')
			if err := k.Advance(); err != nil {
				return dst, err
			}
			e := n.elem
			switch {
			case e == nil:
				dst = append(dst, "null"...)
			case e.optional && e.first.Def() < e.def:
				dst = append(dst, "null"...)
				err = skip(e)
			default:
				dst, err = a.value(dst, e)
			}
			if err != nil {
				return dst, err
			}
			if k.eof || k.Rep() != n.rrep {
				break
			}
		}
		return append(dst, '}'), nil
	case jRepeat:
		dst = append(dst, '[')
		e := n.elem
		if n.first.Def() < n.def {
			if err := skip(n); err != nil {
				return dst, err
			}
			return append(dst, ']'), nil
		}
		for i := 0; ; i++ {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = a.value(dst, e); err != nil {
				return dst, err
			}
			if n.first.eof || n.first.Rep() != n.rep {
				break
			}
		}
		return append(dst, ']'), nil
	}
	return dst, fmt.Errorf("reader: %s: unknown node kind", strings.Join(n.node.Path, "."))
}
