package merge

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
)

// Spans: a run of a merged input (a file of several Kafka ranges, whose
// ranges interleave with another input's) may start or end inside a row
// group, and inside a page. Such a row group is copied in part, column by
// column: the pages before the span are passed over (unread, but for the
// chunk's dictionary, where the chunk's offset index says where the span
// begins; decoded otherwise), the page where the span starts is decoded
// and its levels and values are copied from the span's first row, which
// begins at repetition level 0, and the reading stops after the span's
// last row (reading no further ahead than the page after it, where the
// offset index says where that is).

// copySpan appends rows [lo, hi) of row group rg of x, but those of
// deleted (row group rows, increasing, within [lo, hi)), to the output
// row group, column by column. On error the output row group is left in
// an unknown state: the merge fails.
func (m *merger) copySpan(x *input, rg int, lo, hi int64, deleted []int64) error {
	limit := m.opts.memory * 3 / 4
	for c := range m.sch.Leaves() {
		if err := m.ctx.Err(); err != nil {
			return err
		}
		if err := m.copyChunkSpan(x, rg, c, lo, hi, deleted); err != nil {
			if errors.Is(err, reader.ErrMemoryBudget) {
				err = fmt.Errorf("%w: %w", ErrMemory, err)
			}
			return fmt.Errorf("merge: input %s, row group %d, rows %d to %d, column %s: %w", x.Name, rg, lo, hi-1, m.sch.Leaves()[c].PathString(), err)
		}
		if held := int64(m.g.Capacity()); held > limit {
			return fmt.Errorf("merge: input %s, row group %d: %w: its rows take %d bytes in memory at column %s, more than three quarters of the %d-byte limit; give more memory", x.Name, rg, ErrMemory, held, m.sch.Leaves()[c].PathString(), m.opts.memory)
		}
	}
	m.g.EndRows(int(hi - lo - int64(len(deleted))))
	return nil
}

// copyChunkSpan appends the entries of rows [lo, hi) of one column chunk,
// but those of the rows of deleted, to the output column.
func (m *merger) copyChunkSpan(x *input, rg, c int, lo, hi int64, deleted []int64) error {
	cr, done, err := m.chunk(x, rg, c)
	if err != nil {
		return err
	}
	kept := false
	defer func() { done(kept) }()
	leaf := m.sch.Leaves()[c]
	repeated := leaf.MaxRep > 0
	// The offset index, to go straight to the page where the span begins,
	// to read no further than the page after it, and to know that a page
	// of a repeated column begins a row (a v1 page need not).
	groupRows := x.f.Metadata().RowGroups[rg].NumRows
	locs, err := x.offsetIndex(rg, c)
	if err != nil {
		return err
	}
	col := m.g.Column(c)
	var pieces [][2]int
	// started counts the rows of the chunk begun so far: the row of an
	// entry at repetition level 0 is started, before it is counted.
	var started, copied int64
	first, draining := true, false
	if locs != nil {
		// The page where row lo begins: the last that begins at or
		// before it (pages begin rows where there is an offset index).
		if k := sort.Search(len(locs), func(i int) bool { return locs[i].FirstRowIndex > lo }) - 1; k > 0 {
			if err := cr.SkipTo(k, locs[k].Offset); err != nil {
				return err
			}
			started, first = locs[k].FirstRowIndex, false
		}
		if k := sort.Search(len(locs), func(i int) bool { return locs[i].FirstRowIndex >= hi }); k < len(locs) {
			if err := cr.LimitReads(locs[k].Offset); err != nil {
				return fmt.Errorf("%w: %w", reader.ErrCorrupt, err)
			}
		}
	}
	for {
		p, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := m.ctx.Err(); err != nil {
			return err
		}
		m.decodedPages++
		if locs != nil {
			// The offset index must agree with the pages read.
			k := cr.DataPages() - 1
			if k >= len(locs) || locs[k].Offset != p.Offset || locs[k].FirstRowIndex != started || (k+1 < len(locs) && int64(p.NumRows) != locs[k+1].FirstRowIndex-started) {
				return fmt.Errorf("%w: data page %d at offset %d begins %d rows at row %d, which the chunk's offset index of %d pages does not say", reader.ErrCorrupt, k, p.Offset, p.NumRows, started, len(locs))
			}
		}
		if draining {
			continue
		}
		if p.NumValues == 0 {
			continue
		}
		if (first || locs != nil) && repeated && p.Rep[0] != 0 {
			return fmt.Errorf("%w: data page %d starts in the middle of a record (repetition level %d)", reader.ErrCorrupt, cr.DataPages()-1, p.Rep[0])
		}
		first = false
		// The page's entries of the span: [i0, i1), the first of row r0.
		n := p.NumValues
		i0, i1, done := n, n, false
		var r0 int64
		if !repeated {
			r0 = max(lo, started)
			i0 = int(min(max(lo-started, 0), int64(n)))
			i1 = int(min(max(hi-started, 0), int64(n)))
			started += int64(n)
			copied += int64(i1 - i0)
			done = started >= hi
		} else {
			row := started - 1 // the row of the entry before
			for i, r := range p.Rep {
				if r == 0 {
					row++
					if row >= hi {
						i1, done = i, true
						break
					}
					if row >= lo {
						copied++
					}
				}
				if row >= lo && i0 == n {
					i0, r0 = i, row
				}
			}
			i0 = min(i0, i1)
			started = row + 1
			if !done && started >= hi {
				// The span's last row ends with the page when the next
				// page begins a row: a v2 page does, and so does any page
				// of a chunk with an offset index that agrees.
				k := cr.DataPages()
				done = p.Type == meta.PageDataV2 && hi == started ||
					locs != nil && k < len(locs) && locs[k].FirstRowIndex == started
			}
		}
		if i0 < i1 {
			// The entries of the rows kept, in pieces between deleted rows.
			var prs []uint8
			if repeated {
				prs = p.Rep
			}
			pieces = keptEntries(pieces[:0], prs, i0, i1, r0, deleted)
			e, v0 := 0, 0 // v0: the values of the entries before e
			for _, pc := range pieces {
				if leaf.MaxDef > 0 {
					for _, d := range p.Def[e:pc[0]] {
						if int(d) == int(leaf.MaxDef) {
							v0++
						}
					}
				} else {
					v0 += pc[0] - e
				}
				var rep, def []uint8
				if repeated {
					rep = p.Rep[pc[0]:pc[1]]
				}
				if leaf.MaxDef > 0 {
					def = p.Def[pc[0]:pc[1]]
				}
				nv, err := col.AppendLevels(rep, def, pc[1]-pc[0])
				if err != nil {
					return fmt.Errorf("%w: %w", reader.ErrCorrupt, err)
				}
				if v0+nv > p.Values.Len() {
					return fmt.Errorf("%w: a page holds %d values, its levels say at least %d", reader.ErrCorrupt, p.Values.Len(), v0+nv)
				}
				sub := subValues(&p.Values, v0, nv)
				if err := m.appendValues(x, c, col, &sub, nv); err != nil {
					return err
				}
				e, v0 = pc[1], v0+nv
			}
		}
		if done {
			if locs != nil && hi < groupRows {
				break
			}
			// Without an offset index, nothing vouches for the pages
			// read; and a span that ends with the row group ends with
			// the chunk. Read on to the chunk's end, where the reader
			// checks that the chunk holds the values its metadata
			// declares, as a chunk copied whole is checked.
			draining = true
		}
	}
	if copied != hi-lo {
		return fmt.Errorf("%w: the chunk holds %d of the span's %d rows", reader.ErrCorrupt, copied, hi-lo)
	}
	kept = true
	return nil
}

// keptEntries appends to dst the pieces [e0, e1) of a page's entries
// [i0, i1) that hold no row of deleted (increasing): entry i0 is of row
// r0, and each entry at repetition level 0 of reps (nil for a column
// that is not repeated: an entry a row) begins the next row.
func keptEntries(dst [][2]int, reps []uint8, i0, i1 int, r0 int64, deleted []int64) [][2]int {
	d := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= r0 })
	if d == len(deleted) {
		return append(dst, [2]int{i0, i1})
	}
	row, start := r0, i0
	for i := i0; i < i1; i++ {
		if i > i0 && (reps == nil || reps[i] == 0) {
			row++
		}
		for d < len(deleted) && deleted[d] < row {
			d++
		}
		gone := d < len(deleted) && deleted[d] == row
		switch {
		case gone && start >= 0:
			if start < i {
				dst = append(dst, [2]int{start, i})
			}
			start = -1
		case !gone && start < 0:
			start = i
		}
		if d == len(deleted) && start >= 0 {
			// No deleted row after this one: the rest is kept.
			break
		}
	}
	if start >= 0 && start < i1 {
		dst = append(dst, [2]int{start, i1})
	}
	return dst
}

// subValues returns the n values of v from value from, sharing v's
// memory. The caller has checked that v holds them.
func subValues(v *reader.Values, from, n int) reader.Values {
	s := reader.Values{Type: v.Type, Size: v.Size}
	switch v.Type {
	case meta.TypeBoolean:
		s.Bool = v.Bool[from : from+n]
	case meta.TypeInt32:
		s.Int32 = v.Int32[from : from+n]
	case meta.TypeInt64:
		s.Int64 = v.Int64[from : from+n]
	case meta.TypeInt96:
		s.Int96 = v.Int96[from : from+n]
	case meta.TypeFloat:
		s.Float = v.Float[from : from+n]
	case meta.TypeDouble:
		s.Double = v.Double[from : from+n]
	case meta.TypeByteArray:
		s.Data, s.Offsets = v.Data, v.Offsets[from:from+n+1]
	case meta.TypeFixedLenByteArray:
		s.Data = v.Data[from*v.Size : (from+n)*v.Size]
	}
	return s
}

// offsetIndex returns the page locations of the chunk of column c in row
// group rg, or nil when the file has no offset index there; they are kept
// for the merge, as the footer is.
func (x *input) offsetIndex(rg, c int) ([]meta.PageLocation, error) {
	key := [2]int{rg, c}
	if locs, ok := x.index[key]; ok {
		return locs, nil
	}
	oi, err := x.f.OffsetIndex(rg, c)
	if err != nil {
		return nil, err
	}
	var locs []meta.PageLocation
	if oi != nil {
		locs = oi.PageLocations
	}
	if x.index == nil {
		x.index = map[[2]int][]meta.PageLocation{}
	}
	x.index[key] = locs
	return locs, nil
}
