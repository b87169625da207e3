package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/variant"
)

// variantFlags are the flags of `pqsink convert --variant`.
type variantFlags struct {
	column  string // --column: the VARIANT column's name
	shred   string // --shred: auto, none, or a file
	verbose bool   // --verbose: print the chosen schema
	lossy   bool   // --variant-lossy-numbers
}

// shape turns --shred into a shredding shape: nil for auto (inferred from
// the first records), the zero shape for none, or the shape a file
// describes, either as a Parquet message with one VARIANT field, or as a
// list of "PATH TYPE" lines (see variant.ParseShapePaths).
func (f variantFlags) shape() (*variant.Shape, error) {
	switch f.shred {
	case "auto":
		return nil, nil
	case "none":
		return &variant.Shape{}, nil
	}
	text, err := os.ReadFile(f.shred)
	if err != nil {
		return nil, usagef("--shred: want auto, none or a schema file: %v", err)
	}
	shape, err := rowgroup.ParseVariantShape(string(text))
	if err != nil {
		return nil, fmt.Errorf("--shred %s: %w", f.shred, err)
	}
	return &shape, nil
}

// convertVariant runs convert.RunVariant into output ("-" for stdout).
func convertVariant(ctx context.Context, output string, stdout, stderr io.Writer, in io.Reader, opts convert.Options, f variantFlags) (convert.Stats, error) {
	shape, err := f.shape()
	if err != nil {
		return convert.Stats{}, err
	}
	vopts := convert.VariantOptions{Options: opts, Column: f.column, Shape: shape, LossyNumbers: f.lossy}
	if f.verbose {
		vopts.Verbose = stderr
	}
	return writeOutput(ctx, output, stdout, func(w io.Writer) (convert.Stats, error) { return convert.RunVariant(ctx, in, w, vopts) })
}
