package merge

import (
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
)

// ErrUnplaced is wrapped by the error of a merge that would leave out
// deleted rows (Input.Deleted) of an input whose remaining records' offsets
// it cannot know: a Kafka range with gaps (offsets that are no record of
// the file), and no _kafka.offset column to read them from.
var ErrUnplaced = errors.New("merge: the offsets of the records around deleted rows are unknown")

// offsetColumn is the envelope leaf that holds a record's Kafka offset.
const offsetColumn = "_kafka.offset"

// checkDeleted checks that x's deleted positions increase and are rows of
// the file.
func checkDeleted(x *input) error {
	for i, p := range x.Deleted {
		if p < 0 || p >= x.f.NumRows() || i > 0 && p <= x.Deleted[i-1] {
			return fmt.Errorf("merge: input %s: deleted row %d is not a row of the file (of %d) in increasing order", x.Name, p, x.f.NumRows())
		}
	}
	return nil
}

// kept returns the spans [lo, hi) of the rows from lo to hi that deleted
// (increasing) leaves, in order.
func kept(deleted []int64, lo, hi int64) [][2]int64 {
	var out [][2]int64
	for _, d := range deleted {
		if d < lo {
			continue
		}
		if d >= hi {
			break
		}
		if d > lo {
			out = append(out, [2]int64{lo, d})
		}
		lo = d + 1
	}
	if lo < hi {
		out = append(out, [2]int64{lo, hi})
	}
	return out
}

// deletedRuns returns the runs of archive input x without its deleted
// rows: each footer range is split at them, and each piece's range says
// the offsets of its first and last records and how many it holds.
func deletedRuns(x *input) ([]run, error) {
	if err := checkDeleted(x); err != nil {
		return nil, err
	}
	var offsets []int64 // by row, read when a range has gaps
	offsetOf := func(r archive.Range, start, row int64) (int64, error) {
		if r.Last-r.First+1 == r.Records {
			return r.First + row - start, nil
		}
		if offsets == nil {
			var err error
			if offsets, err = readOffsets(x); err != nil {
				return 0, err
			}
		}
		return offsets[row], nil
	}
	var runs []run
	var row int64
	for _, r := range x.ranges {
		for _, k := range kept(x.Deleted, row, row+r.Records) {
			first, err := offsetOf(r, row, k[0])
			if err != nil {
				return nil, err
			}
			last, err := offsetOf(r, row, k[1]-1)
			if err != nil {
				return nil, err
			}
			if first < r.First || last > r.Last || last-first+1 < k[1]-k[0] {
				return nil, fmt.Errorf("merge: input %s: rows %d to %d have offsets %d to %d, which do not fit their footer range %s/%d offsets %d to %d (%d records)",
					x.Name, k[0], k[1]-1, first, last, r.Topic, r.Partition, r.First, r.Last, r.Records)
			}
			piece := archive.Range{Topic: r.Topic, Partition: r.Partition, First: first, Last: last, Records: k[1] - k[0]}
			runs = append(runs, run{in: x, lo: k[0], hi: k[1], ranges: []archive.Range{piece}})
		}
		row += r.Records
	}
	return runs, nil
}

// readOffsets reads the _kafka.offset column of x, by row.
func readOffsets(x *input) ([]int64, error) {
	leaf := x.f.Schema().Leaf(offsetColumn)
	if leaf == nil || leaf.Physical != meta.TypeInt64 || leaf.MaxRep != 0 {
		return nil, fmt.Errorf("%w: input %s has a Kafka range with gaps and no %s column (INT64) to read its offsets from", ErrUnplaced, x.Name, offsetColumn)
	}
	out := make([]int64, 0, x.f.NumRows())
	for g := range x.f.Metadata().RowGroups {
		cur, err := x.f.ColumnCursors(g, []int{leaf.Column})
		if err != nil {
			return nil, fmt.Errorf("merge: input %s, row group %d, column %s: %w", x.Name, g, offsetColumn, err)
		}
		c := cur[0]
		for err == nil && !c.EOF() {
			if !c.HasValue() {
				err = fmt.Errorf("row %d is null", len(out))
				break
			}
			out = append(out, c.Int64())
			err = c.Advance()
		}
		c.Release()
		if err != nil {
			return nil, fmt.Errorf("merge: input %s, row group %d, column %s: %w", x.Name, g, offsetColumn, err)
		}
	}
	if int64(len(out)) != x.f.NumRows() {
		return nil, fmt.Errorf("merge: input %s: column %s has %d values, the file %d rows", x.Name, offsetColumn, len(out), x.f.NumRows())
	}
	return out, nil
}
