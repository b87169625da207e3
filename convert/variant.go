package convert

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
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
	if opts.Column == "" {
		opts.Column = "payload"
	}
	if opts.Sample <= 0 {
		opts.Sample = 10_000
	}
	r := newRun(&opts.Options)
	// A Variant row can hold a huge line: weigh the row group at every row,
	// and let it grow by doubling rather than reserve for the target.
	r.weighEvery, r.reserve = 0, false
	var encOpts []variant.Option
	if opts.LossyNumbers {
		encOpts = append(encOpts, variant.LossyNumbers())
	}
	src := &variantSource{lineSource: newLineSource(in, opts.MaxRecordBytes, &r.st)}
	shape := opts.Shape
	if shape == nil {
		s, huge, err := src.sample(ctx, r, &opts, encOpts)
		if err != nil {
			return r.st, err
		}
		shape = &s
		if huge {
			// The sample's Variants were for the inference and are gone;
			// do not let the largest of them (a huge line's) set the
			// collector's next goal either: a 50 MiB line of small
			// numbers has a Variant three times its size, and the row
			// group it is shredded into grows on top of that garbage.
			runtime.GC()
		}
	}
	node, err := rowgroup.VariantNode(opts.Column, schema.Required, *shape)
	if err != nil {
		return r.st, fmt.Errorf("convert: %w", err)
	}
	sch, err := schema.New("schema", node)
	if err != nil {
		return r.st, fmt.Errorf("convert: variant schema: %w", err)
	}
	if opts.Verbose != nil {
		fmt.Fprintf(opts.Verbose, "pqsink convert: VARIANT column %s shredded as %s\n%s\n", opts.Column, shape, sch)
	}
	shredOpts := []rowgroup.VariantOption{rowgroup.VariantColumn(opts.Column), rowgroup.VariantEncoding(encOpts...)}
	if opts.twoPass {
		shredOpts = append(shredOpts, rowgroup.VariantTwoPass())
	}
	err = r.open(out, sch, opts.Writer, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewVariantShredder(g, shredOpts...)
	})
	if err != nil {
		return r.st, err
	}
	if err := r.convert(ctx, src); err != nil {
		return r.st, err
	}
	return r.finish()
}

// variantSource is the lines of a VARIANT conversion: first the lines of
// the sample, kept as text while the shape was inferred, then the lines
// after them.
type variantSource struct {
	*lineSource

	// The sample: the valid lines, back to back in arena, and the next to
	// return.
	arena   []byte
	sampled []sampledLine
	replay  int
	cur     *sampledLine // the sample line next returned, nil after the sample
}

type sampledLine struct {
	line       int64
	start, end int
}

// sample reads the first lines into variant.Sampler, the sampler the
// sink uses too, keeps their text, and infers a shape. The sample ends
// after opts.Sample valid lines, or when the lines and their Variants
// reach a row group's size. Lines that are too long or that the sampler
// refuses (not JSON) go to the error policy as they are read. huge
// reports that a sample line's Variant reached variant.HugeVariant bytes.
func (s *variantSource) sample(ctx context.Context, r *run, opts *VariantOptions, encOpts []variant.Option) (shape variant.Shape, huge bool, err error) {
	sm := variant.NewSampler(variant.SampleOptions{Count: opts.Sample, Bytes: opts.RowGroupSize, Infer: opts.Infer, Encoding: encOpts})
	for !sm.Full() {
		if err := ctx.Err(); err != nil {
			return variant.Shape{}, false, err
		}
		line, err := s.lineSource.next()
		if err == io.EOF {
			break
		}
		r.tick()
		if err != nil {
			if err := r.bad(err); err != nil {
				return variant.Shape{}, false, err
			}
			continue
		}
		if line == nil {
			continue
		}
		if err := sm.Add(line); err != nil {
			if err := r.bad(s.bad(err)); err != nil {
				return variant.Shape{}, false, err
			}
			continue
		}
		sl := sampledLine{line: s.st.Lines, start: len(s.arena)}
		s.arena = append(s.arena, line...)
		sl.end = len(s.arena)
		s.sampled = append(s.sampled, sl)
	}
	huge = sm.Huge()
	return sm.Shape(), huge, nil
}

func (s *variantSource) next() ([]byte, error) {
	if s.replay < len(s.sampled) {
		s.cur = &s.sampled[s.replay]
		s.replay++
		return s.arena[s.cur.start:s.cur.end], nil
	}
	if s.sampled != nil {
		s.arena, s.sampled, s.cur = nil, nil, nil
	}
	return s.lineSource.next()
}

func (s *variantSource) fail(err error) error {
	if s.cur != nil {
		return &badRecord{line: s.cur.line, err: err, input: s.arena[s.cur.start:s.cur.end]}
	}
	return s.lineSource.fail(err)
}
