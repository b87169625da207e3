// Package variantfmt is the VARIANT format (format.type: variant): each
// record value is JSON, written into one VARIANT column, shredded as
// format.shred says: by a given shape, not at all, or by a shape inferred
// from each Kafka partition's first records.
package variantfmt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/variant"
)

// Name is the format's format.type.
const Name = "variant"

// variantFormat is the format opened for a sink.
type variantFormat struct {
	envelope    bool
	timeUnit    schema.TimeUnit
	column      string
	shape       *variant.Shape // nil: inferred from each partition's first records
	sample      int            // records in the sample at most
	sampleBytes int64          // bytes of the sample at most: a row group's
	opts        []variant.Option
}

// Open is the format's format.Driver.
func Open(cfg *config.Config, _ format.Env) (format.Format, error) {
	f := &variantFormat{envelope: cfg.Envelope, timeUnit: format.TimeUnit(cfg.Table != nil),
		column: cfg.Format.Column, sample: cfg.Format.ShredSample, sampleBytes: cfg.Parquet.RowGroupBytes}
	if cfg.Format.LossyNumbers {
		f.opts = append(f.opts, variant.LossyNumbers())
	}
	switch cfg.Format.Shred {
	case "auto":
	case "none":
		f.shape = &variant.Shape{}
	default:
		path := format.Resolve(cfg.Dir, cfg.Format.Shred)
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("format.shred: want auto, none or a shape file: %w", err)
		}
		shape, err := rowgroup.ParseVariantShape(string(text))
		if err != nil {
			return nil, fmt.Errorf("format.shred %s: %w", path, err)
		}
		f.shape = &shape
	}
	return f, nil
}

// FixedSchema is nil when the shredding is inferred.
func (f *variantFormat) FixedSchema() (*schema.Schema, error) {
	if f.shape == nil {
		return nil, nil
	}
	return f.schema(*f.shape)
}

// TableSchema is the unshredded schema: a table has one VARIANT column
// whatever the shredding.
func (f *variantFormat) TableSchema() (*schema.Schema, error) { return f.schema(variant.Shape{}) }

func (f *variantFormat) SchemaPerRecord() bool              { return false }
func (f *variantFormat) Binary() bool                       { return false }
func (f *variantFormat) Fixed() *format.Schema              { return nil }
func (f *variantFormat) TextOptions() []rowgroup.JSONOption { return nil }

// schema is the files' schema shredded by shape.
func (f *variantFormat) schema(shape variant.Shape) (*schema.Schema, error) {
	node, err := rowgroup.VariantNode(f.column, schema.Required, shape)
	if err != nil {
		return nil, err
	}
	return format.WithEnvelope(f.envelope, f.timeUnit, "schema", node)
}

func (f *variantFormat) newPayload(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
	return rowgroup.NewVariantShredder(g, rowgroup.VariantColumn(f.column), rowgroup.VariantEncoding(f.opts...))
}

func (f *variantFormat) NewDecoder(p format.Partition) format.Decoder {
	fixed := format.Fixed{Schema: p.Schema, NewPayload: f.newPayload}
	if p.Schema != nil {
		return &fixed
	}
	return &inferred{Fixed: fixed, f: f, log: p.Log, fit: p.Fit}
}

// inferred is VARIANT with shred: auto. Its shredding is inferred from the
// partition's first records (at most format.shred_sample of them and a
// row group's bytes, or those that came within the sample wait), with
// convert's sampler; after that it is a format.Fixed.
type inferred struct {
	format.Fixed
	f       *variantFormat
	log     *slog.Logger
	sampler *variant.Sampler
	fit     format.FitFunc // nil without a table
}

func (x *inferred) Sampling() bool { return x.Schema == nil }

func (x *inferred) Sample(value []byte) bool {
	if x.sampler == nil {
		x.sampler = variant.NewSampler(variant.SampleOptions{Count: x.f.sample, Bytes: x.f.sampleBytes, Encoding: x.f.opts})
	}
	// A bad value is left out of the sample, and rejected when written.
	_ = x.sampler.Add(value)
	return x.sampler.Full()
}

func (x *inferred) Learn(ctx context.Context) error {
	if x.Schema != nil {
		return nil
	}
	if x.sampler == nil { // no record came: the zero sample
		x.sampler = variant.NewSampler(variant.SampleOptions{})
	}
	n, shape := x.sampler.Len(), x.sampler.Shape()
	s, err := x.f.schema(shape)
	if err != nil {
		return fmt.Errorf("inferred variant shape %s: %w", shape.String(), err)
	}
	if x.fit != nil {
		// The table has one VARIANT column whatever the shredding: this
		// fails only when its catalog cannot be reached, or when the table
		// was changed under the sink.
		fitted, err := x.fit(ctx, s)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			return err
		case err != nil:
			return format.CatalogUnreachable(ctx, x.log, err)
		}
		s = fitted
	}
	x.sampler = nil
	x.Schema = s
	x.log.Info("variant shredding inferred", "records", n, "shape", shape.String())
	return nil
}
