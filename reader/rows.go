package reader

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// RowsOption configures File.Rows.
type RowsOption func(*rowsConfig) error

type rowsConfig struct {
	columns   []string
	rowGroups []int
	filter    *Filter
}

// Columns projects the rows onto the fields at the given dotted paths: a
// group path selects every leaf below it, so "payload" keeps the whole
// group and "payload.user.id" one leaf. Groups keep only their selected
// fields. Without Columns every column is read.
func Columns(paths ...string) RowsOption {
	return func(c *rowsConfig) error {
		c.columns = append(c.columns, paths...)
		return nil
	}
}

// RowGroups restricts the rows to the given row groups, read in the given
// order. Without it every row group is read.
func RowGroups(indexes ...int) RowsOption {
	return func(c *rowsConfig) error {
		c.rowGroups = append(c.rowGroups, indexes...)
		return nil
	}
}

// Where skips the row groups and pages that cannot hold a row matching f,
// judged by the chunk statistics and the page index. Rows that survive
// are then checked one by one, so Next returns exactly the matching rows.
// The filter's column need not be projected.
func Where(f Filter) RowsOption {
	return func(c *rowsConfig) error {
		c.filter = &f
		return nil
	}
}

// plan is the projected schema: the nodes on the path to a selected leaf.
type plan struct {
	node     *schema.Node
	children []*plan
	index    int // position among the parent's children
	column   int // leaf column index, -1 for groups

	// Leaves only: the plans from the top-level field down to the leaf,
	// and per repetition depth the index of the current list element
	// while the leaf's entries are inserted into a record.
	path []*plan
	idx  []int
	// pack, when set, says that the leaf's list is held packed.
	pack *packing
}

// Rows iterates records of a file. It is not safe for concurrent use.
type Rows struct {
	f      *File
	root   *plan
	leaves []*plan // projected leaves, in column order
	filter *compiledFilter
	groups []int

	g          int   // index into groups of the current row group
	row        int64 // next row of the current row group
	rows       int64 // rows in the current row group
	skip       []rowRange
	cols       []*cursor
	arena      []byte
	vb         variant.Builder
	fcol       *cursor // the filter's column
	filterPlan *plan

	mem     *budget // the read's memory budget
	recHeld int64   // bytes of the record being assembled, charged to mem
	hint    packHint
}

// Rows returns an iterator over the records of the file, shaped by opts.
func (f *File) Rows(opts ...RowsOption) (*Rows, error) {
	var cfg rowsConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
	}
	leaves := f.schema.Leaves()
	selected := make([]bool, len(leaves))
	if len(cfg.columns) == 0 {
		for i := range selected {
			selected[i] = true
		}
	}
	for _, p := range cfg.columns {
		n := f.schema.Lookup(strings.Split(p, ".")...)
		if n == nil {
			n = f.schema.Leaf(p)
		}
		if n == nil {
			return nil, fmt.Errorf("reader: projection: no column %q", p)
		}
		markLeaves(n, selected)
	}
	r := &Rows{f: f, mem: newBudget(f.opts.maxMemory)}
	if cfg.filter != nil {
		cf, err := compileFilter(f.schema, *cfg.filter)
		if err != nil {
			return nil, fmt.Errorf("reader: %w", err)
		}
		r.filter = cf
	}
	r.root = &plan{column: -1}
	r.root.children = buildPlan(f.schema.Fields(), selected, nil, &r.leaves)
	for _, l := range r.leaves {
		l.pack = packingOf(l)
	}
	if r.filter != nil {
		// The filter's column is read, whether projected or not, so that
		// each row can be checked.
		only := make([]bool, len(leaves))
		only[r.filter.leaf.Column] = true
		var fl []*plan
		buildPlan(f.schema.Fields(), only, nil, &fl)
		r.filterPlan = fl[0]
	}
	if cfg.rowGroups == nil {
		for i := range f.md.RowGroups {
			r.groups = append(r.groups, i)
		}
	} else {
		for _, g := range cfg.rowGroups {
			if g < 0 || g >= len(f.md.RowGroups) {
				return nil, fmt.Errorf("reader: row group %d out of range [0, %d)", g, len(f.md.RowGroups))
			}
		}
		r.groups = cfg.rowGroups
	}
	r.g = -1
	return r, nil
}

func markLeaves(n *schema.Node, selected []bool) {
	if n.IsLeaf() {
		selected[n.Column] = true
		return
	}
	for _, c := range n.Fields {
		markLeaves(c, selected)
	}
}

func buildPlan(fields []*schema.Node, selected []bool, parents []*plan, leaves *[]*plan) []*plan {
	var out []*plan
	for _, n := range fields {
		p := &plan{node: n, index: len(out), column: -1}
		path := append(parents[:len(parents):len(parents)], p)
		if n.IsLeaf() {
			if !selected[n.Column] {
				continue
			}
			p.column = n.Column
			p.path = path
			p.idx = make([]int, n.MaxRep+1)
			*leaves = append(*leaves, p)
		} else {
			p.children = buildPlan(n.Fields, selected, path, leaves)
			if len(p.children) == 0 {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// Next returns the next record as a KindGroup value whose fields are the
// projected top-level fields, or io.EOF after the last. Records and the
// bytes they hold stay valid after later calls; the memory budget (see
// MaxMemory) counts the record being assembled and the pages being read,
// not the records already returned.
func (r *Rows) Next() (Value, error) {
	for {
		if r.row >= r.rows {
			if err := r.nextGroup(); err != nil {
				return Value{}, err
			}
			continue
		}
		if n := r.skipped(r.row); n > 0 {
			for _, c := range r.cursors() {
				if err := c.skipRecords(n); err != nil {
					return Value{}, err
				}
			}
			r.row += n
			continue
		}
		rec, ok, err := r.record()
		if err != nil {
			return Value{}, err
		}
		r.row++
		if ok {
			return rec, nil
		}
	}
}

// cursors returns every open cursor: the projected ones and the filter's.
func (r *Rows) cursors() []*cursor {
	if r.fcol != nil && r.fcol.hidden {
		return append(r.cols[:len(r.cols):len(r.cols)], r.fcol)
	}
	return r.cols
}

// RowGroup returns the row group of the record Next returned last.
func (r *Rows) RowGroup() int {
	if r.g < 0 || r.g >= len(r.groups) {
		return -1
	}
	return r.groups[r.g]
}

// nextGroup moves to the next row group that the filter does not rule
// out, and opens its column chunks.
func (r *Rows) nextGroup() error {
	for _, c := range r.cursors() {
		if err := c.finish(r.rows); err != nil {
			return err
		}
	}
	for _, c := range r.cursors() {
		c.chunk.Release()
	}
	for {
		r.g++
		r.cols, r.fcol, r.row, r.rows, r.skip = nil, nil, 0, 0, nil
		if r.g >= len(r.groups) {
			return io.EOF
		}
		gi := r.groups[r.g]
		rg := &r.f.md.RowGroups[gi]
		if rg.NumRows == 0 {
			continue
		}
		if fl := r.filter; fl != nil {
			if !fl.chunkMayMatch(r.f, gi, &rg.Columns[fl.leaf.Column]) {
				continue
			}
			skip, err := fl.pageRanges(r.f, gi, rg.NumRows)
			if err != nil {
				return err
			}
			r.skip = skip
		}
		open := func(p *plan) (*cursor, error) {
			c, err := r.f.columnChunk(gi, p.column, r.mem)
			if err != nil {
				return nil, err
			}
			cur := &cursor{chunk: c, leaf: p, rowGroup: gi}
			if r.skip != nil {
				cur.locations = r.f.pageLocations(gi, p.column)
			}
			return cur, nil
		}
		for _, p := range r.leaves {
			c, err := open(p)
			if err != nil {
				return err
			}
			r.cols = append(r.cols, c)
			if r.filter != nil && p.column == r.filter.leaf.Column {
				r.fcol = c
			}
		}
		if r.filter != nil && r.fcol == nil {
			c, err := open(r.filterPlan)
			if err != nil {
				return err
			}
			c.hidden = true
			r.fcol = c
		}
		r.rows = rg.NumRows
		return nil
	}
}

// skipped returns how many rows from row on the page index rules out.
func (r *Rows) skipped(row int64) int64 {
	for _, s := range r.skip {
		if row >= s.start && row < s.end {
			return s.end - row
		}
	}
	return 0
}

// record assembles the next record from the column cursors. It reports
// false, having read past the record, when the record fails the filter.
func (r *Rows) record() (Value, bool, error) {
	r.arena = r.arena[len(r.arena):]
	// The records returned so far are the caller's.
	r.mem.set("", &r.recHeld, 0)
	root, err := r.newGroup(r.root)
	if err != nil {
		return Value{}, false, err
	}
	if fc := r.fcol; fc != nil {
		var v Value
		if err := r.sizeHint(fc); err != nil {
			return Value{}, false, err
		}
		err := fc.record(func(rep, def uint8, vals *Values, i int) error {
			if i >= 0 {
				v = leafValue(fc.leaf.node, vals, i)
			}
			if fc.hidden {
				return nil
			}
			return r.insert(&root, fc.leaf, rep, def, vals, i)
		})
		if err != nil {
			return Value{}, false, err
		}
		if !r.filter.match(v) {
			for _, c := range r.cols {
				if c != fc {
					if err := c.skipRecords(1); err != nil {
						return Value{}, false, err
					}
				}
			}
			return Value{}, false, nil
		}
	}
	for _, c := range r.cols {
		if c == r.fcol {
			continue
		}
		if err := r.sizeHint(c); err != nil {
			return Value{}, false, err
		}
		err := c.record(func(rep, def uint8, vals *Values, i int) error {
			return r.insert(&root, c.leaf, rep, def, vals, i)
		})
		if err != nil {
			return Value{}, false, err
		}
	}
	rec, err := r.finishGroup(r.root, root)
	if err != nil {
		return Value{}, false, fmt.Errorf("reader: row group %d, row %d: %w", r.groups[r.g], r.row, err)
	}
	return rec, true, nil
}

// sizeHint notes, for a packed column, what its page holds of the next
// record.
func (r *Rows) sizeHint(c *cursor) error {
	r.hint = packHint{}
	if c.leaf.pack == nil || c.hidden {
		return nil
	}
	if ok, err := c.load(); err != nil || !ok {
		return err // at the end, record says the column is short
	}
	r.hint.entries, r.hint.values, r.hint.data = c.extent()
	return nil
}

// charge counts n more bytes of the record being assembled.
func (r *Rows) charge(what string, n int64) error {
	if err := r.mem.set(what, &r.recHeld, r.recHeld+n); err != nil {
		return fmt.Errorf("reader: row group %d, row %d: %w", r.RowGroup(), r.row, err)
	}
	return nil
}

// appendElem appends e to s, counting the growth of s against the budget
// before it happens.
func (r *Rows) appendElem(s []Value, e Value) ([]Value, error) {
	if len(s) < cap(s) {
		return append(s, e), nil
	}
	old := cap(s)
	// Doubling, where append grows a long slice by a quarter: a list of
	// millions of elements then leaves one discarded copy of itself behind,
	// not four (a 4.2M-element list peaked at 1.42 GB under a 1 GiB budget).
	grown := max(2*old, 8)
	if err := r.mem.check("a record's list", int64(grown-old)*valueSize); err != nil {
		return s, fmt.Errorf("reader: row group %d, row %d: %d list elements: %w", r.RowGroup(), r.row, len(s), err)
	}
	s = append(slices.Grow(s, grown-len(s)), e)
	return s, r.charge("a record's list", int64(cap(s)-old)*valueSize)
}

func (r *Rows) newGroup(p *plan) (Value, error) {
	if err := r.charge("a record's group", int64(len(p.children))*valueSize); err != nil {
		return Value{}, err
	}
	return newGroup(p), nil
}

func newGroup(p *plan) Value {
	v := Value{kind: KindGroup, node: p.node, elems: make([]Value, len(p.children))}
	for i, c := range p.children {
		v.elems[i].node = c.node
	}
	return v
}

// insert places one entry of a leaf column into the record tree, creating
// the groups and list elements its levels call for. Each repeated node on
// the path keeps, per column, the index of its current element: a
// repetition level at the node's depth starts a new element, one above it
// continues the current one, and one below it restarts in a fresh list.
func (r *Rows) insert(root *Value, leaf *plan, rep, def uint8, vals *Values, vi int) error {
	if leaf.pack != nil {
		return r.insertPacked(root, leaf, rep, def, vals, vi)
	}
	path := leaf.path
	cur := root
	var d, depth int
	idx := leaf.idx
	for k, p := range path {
		n := p.node
		slot := &cur.elems[p.index]
		isLeaf := k == len(path)-1
		if n.Repetition != schema.Required {
			d++
		}
		if n.Repetition == schema.Repeated {
			depth++
			if slot.kind == KindNull {
				slot.kind = KindList
			}
			if int(def) < d {
				return nil // an empty list
			}
			switch {
			case depth < int(rep):
			case depth == int(rep):
				idx[depth]++
			default:
				idx[depth] = 0
			}
			i := idx[depth]
			switch {
			case i == len(slot.elems):
				e := Value{node: n}
				if !isLeaf {
					var err error
					if e, err = r.newGroup(p); err != nil {
						return err
					}
				}
				var err error
				if slot.elems, err = r.appendElem(slot.elems, e); err != nil {
					return err
				}
			case i > len(slot.elems):
				return corrupt("column %s: repetition levels skip an element of %s", leaf.node.PathString(), n.PathString())
			}
			elem := &slot.elems[i]
			if isLeaf {
				var err error
				*elem, err = r.leafValue(n, vals, vi)
				return err
			}
			cur = elem
			continue
		}
		if int(def) < d {
			return nil // null at this level
		}
		if isLeaf {
			var err error
			*slot, err = r.leafValue(n, vals, vi)
			return err
		}
		if slot.kind == KindNull {
			var err error
			if *slot, err = r.newGroup(p); err != nil {
				return err
			}
		}
		cur = slot
	}
	return nil
}

// leafValue copies value i into the record's arena, checking a DECIMAL
// against its precision.
func (r *Rows) leafValue(n *schema.Node, vals *Values, i int) (Value, error) {
	v := leafValue(n, vals, i)
	if v.bytes != nil {
		if n.Logical.Kind == schema.Decimal {
			if err := checkDecimal(v.bytes, n.Logical.Precision); err != nil {
				return Value{}, fmt.Errorf("reader: row group %d, row %d, column %s: %w: %w", r.RowGroup(), r.row, n.PathString(), ErrCorrupt, err)
			}
		}
		if len(v.bytes) >= bigValue && vals.Type == meta.TypeByteArray {
			// A large value is not copied: the record refers to the
			// page's buffer, which the next page does not reuse.
			vals.shared = true
			return v, r.charge("a record's values", int64(len(v.bytes)))
		}
		if err := r.growArena(len(v.bytes)); err != nil {
			return Value{}, err
		}
		start := len(r.arena)
		r.arena = append(r.arena, v.bytes...)
		v.bytes = r.arena[start:len(r.arena):len(r.arena)]
	}
	return v, nil
}

// bigValue is the size from which a record refers to a byte array value
// in its page instead of copying it to the record's arena.
const bigValue = 1 << 20

// growArena makes room for n more bytes in the record's arena, counting
// them against the budget.
func (r *Rows) growArena(n int) error {
	if len(r.arena)+n <= cap(r.arena) {
		return nil
	}
	c := grownCap(cap(r.arena), len(r.arena)+n)
	if err := r.charge("a record's values", int64(c)); err != nil {
		return err
	}
	r.arena = slices.Grow(r.arena[:len(r.arena):len(r.arena)], c-len(r.arena))
	return nil
}

// finish turns the raw tree of one field into its logical shape.
func (r *Rows) finish(p *plan, v Value) (Value, error) {
	if v.kind == KindNull {
		return v, nil
	}
	if pl := v.packed(); pl != nil {
		return v, r.finishPacked(pl)
	}
	if p.node.Repetition == schema.Repeated && v.kind == KindList {
		// A repeated field that no LIST or MAP claims is a list.
		for i, e := range v.elems {
			var err error
			if v.elems[i], err = r.finishOne(p, e); err != nil {
				return Value{}, err
			}
		}
		return v, nil
	}
	return r.finishOne(p, v)
}

// finishOne shapes one occurrence of the node of p.
func (r *Rows) finishOne(p *plan, v Value) (Value, error) {
	if v.kind != KindGroup || p.node.IsLeaf() {
		return v, nil
	}
	n := p.node
	switch {
	case n.Logical.Kind == schema.List && n.ListElement() != nil && len(p.children) == 1:
		return r.finishList(p, v)
	case len(p.children) == 1 && isMap(n):
		return r.finishMap(p, v)
	case n.Logical.Kind == schema.Variant:
		return r.finishVariant(p, v)
	}
	return r.finishGroup(p, v)
}

func isMap(n *schema.Node) bool {
	k, _ := n.MapKeyValue()
	return k != nil
}

func (r *Rows) finishGroup(p *plan, v Value) (Value, error) {
	for i, c := range p.children {
		var err error
		if v.elems[i], err = r.finish(c, v.elems[i]); err != nil {
			return Value{}, err
		}
	}
	return v, nil
}

func (r *Rows) finishList(p *plan, v Value) (Value, error) {
	repPlan := p.children[0]
	items := v.elems[0]
	out := Value{kind: KindList, node: p.node, elems: items.elems}
	elem := p.node.ListElement()
	for i, item := range items.elems {
		var err error
		if elem == repPlan.node || len(repPlan.children) != 1 {
			// Two-level list: the repeated field is the element.
			out.elems[i], err = r.finishOne(repPlan, item)
		} else {
			out.elems[i], err = r.finish(repPlan.children[0], item.elems[0])
		}
		if err != nil {
			return Value{}, err
		}
	}
	return out, nil
}

func (r *Rows) finishMap(p *plan, v Value) (Value, error) {
	key, value := p.node.MapKeyValue()
	kv := p.children[0]
	out := Value{kind: KindMap, node: p.node}
	if err := r.charge("a record's map", 2*int64(len(v.elems[0].elems))*valueSize); err != nil {
		return Value{}, err
	}
	out.elems = make([]Value, 0, 2*len(v.elems[0].elems))
	for _, e := range v.elems[0].elems {
		var k, val Value
		for i, c := range kv.children {
			x, err := r.finish(c, e.elems[i])
			if err != nil {
				return Value{}, err
			}
			switch c.node {
			case key:
				k = x
			case value:
				val = x
			}
		}
		out.elems = append(out.elems, k, val)
	}
	return out, nil
}

var errShortColumn = errors.New("column ends before the row group's last row")

// cursor walks the entries of one column chunk, record by record.
type cursor struct {
	chunk     *ChunkReader
	leaf      *plan
	rowGroup  int
	page      *Page
	i, v      int // next entry and next value of the page
	locations []meta.PageLocation
	eof       bool
	hidden    bool // read for the filter only
}

// load makes sure the cursor's page has an unread entry; it reports false
// at the end of the chunk.
func (c *cursor) load() (bool, error) {
	for c.page == nil || c.i >= c.page.NumValues {
		if c.eof {
			return false, nil
		}
		p, err := c.chunk.Next()
		if err == io.EOF {
			c.eof, c.page = true, nil
			return false, nil
		}
		if err != nil {
			return false, err
		}
		c.page, c.i, c.v = p, 0, 0
	}
	return true, nil
}

// record calls fn for each entry of the next record.
func (c *cursor) record(fn func(rep, def uint8, vals *Values, i int) error) error {
	ok, err := c.load()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("reader: row group %d, column %s: %w: %w", c.rowGroup, c.leaf.node.PathString(), ErrCorrupt, errShortColumn)
	}
	maxDef := uint8(c.leaf.node.MaxDef)
	repeated := c.leaf.node.MaxRep > 0
	for first := true; ; first = false {
		if !first {
			if !repeated {
				return nil
			}
			if c.i >= c.page.NumValues {
				// With a page index, pages start at row boundaries; without
				// one, a record of a v1 page may go on in the next page.
				if c.locations != nil {
					return nil
				}
				if ok, err := c.load(); err != nil || !ok {
					return err
				}
			}
			if c.page.Rep[c.i] == 0 {
				return nil
			}
		}
		p := c.page
		var rep, def uint8
		if p.Rep != nil {
			rep = p.Rep[c.i]
		}
		if p.Def != nil {
			def = p.Def[c.i]
		} else {
			def = maxDef
		}
		if first && rep != 0 {
			return fmt.Errorf("reader: row group %d, column %s, page at offset %d: %w: record starts with repetition level %d",
				c.rowGroup, c.leaf.node.PathString(), p.Offset, ErrCorrupt, rep)
		}
		vi := -1
		if def == maxDef {
			vi = c.v
			c.v++
		}
		c.i++
		if fn != nil {
			if err := fn(rep, def, &p.Values, vi); err != nil {
				return err
			}
		}
	}
}

// skipRecords advances over n records, passing over whole pages without
// decoding them when the offset index says they hold only skipped rows.
func (c *cursor) skipRecords(n int64) error {
	for n > 0 {
		if (c.page == nil || c.i >= c.page.NumValues) && c.locations != nil {
			k := c.chunk.dataPages
			// Trust the locations only while they agree with the pages
			// found on the way.
			if k+1 < len(c.locations) && (k == 0 || c.chunk.base+int64(c.chunk.pos) == c.locations[k].Offset) {
				rows := c.locations[k+1].FirstRowIndex - c.locations[k].FirstRowIndex
				if rows > 0 && rows <= n {
					if _, err := c.chunk.skipPage(); err != nil {
						return err
					}
					c.page = nil
					n -= rows
					continue
				}
			}
		}
		if err := c.record(nil); err != nil {
			return err
		}
		n--
	}
	return nil
}

// finish checks that the chunk holds nothing after the row group's rows.
func (c *cursor) finish(rows int64) error {
	ok, err := c.load()
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("reader: row group %d, column %s: %w: column %s has values after the row group's %d rows",
			c.rowGroup, c.leaf.node.PathString(), ErrCorrupt, c.leaf.node.PathString(), rows)
	}
	return nil
}
