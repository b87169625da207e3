package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// VariantOptions configure RunVariant. The embedded Options give the row
// group size, writer options, error policy and progress reporting; their
// Schema and JSON fields are not used.
type VariantOptions struct {
	Options
	// Column is the name of the VARIANT column. Defaults to "payload".
	Column string
	// Shape is the shredding schema. Nil means infer one from the first
	// lines (see Sample); a pointer to the zero Shape means no shredding.
	Shape *variant.Shape
	// Infer tunes inference; see variant.InferOptions for its defaults.
	Infer variant.InferOptions
	// Sample is the number of records inference looks at: the first
	// Sample valid lines, or fewer when they fill a row group first.
	// Defaults to 10,000.
	Sample int
	// Verbose, when set, receives the Parquet schema that was chosen.
	Verbose io.Writer
	// LossyNumbers lets a JSON number that no Variant type holds exactly
	// become the nearest double instead of a bad line (see
	// variant.LossyNumbers).
	LossyNumbers bool

	// twoPass makes every record go through the two-pass reference path
	// of the shredder (rowgroup.VariantTwoPass), for tests.
	twoPass bool
}

// RunVariant reads JSON Lines from in and writes one Parquet file to out
// whose only column is a VARIANT holding each line's value (any JSON
// value, objects or not). Blank lines are ignored; a line that is not
// valid JSON is a *LineError, handled by the error policy as in Run.
// Every line becomes a row through rowgroup.Builder with a
// VariantShredder as its payload.
//
// When the shape is inferred, the sample lines are encoded for the
// inference and kept as text until the shape is known, then made rows
// like the lines after them. The sample is cut short when its lines and
// their Variants reach a row group's size, so memory holds at most about
// one row group.
func RunVariant(ctx context.Context, in io.Reader, out io.Writer, opts VariantOptions) (Stats, error) {
	var st Stats
	if opts.Column == "" {
		opts.Column = "payload"
	}
	if opts.RowGroupSize <= 0 {
		opts.RowGroupSize = DefaultRowGroupSize
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = 2 * time.Second
	}
	if opts.Sample <= 0 {
		opts.Sample = 10_000
	}
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	var encOpts []variant.Option
	if opts.LossyNumbers {
		encOpts = append(encOpts, variant.LossyNumbers())
	}
	r := &variantRun{opts: &opts, st: &st, lines: newLineReaderMax(in, opts.MaxRecordBytes), enc: variant.NewEncoder(encOpts...), start: time.Now()}
	r.nextProgress = r.start.Add(opts.ProgressEvery)

	shape := opts.Shape
	if shape == nil {
		s, err := r.sample(ctx)
		if err != nil {
			return st, err
		}
		shape = &s
	}
	// The sample's Variants were for the inference: do not hold the
	// largest of them (a huge line's) for the rest of the run.
	huge := cap(r.val) >= hugeSample
	r.md, r.val, r.enc = nil, nil, nil
	if huge {
		// Nor let it set the collector's next goal: a 50 MiB line of
		// small numbers has a Variant three times its size, and the row
		// group it is shredded into grows on top of that garbage.
		runtime.GC()
	}
	node, err := rowgroup.VariantNode(opts.Column, schema.Required, *shape)
	if err != nil {
		return st, fmt.Errorf("convert: %w", err)
	}
	sch, err := schema.New("schema", node)
	if err != nil {
		return st, fmt.Errorf("convert: variant schema: %w", err)
	}
	if opts.Verbose != nil {
		fmt.Fprintf(opts.Verbose, "pqsink convert: VARIANT column %s shredded as %s\n%s\n", opts.Column, shape, sch)
	}
	if r.w, err = writer.New(out, sch, opts.Writer...); err != nil {
		return st, err
	}
	r.g = rowgroup.New(sch)
	shredOpts := []rowgroup.VariantOption{rowgroup.VariantColumn(opts.Column), rowgroup.VariantEncoding(encOpts...)}
	if opts.twoPass {
		shredOpts = append(shredOpts, rowgroup.VariantTwoPass())
	}
	shred, err := rowgroup.NewVariantShredder(r.g, shredOpts...)
	if err != nil {
		return st, fmt.Errorf("convert: %w", err)
	}
	if r.rows, err = rowgroup.NewBuilder(r.g, shred); err != nil {
		return st, fmt.Errorf("convert: %w", err)
	}
	for _, sl := range r.sampled {
		line := r.arena[sl.start:sl.end]
		if err := r.rows.Append(line, nil); err != nil {
			if err := r.reject(sl.line, err, line); err != nil {
				return st, err
			}
			continue
		}
		if err := r.maybeFlush(); err != nil {
			return st, err
		}
	}
	r.sampled, r.arena = nil, nil
	for {
		line, err := r.read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		if line == nil {
			continue
		}
		if err := r.rows.Append(line, nil); err != nil {
			if err := r.reject(st.Lines, err, line); err != nil {
				return st, err
			}
			continue
		}
		if err := r.maybeFlush(); err != nil {
			return st, err
		}
	}
	if err := r.flush(); err != nil {
		return st, err
	}
	md, err := r.w.Close()
	if err != nil {
		return st, err
	}
	st.Metadata = md
	st.OutBytes = r.w.Offset()
	if opts.Progress != nil {
		progress(opts.Progress, &st, 0, r.w.Offset(), r.start)
	}
	return st, nil
}

// variantRun is the state of one RunVariant.
type variantRun struct {
	opts  *VariantOptions
	st    *Stats
	lines *lineReader
	enc   *variant.Encoder
	w     *writer.Writer
	g     *rowgroup.RowGroup
	rows  *rowgroup.Builder

	// The sample: the valid lines, back to back in arena, and the bytes
	// they and their Variants take, which bounds the sample.
	arena       []byte
	sampled     []sampledLine
	sampleBytes int64
	md, val     []byte // a sample line's Variant, for the inference

	start, nextProgress time.Time
}

type sampledLine struct {
	line       int64
	start, end int
}

// read returns the next non-blank line, nil for a blank one or one
// rejected as too long, or io.EOF.
func (r *variantRun) read(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	line, err := r.lines.next()
	if err == io.EOF {
		return nil, err
	}
	if err != nil && !errors.Is(err, ErrRecordTooLong) {
		return nil, fmt.Errorf("convert: read line %d: %w", r.st.Lines+1, err)
	}
	r.st.Lines++
	r.st.InBytes += int64(len(line)) + r.lines.skipped
	if err != nil {
		return nil, r.reject(r.st.Lines, err, nil)
	}
	if r.st.Lines&1023 == 0 {
		if r.opts.Progress != nil && time.Now().After(r.nextProgress) {
			r.nextProgress = time.Now().Add(r.opts.ProgressEvery)
			var buffered, written int64
			if r.g != nil {
				buffered, written = int64(r.g.NumRows()), r.w.Offset()
			}
			progress(r.opts.Progress, r.st, buffered, written, r.start)
		}
	}
	if isBlank(line) {
		return nil, nil
	}
	return line, nil
}

// hugeSample is the Variant size from which the sample's buffers are
// collected at once after the inference.
const hugeSample = 16 << 20

// sample encodes the first lines for the inference, keeps their text,
// and infers a shape.
func (r *variantRun) sample(ctx context.Context) (variant.Shape, error) {
	inf := variant.NewInferrer(r.opts.Infer)
	for len(r.sampled) < r.opts.Sample && r.sampleBytes < r.opts.RowGroupSize {
		line, err := r.read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return variant.Shape{}, err
		}
		if line == nil {
			continue
		}
		r.md, r.val, err = r.enc.AppendJSON(r.md[:0], r.val[:0], line)
		if err != nil {
			if err := r.reject(r.st.Lines, err, line); err != nil {
				return variant.Shape{}, err
			}
			continue
		}
		sl := sampledLine{line: r.st.Lines, start: len(r.arena)}
		r.arena = append(r.arena, line...)
		sl.end = len(r.arena)
		r.sampled = append(r.sampled, sl)
		r.sampleBytes += int64(len(r.md) + len(r.val) + len(line))
		v, err := variant.New(r.md, r.val)
		if err == nil {
			err = inf.Add(v)
		}
		if err != nil {
			return variant.Shape{}, fmt.Errorf("convert: line %d: %w", sl.line, err)
		}
	}
	return inf.Shape(), nil
}

func (r *variantRun) reject(line int64, err error, input []byte) error {
	lerr := &LineError{Line: line, Err: err}
	if r.opts.Errors == Fail {
		return lerr
	}
	r.st.Skipped++
	if r.opts.Rejects != nil {
		if err := writeRejectN(r.opts.Rejects, lerr, input, r.lines.skipped); err != nil {
			return fmt.Errorf("convert: write rejected line %d: %w", line, err)
		}
	}
	return nil
}

func (r *variantRun) maybeFlush() error {
	if int64(r.g.Size()) >= r.opts.RowGroupSize {
		return r.flush()
	}
	return nil
}

func (r *variantRun) flush() error {
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
