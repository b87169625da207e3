package reader

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// RenderIn makes the assembler render the values of the leaf columns
// named in units (indexes into Schema().Leaves()), INT64 TIMESTAMP(MICROS)
// or TIME(MICROS) columns, as a column of the unit given renders the same
// instant or time: a file that holds another column's values in
// microseconds (a table's file of a JSON schema file, whose Iceberg
// timestamps and times are microseconds) renders as the file of that
// column would. MILLIS (a TIMESTAMP or a TIME) renders the value
// divided by 1000, rounded down, with three fraction digits; NANOS (a
// TIMESTAMP) the value times 1000, with nine, int64's least or greatest
// where the product does not fit. Every other column renders as before.
// Call it before the first Append. A column that is not such a leaf of
// the assembler's fields, or a unit other than these, is an error
// wrapping ErrNotColumnar: Value.AppendJSON has no such rendering, so the
// caller renders those records itself.
func (a *JSONAssembler) RenderIn(units map[int]schema.TimeUnit) error {
	found := map[int]bool{}
	var err error
	var walk func(j *jnode)
	walk = func(j *jnode) {
		if j == nil || err != nil {
			return
		}
		if j.kind == jLeaf {
			u, ok := units[j.node.Column]
			if !ok {
				return
			}
			if err = retimable(j.node, u); err == nil {
				j.render, j.unit = renderIn, u
				found[j.node.Column] = true
			}
			return
		}
		for _, c := range j.children {
			walk(c)
		}
		walk(j.elem)
	}
	for _, f := range a.fields {
		walk(f)
	}
	if err != nil {
		return err
	}
	for _, col := range slices.Sorted(maps.Keys(units)) {
		if !found[col] {
			return fmt.Errorf("%w: column %d is not a leaf the assembler renders", ErrNotColumnar, col)
		}
	}
	return nil
}

// retimable checks that leaf n's microseconds can render in unit u.
func retimable(n *schema.Node, u schema.TimeUnit) error {
	l := n.Logical
	ok := n.Physical == meta.TypeInt64 && l.Unit == schema.Micros &&
		(l.Kind == schema.Timestamp && (u == schema.Millis || u == schema.Nanos) || l.Kind == schema.Time && u == schema.Millis)
	if !ok {
		return fmt.Errorf("%w: column %s, %s %s, cannot render in %s", ErrNotColumnar, n.PathString(), n.Physical, l, u)
	}
	return nil
}

// appendIn appends the JSON of x, a value of leaf n's microsecond column,
// in n.unit (RenderIn).
func (n *jnode) appendIn(dst []byte, x int64) []byte {
	l := n.node.Logical
	if n.unit == schema.Nanos {
		switch {
		case x < math.MinInt64/1000:
			x = math.MinInt64
		case x > math.MaxInt64/1000:
			x = math.MaxInt64
		default:
			x *= 1000
		}
		return n.ts.append(dst, x, schema.Nanos, l.UTC)
	}
	ms := x / 1000
	if x%1000 < 0 {
		ms--
	}
	if l.Kind == schema.Time {
		return appendTimeOfDay(dst, ms, schema.Millis)
	}
	return n.ts.append(dst, ms, schema.Millis, l.UTC)
}
