package convert

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// source is where a conversion's records come from: JSON Lines (typed,
// VARIANT or in Avro's JSON encoding) or the records of an Avro container
// file. The run loop takes records from it one at a time and appends them
// to the row builder.
type source interface {
	// next returns the next record for the row builder, nil for a piece of
	// input that makes no row (a blank line), or io.EOF at the end. A
	// *badRecord error is a record for the error policy; any other error
	// ends the run.
	next() ([]byte, error)
	// fail turns the row builder's error on the record next returned into
	// a *badRecord for the error policy, or into an error that ends the
	// run.
	fail(err error) error
}

// badRecord is a record that does not fit: the error policy fails the
// run with it or skips it, writing its input to the rejects.
type badRecord struct {
	line  int64  // its line number
	err   error  // what is wrong
	input []byte // the line, for the rejects
	// tooLong is the length of a line over Options.MaxRecordBytes, which
	// was never held: the rejects report its length instead of input.
	tooLong int64
}

func (b *badRecord) Error() string { return b.lineError().Error() }

func (b *badRecord) lineError() *LineError { return &LineError{Line: b.line, Err: b.err} }

// run is one conversion: a source's records through the row builder into
// row groups, and each full row group out through the writer. The writer
// and the row group exist from start on; before that (while the VARIANT
// sample is read) only rejects and progress work.
type run struct {
	opts *Options
	st   Stats
	w    *writer.Writer
	g    *rowgroup.RowGroup
	rows *rowgroup.Builder

	// weighEvery is a mask of the row count at which the row group's size
	// is checked: 15 checks every 16 rows (the size is a sum over the
	// columns), 0 every row. reserve sizes the first row group's buffers
	// for the whole row group after reserveAfter rows.
	weighEvery int
	reserve    bool

	n                   int64 // records read
	start, nextProgress time.Time
}

// newRun fills in the defaults of opts and starts the clock.
func newRun(opts *Options) *run {
	if opts.RowGroupSize <= 0 {
		opts.RowGroupSize = DefaultRowGroupSize
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 2 * time.Second
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	r := &run{opts: opts, weighEvery: 15, reserve: true, start: time.Now()}
	r.nextProgress = r.start.Add(opts.ProgressEvery)
	return r
}

// open creates the writer of sch on out, the row group and the row builder
// whose payload newPayload makes for the row group.
func (r *run) open(out io.Writer, sch *schema.Schema, wopts []writer.Option, newPayload func(*rowgroup.RowGroup) (rowgroup.Payload, error)) error {
	w, err := writer.New(out, sch, wopts...)
	if err != nil {
		return err
	}
	r.w, r.g = w, rowgroup.New(sch)
	payload, err := newPayload(r.g)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if r.rows, err = rowgroup.NewBuilder(r.g, payload); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// convert appends every record of src as a row, writing full row groups
// as it goes, until src ends, the error policy or the output stops it, or
// ctx is done.
func (r *run) convert(ctx context.Context, src source) error {
	for {
		// A record can take long to read and shred; check for a signal at
		// each one.
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := src.next()
		if err == io.EOF {
			return nil
		}
		r.tick()
		if err == nil {
			if rec == nil {
				continue
			}
			if err = r.rows.Append(rec, nil); err == nil {
				if err := r.rowAdded(); err != nil {
					return err
				}
				continue
			}
			err = src.fail(err)
		}
		if err := r.bad(err); err != nil {
			return err
		}
	}
}

// tick counts a record read and now and then reports progress.
func (r *run) tick() {
	r.n++
	if r.n&1023 != 0 || r.opts.Progress == nil || !time.Now().After(r.nextProgress) {
		return
	}
	r.nextProgress = time.Now().Add(r.opts.ProgressEvery)
	var buffered, written int64
	if r.g != nil {
		buffered, written = int64(r.g.NumRows()), r.w.Offset()
	}
	progress(r.opts.Progress, &r.st, buffered, written, r.start)
}

// bad applies the error policy to err when it is a *badRecord, and
// returns any other error as it is.
func (r *run) bad(err error) error {
	b, ok := err.(*badRecord)
	if !ok {
		return err
	}
	lerr := b.lineError()
	if r.opts.Errors == Fail {
		return lerr
	}
	r.st.Skipped++
	if r.opts.Rejects != nil {
		if err := writeReject(r.opts.Rejects, lerr, b.input, b.tooLong); err != nil {
			return fmt.Errorf("convert: write rejected line %d: %w", b.line, err)
		}
	}
	return nil
}

// rowAdded writes the row group out when it is full.
func (r *run) rowAdded() error {
	if r.g.NumRows()&r.weighEvery != 0 {
		return nil
	}
	size := int64(r.g.Size())
	if size >= r.opts.RowGroupSize {
		return r.flush()
	}
	if r.reserve && r.st.RowGroups == 0 && r.g.NumRows() == reserveAfter && size > 0 {
		// Size the first row group's buffers for the target once, rather
		// than growing them by doubling; later row groups reuse them.
		r.g.Reserve(int(r.opts.RowGroupSize * reserveAfter / size))
	}
	return nil
}

// flush writes the row group out, if it has rows, and empties it.
func (r *run) flush() error {
	if r.g.NumRows() == 0 {
		return nil
	}
	if err := r.w.WriteRowGroup(r.g); err != nil {
		return err
	}
	r.st.Rows += int64(r.g.NumRows())
	r.st.RowGroups++
	r.g.Reset()
	return nil
}

// finish writes the last row group and the footer.
func (r *run) finish() (Stats, error) {
	if err := r.flush(); err != nil {
		return r.st, err
	}
	md, err := r.w.Close()
	if err != nil {
		return r.st, err
	}
	r.st.Metadata = md
	r.st.OutBytes = r.w.Offset()
	if r.opts.Progress != nil {
		progress(r.opts.Progress, &r.st, 0, r.w.Offset(), r.start)
	}
	return r.st, nil
}

func progress(out io.Writer, st *Stats, buffered, written int64, start time.Time) {
	secs := time.Since(start).Seconds()
	fmt.Fprintf(out, "pqsink convert: %d lines (%.1f MB, %.1f MB/s), %d rows written in %d row groups, %d buffered, %d skipped, %.1f MB out\n",
		st.Lines, float64(st.InBytes)/1e6, float64(st.InBytes)/1e6/max(secs, 1e-9), st.Rows, st.RowGroups, buffered, st.Skipped, float64(written)/1e6)
}
