// Package rowgroup holds the in-memory row group: one buffer per leaf column
// with its values and Dremel repetition/definition levels, the shredders
// that fill those buffers straight from parsed records, and the size
// accounting that tells the caller when the row group is full.
//
// A RowGroup is not safe for concurrent use; a sink keeps one per open file.
package rowgroup

import (
	"fmt"

	"github.com/pqsink/pqsink/schema"
)

// RowGroup is a set of column buffers for one schema.
type RowGroup struct {
	schema  *schema.Schema
	columns []*Column
	rows    int
}

// New returns an empty row group for s.
func New(s *schema.Schema) *RowGroup {
	leaves := s.Leaves()
	g := &RowGroup{schema: s, columns: make([]*Column, len(leaves))}
	for i, leaf := range leaves {
		g.columns[i] = newColumn(leaf)
	}
	return g
}

// Schema returns the row group's schema.
func (g *RowGroup) Schema() *schema.Schema { return g.schema }

// Columns returns the column buffers in leaf order.
func (g *RowGroup) Columns() []*Column { return g.columns }

// Column returns the buffer of leaf i.
func (g *RowGroup) Column(i int) *Column { return g.columns[i] }

// NumRows is the number of complete rows.
func (g *RowGroup) NumRows() int { return g.rows }

// Size estimates the bytes the row group holds in memory: values and levels,
// before any encoding. Callers compare it with their row group target.
func (g *RowGroup) Size() int {
	n := 0
	for _, c := range g.columns {
		n += c.size()
	}
	return n
}

// Capacity is the bytes the row group's buffers hold by capacity, values,
// offsets and levels: what it costs in memory now, including room grown
// for rows not yet appended and kept across Reset. It is at least Size.
// It sums over the columns, so callers check it every few rows.
func (g *RowGroup) Capacity() int {
	n := 0
	for _, c := range g.columns {
		n += c.capacity()
	}
	return n
}

// Release empties the row group and lets its buffers go, so that an idle
// row group holds (almost) nothing; the next rows grow them anew. A sink
// with thousands of open files releases the row groups it flushes under
// memory pressure, where Reset would keep them at their largest.
func (g *RowGroup) Release() {
	for _, c := range g.columns {
		c.release()
	}
	g.rows = 0
}

// Reserve grows every column's buffers to hold about rows rows,
// extrapolating from the rows already held, so that a row group filling up
// to its target size does not regrow (and copy) its buffers on the way.
// It does nothing before the first row.
func (g *RowGroup) Reserve(rows int) {
	if g.rows == 0 || rows <= g.rows {
		return
	}
	f := float64(rows) / float64(g.rows)
	for _, c := range g.columns {
		c.reserve(f)
	}
}

// Reset empties the row group and keeps its buffers for reuse.
func (g *RowGroup) Reset() {
	for _, c := range g.columns {
		c.reset()
	}
	g.rows = 0
}

// Mark records the current length of every column, so a record that fails
// half-way can be taken back with Rollback.
type Mark struct {
	cols []mark
	rows int
}

// Mark returns the current position; m's storage is reused when passed in.
func (g *RowGroup) Mark(m *Mark) {
	m.cols = m.cols[:0]
	for _, c := range g.columns {
		m.cols = append(m.cols, c.mark())
	}
	m.rows = g.rows
}

// Rollback truncates every column to the position recorded in m.
func (g *RowGroup) Rollback(m *Mark) {
	for i, c := range g.columns {
		c.rollback(m.cols[i])
	}
	g.rows = m.rows
}

// EndRow counts one complete row. Shredders call it after a record's last
// column is appended.
func (g *RowGroup) EndRow() { g.rows++ }

// Check verifies that every column is consistent and holds NumRows rows.
func (g *RowGroup) Check() error {
	for _, c := range g.columns {
		if err := c.check(); err != nil {
			return err
		}
		rows := c.levels
		if c.maxRep > 0 {
			rows = 0
			for _, r := range c.Rep {
				if r == 0 {
					rows++
				}
			}
		}
		if rows != g.rows {
			return fmt.Errorf("column %s: %d rows, row group has %d", c.Leaf.PathString(), rows, g.rows)
		}
	}
	return nil
}
