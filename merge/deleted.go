package merge

import (
	"errors"
	"fmt"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
)

// ErrUnplaced is wrapped by the error of a merge that would leave out the
// first or last record of a Kafka range of an input (Input.Deleted) and
// cannot know the offset of the record that then begins or ends it: the
// range has gaps (offsets that are no record of the file), and the input
// has no _kafka.offset column to read it from.
var ErrUnplaced = errors.New("merge: the offset of the first or last record kept of a range is unknown")

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

// deletedRuns returns the runs of archive input x without its deleted
// rows: each footer range is a run of the rows from its first kept row to
// its last, which leaves out the deleted rows between them, and its range
// says the offsets of those two records and how many it keeps.
func deletedRuns(x *input) ([]run, error) {
	if err := checkDeleted(x); err != nil {
		return nil, err
	}
	var offsets []int64 // by row, read when a range has gaps
	offsetOf := func(r archive.Range, start, row int64) (int64, error) {
		switch {
		case row == start:
			return r.First, nil
		case row == start+r.Records-1:
			return r.Last, nil
		case r.Last-r.First+1 == r.Records:
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
	del := x.Deleted
	for _, r := range x.ranges {
		start := row
		lo, hi := row, row+r.Records
		row = hi
		// The range's deleted rows, and its first and last kept rows.
		var in []int64
		for len(del) > 0 && del[0] < hi {
			in = append(in, del[0])
			del = del[1:]
		}
		for len(in) > 0 && in[0] == lo {
			in, lo = in[1:], lo+1
		}
		for len(in) > 0 && in[len(in)-1] == hi-1 {
			in, hi = in[:len(in)-1], hi-1
		}
		if lo >= hi {
			continue // every record of the range is deleted
		}
		first, err := offsetOf(r, start, lo)
		if err != nil {
			return nil, err
		}
		last, err := offsetOf(r, start, hi-1)
		if err != nil {
			return nil, err
		}
		n := hi - lo - int64(len(in))
		if first < r.First || last > r.Last || last-first+1 < n {
			return nil, fmt.Errorf("merge: input %s: rows %d to %d have offsets %d to %d, which do not fit their footer range %s/%d offsets %d to %d (%d records)",
				x.Name, lo, hi-1, first, last, r.Topic, r.Partition, r.First, r.Last, r.Records)
		}
		piece := archive.Range{Topic: r.Topic, Partition: r.Partition, First: first, Last: last, Records: n}
		runs = append(runs, run{in: x, lo: lo, hi: hi, ranges: []archive.Range{piece}, deleted: in})
	}
	return runs, nil
}

// readOffsets reads the _kafka.offset column of x, by row.
func readOffsets(x *input) ([]int64, error) {
	leaf := x.f.Schema().Leaf(offsetColumn)
	if leaf == nil || leaf.Physical != meta.TypeInt64 || leaf.MaxRep != 0 {
		return nil, fmt.Errorf("%w: input %s has a Kafka range with gaps whose first or last record is deleted, and no %s column (INT64) to read the offsets of the others from", ErrUnplaced, x.Name, offsetColumn)
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
