package variant

import "fmt"

// SampleOptions bound a Sampler and tune its inference.
type SampleOptions struct {
	// Count is the number of values the sample holds at most.
	// Defaults to 10,000.
	Count int
	// Bytes bounds the sample by the bytes of its values' text and their
	// Variants together: whoever samples holds the text until the shape
	// is known, so the sample stays within what a row group may hold.
	// Defaults to 64 MiB.
	Bytes int64
	// Infer tunes the inference; see InferOptions for its defaults.
	Infer InferOptions
	// Encoding are the options of the JSON encoder (LossyNumbers), which
	// must be those the values are written with afterwards, so that a
	// value the sample took is never refused when it is written.
	Encoding []Option
}

// Sampler infers a shredding Shape from the first JSON values of a
// stream: convert's input and each partition of the sink use it alike,
// with the same bounds and the same answer for a bad value.
type Sampler struct {
	opts    SampleOptions
	inf     *Inferrer
	enc     *Encoder
	md, val []byte
	n       int
	bytes   int64
}

// NewSampler returns an empty sample.
func NewSampler(opts SampleOptions) *Sampler {
	if opts.Count <= 0 {
		opts.Count = 10_000
	}
	if opts.Bytes <= 0 {
		opts.Bytes = 64 << 20
	}
	return &Sampler{opts: opts, inf: NewInferrer(opts.Infer), enc: NewEncoder(opts.Encoding...)}
}

// Add encodes one JSON value and counts it in the sample. A value that is
// not valid JSON, or that no Variant holds, is left out and its error
// returned: the caller rejects it as it would when writing it.
func (s *Sampler) Add(json []byte) error {
	var err error
	s.md, s.val, err = s.enc.AppendJSON(s.md[:0], s.val[:0], json)
	if err != nil {
		return err
	}
	v, err := New(s.md, s.val)
	if err == nil {
		err = s.inf.Add(v)
	}
	if err != nil {
		// The encoder made this value: a failure here is ours.
		return fmt.Errorf("variant: sampling an encoded value: %w", err)
	}
	s.n++
	s.bytes += int64(len(json) + len(s.md) + len(s.val))
	return nil
}

// Len is the number of values sampled.
func (s *Sampler) Len() int { return s.n }

// Full reports whether the sample reached one of its bounds.
func (s *Sampler) Full() bool { return s.n >= s.opts.Count || s.bytes >= s.opts.Bytes }

// Shape returns the shape inferred from the sample. It drops the
// sample's buffers (a huge value's Variant should not outlive the
// inference); the Sampler takes no more values.
func (s *Sampler) Shape() Shape {
	s.md, s.val, s.enc = nil, nil, nil
	return s.inf.Shape()
}

// HugeVariant is the size of a sampled Variant from which it is worth
// collecting the sample's garbage at once after the inference, rather
// than let it set the collector's next goal.
const HugeVariant = 16 << 20

// Huge reports whether the largest Variant buffer the sample held reached
// HugeVariant. Call it before Shape.
func (s *Sampler) Huge() bool { return cap(s.val) >= HugeVariant }
