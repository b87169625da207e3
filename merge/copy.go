package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// merger is the state of one merge: the output row group being filled and
// the output file being written.
type merger struct {
	ctx      context.Context
	opts     options
	sch      *schema.Schema
	g        *rowgroup.RowGroup
	rowGroup int64 // output row group target, bytes in memory
	create   func(n int) (io.Writer, error)
	wopts    []writer.Option

	w       *writer.Writer // created for the first file, Reset for the next
	open    bool           // a file is being written
	cur     Output         // the file being written
	pending int64          // input bytes in g, not yet written
	outputs []Output

	progress Progress
	spare    *reader.ChunkReader // the last chunk's reader, whose buffers the next one takes

	decodedPages int // pages that copyChunkSpan decoded (the tests count them)

	micros []int64 // a page's values in microseconds (WidenMillis)
}

// run appends the rows of one run, starting a new output file first when
// the current one would pass the target size. The input's row groups that
// the run holds whole are copied whole; where it starts or ends inside a
// row group, that row group's part of it is copied (copySpan).
func (m *merger) run(r run) error {
	x := r.in
	md := x.f.Metadata()
	bytes := chunkBytes(x.f)
	if all := x.f.NumRows(); r.hi-r.lo < all && all > 0 {
		bytes = bytes * (r.hi - r.lo) / all
	}
	if m.open && m.opts.target > 0 && m.cur.Rows+int64(m.g.NumRows()) > 0 &&
		m.w.Offset()+m.pending+bytes > m.opts.target {
		if err := m.finish(); err != nil {
			return err
		}
	}
	if !m.open {
		if err := m.start(); err != nil {
			return err
		}
	}
	if n := len(m.cur.Inputs); n == 0 || !slices.Contains(m.cur.Inputs, x.Name) {
		m.cur.Inputs = append(m.cur.Inputs, x.Name)
	}
	m.cur.Ranges = append(m.cur.Ranges, r.ranges...)
	var start int64 // the input row at which row group rg starts
	var deleted []int64
	for rg := range md.RowGroups {
		groupRows := md.RowGroups[rg].NumRows
		lo, hi := max(r.lo-start, 0), min(r.hi-start, groupRows)
		// The run's deleted rows in this row group, as its rows.
		deleted = deleted[:0]
		for _, d := range r.deleted {
			if d >= start+lo && d < start+hi {
				deleted = append(deleted, d-start)
			}
		}
		start += groupRows
		if lo >= hi || hi-lo == int64(len(deleted)) {
			if start >= r.hi {
				break
			}
			continue
		}
		rows := hi - lo - int64(len(deleted))
		// Write the row group out first when this one would take it past
		// its target, by the bytes per row it holds so far.
		if n := m.g.NumRows(); n > 0 && int64(m.g.Size())+rows*int64(m.g.Size())/int64(n) > m.rowGroup {
			if err := m.flush(); err != nil {
				return err
			}
		}
		var err error
		if rows == groupRows {
			err = m.copyRowGroup(x, rg)
		} else {
			err = m.copySpan(x, rg, lo, hi, deleted)
		}
		if err != nil {
			return err
		}
		if n := int64(m.g.NumRows()); n == rows && m.g.Size() > 0 {
			// The first rows of an output row group: grow its buffers at
			// once for the rows it will hold (the rest of the inputs, or
			// as many as fit its target), not by append's doublings, each
			// of which copies.
			left := m.progress.TotalRows - m.progress.Rows
			perRow := max(int64(m.g.Size())/n, 1)
			m.g.Reserve(int(min(left, m.rowGroup/perRow)))
		}
		var b int64
		for _, cc := range md.RowGroups[rg].Columns {
			if cc.MetaData != nil {
				b += cc.MetaData.TotalCompressedSize
			}
		}
		if hi-lo < groupRows {
			// The share of the row group's bytes, so that the spans of a
			// row group add up to its bytes.
			b = b*hi/groupRows - b*lo/groupRows
		}
		m.pending += b
		m.progress.Rows += rows
		m.progress.Bytes += b
		if m.opts.progress != nil {
			m.opts.progress(m.progress)
		}
		if int64(m.g.Size()) >= m.rowGroup {
			if err := m.flush(); err != nil {
				return err
			}
		}
	}
	if x.runs--; x.runs == 0 {
		m.progress.Files++
		if m.opts.progress != nil {
			m.opts.progress(m.progress)
		}
	}
	return nil
}

// copyRowGroup appends row group rg of x to the output row group, column
// by column, page by page. On error the output row group is left in an
// unknown state: the merge fails.
func (m *merger) copyRowGroup(x *input, rg int) error {
	rows := x.f.Metadata().RowGroups[rg].NumRows
	limit := m.opts.memory * 3 / 4
	for c := range m.sch.Leaves() {
		if err := m.ctx.Err(); err != nil {
			return err
		}
		if err := m.copyChunk(x, rg, c, rows); err != nil {
			if errors.Is(err, reader.ErrMemoryBudget) {
				err = fmt.Errorf("%w: %w", ErrMemory, err)
			}
			return fmt.Errorf("merge: input %s, row group %d, column %s: %w", x.Name, rg, m.sch.Leaves()[c].PathString(), err)
		}
		if held := int64(m.g.Capacity()); held > limit {
			return fmt.Errorf("merge: input %s, row group %d: %w: its rows take %d bytes in memory at column %s, more than three quarters of the %d-byte limit; give more memory", x.Name, rg, ErrMemory, held, m.sch.Leaves()[c].PathString(), m.opts.memory)
		}
	}
	m.g.EndRows(int(rows))
	return nil
}

// chunk opens the reader of column c of row group rg of x with the
// buffers of the chunk read before; done(kept) hands them on to the next
// chunk when this one was read through (kept), and releases them
// otherwise.
func (m *merger) chunk(x *input, rg, c int) (cr *reader.ChunkReader, done func(kept bool), err error) {
	cr, err = x.f.ColumnChunkReusing(m.spare, rg, c)
	m.spare = nil
	if err != nil {
		return nil, nil, err
	}
	return cr, func(kept bool) {
		if kept {
			m.spare = cr
		} else {
			cr.Release()
		}
	}, nil
}

// copyChunk appends the pages of one column chunk to the output column.
func (m *merger) copyChunk(x *input, rg, c int, rows int64) error {
	cr, done, err := m.chunk(x, rg, c)
	if err != nil {
		return err
	}
	kept := false
	defer func() { done(kept) }()
	col := m.g.Column(c)
	var records int64
	first := true
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
		if first && p.NumValues > 0 && len(p.Rep) > 0 && p.Rep[0] != 0 {
			return fmt.Errorf("%w: the chunk starts in the middle of a record (repetition level %d)", reader.ErrCorrupt, p.Rep[0])
		}
		if p.NumValues > 0 {
			first = false
		}
		n, err := col.AppendLevels(p.Rep, p.Def, p.NumValues)
		if err != nil {
			return fmt.Errorf("%w: %w", reader.ErrCorrupt, err)
		}
		if err := m.appendValues(x, c, col, &p.Values, n); err != nil {
			return err
		}
		records += int64(p.NumRows)
	}
	if records != rows {
		return fmt.Errorf("%w: the chunk holds %d records, its row group %d", reader.ErrCorrupt, records, rows)
	}
	kept = true
	return nil
}

// appendValues appends the n values of a page of column c of x to col,
// in microseconds where x holds milliseconds (WidenMillis).
func (m *merger) appendValues(x *input, c int, col *rowgroup.Column, v *reader.Values, n int) error {
	if v.Len() != n {
		return fmt.Errorf("%w: a page holds %d values for %d defined entries", reader.ErrCorrupt, v.Len(), n)
	}
	if x.millis != nil && x.millis[c] && v.Type == meta.TypeInt64 {
		// Into a buffer of the merge's: the page's values may be the
		// reader's, a dictionary's among them.
		var err error
		if m.micros, err = toMicros(m.micros[:0], v.Int64); err != nil {
			return err
		}
		col.AppendInt64s(m.micros)
		return nil
	}
	switch v.Type {
	case meta.TypeBoolean:
		col.AppendBools(v.Bool)
	case meta.TypeInt32:
		col.AppendInt32s(v.Int32)
	case meta.TypeInt64:
		col.AppendInt64s(v.Int64)
	case meta.TypeInt96:
		col.AppendInt96s(v.Int96)
	case meta.TypeFloat:
		col.AppendFloats(v.Float)
	case meta.TypeDouble:
		col.AppendDoubles(v.Double)
	case meta.TypeByteArray:
		if n == 0 {
			return nil
		}
		return col.AppendByteArrays(v.Data[v.Offsets[0]:], v.Offsets)
	case meta.TypeFixedLenByteArray:
		col.AppendFixed(v.Data)
	default:
		return fmt.Errorf("%w: physical type %v", reader.ErrUnsupported, v.Type)
	}
	return nil
}

// start begins the next output file.
func (m *merger) start() error {
	out, err := m.create(len(m.outputs))
	if err != nil {
		return fmt.Errorf("merge: creating output %d: %w", len(m.outputs), err)
	}
	m.cur, m.open = Output{}, true
	if m.w == nil {
		if m.w, err = writer.New(out, m.sch, m.wopts...); err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		return nil
	}
	if err := m.w.Reset(out); err != nil {
		return fmt.Errorf("merge: output %d: %w", len(m.outputs), err)
	}
	return nil
}

// flush writes the output row group.
func (m *merger) flush() error {
	if m.g.NumRows() == 0 {
		return nil
	}
	if err := m.w.WriteRowGroup(m.g); err != nil {
		return fmt.Errorf("merge: output %d: %w", len(m.outputs), err)
	}
	m.cur.Rows += int64(m.g.NumRows())
	m.g.Reset()
	m.pending = 0
	return nil
}

// finish writes the last row group and the footer of the current file.
func (m *merger) finish() error {
	if !m.open {
		return nil
	}
	if err := m.flush(); err != nil {
		return err
	}
	if len(m.cur.Ranges) > 0 {
		m.cur.Ranges = archive.Coalesce(m.cur.Ranges)
		if err := archive.WriteRanges(m.cur.Ranges, m.w.SetKeyValue); err != nil {
			return fmt.Errorf("merge: output %d: %w", len(m.outputs), err)
		}
	}
	md, err := m.w.Close()
	if err != nil {
		return fmt.Errorf("merge: output %d: %w", len(m.outputs), err)
	}
	m.cur.Metadata, m.cur.Bytes = md, m.w.Offset()
	m.outputs = append(m.outputs, m.cur)
	m.cur, m.open = Output{}, false
	return nil
}
