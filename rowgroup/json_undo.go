package rowgroup

import "github.com/pqsink/pqsink/meta"

// recordUndo takes a failed record back out of the row group. RowGroup.Mark
// would do, but it copies the lengths of every column before every record;
// most records succeed, and most columns do not need it: a column that is
// not repeated holds exactly one level slot per row (the invariant that
// RowGroup.Check verifies), so its length before the record follows from
// the row count, and undoing the record drops the slots past it. Only
// repeated columns, which take any number of slots per record, are marked.
type recordUndo struct {
	rows     int
	flat     []*Column // columns with MaxRep == 0
	repeated []*Column
	marks    []mark // of repeated, at the start of the record
}

func (u *recordUndo) init(g *RowGroup) {
	for _, c := range g.Columns() {
		if c.maxRep == 0 {
			u.flat = append(u.flat, c)
		} else {
			u.repeated = append(u.repeated, c)
		}
	}
	u.marks = make([]mark, len(u.repeated))
}

// begin records the position before a record.
func (u *recordUndo) begin(g *RowGroup) {
	u.rows = g.rows
	for i, c := range u.repeated {
		// Field by field: a copy of the struct c.mark() returns goes
		// through the stack in 16-byte moves, whose loads wait for the
		// 8-byte stores that built it.
		m := &u.marks[i]
		m.levels, m.values, m.rep, m.def, m.bytes = c.levels, c.values, len(c.Rep), len(c.Def), len(c.Bytes)
	}
}

// rollback truncates every column to the position begin recorded.
func (u *recordUndo) rollback(g *RowGroup) {
	for _, c := range u.flat {
		if c.levels > u.rows {
			c.rollback(flatMark(c, u.rows))
		}
	}
	for i, c := range u.repeated {
		c.rollback(u.marks[i])
	}
	g.rows = u.rows
}

// flatMark returns the mark of non-repeated column c as it was with rows
// level slots, from the slots written since: those at maximum definition
// level (all of them in a required column) hold a value each.
func flatMark(c *Column, rows int) mark {
	values := c.values
	if c.maxDef == 0 {
		values -= c.levels - rows
	} else {
		for _, d := range c.Def[rows:] {
			if d == c.maxDef {
				values--
			}
		}
	}
	m := mark{levels: rows, values: values}
	if c.maxDef > 0 {
		m.def = rows
	}
	switch c.Leaf.Physical {
	case meta.TypeByteArray:
		m.bytes = int(c.Offsets[values])
	case meta.TypeFixedLenByteArray:
		m.bytes = values * int(c.Leaf.Length)
	}
	return m
}
