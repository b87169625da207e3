package benchmarks

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	avariant "github.com/apache/arrow-go/v18/parquet/variant"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

const variantRows = 200_000

// variantEvents renders clicks as nested JSON documents, one per line: the
// same input as benchmarks/cmd/variantbench.
func variantEvents(n int) []byte {
	var out []byte
	for _, c := range Clicks(n) {
		out = c.AppendNestedJSON(out)
	}
	return out
}

// inferShape runs pqsink's inference on the first 10,000 lines, as
// convert --variant does, so that both libraries write the same shape.
func inferShape(b *testing.B, input []byte) variant.Shape {
	in := variant.NewInferrer(variant.InferOptions{})
	enc := variant.NewEncoder()
	var md, val []byte
	for i, line := range bytes.SplitAfter(input, []byte("\n")) {
		if i == 10_000 || len(line) == 0 {
			break
		}
		var err error
		if md, val, err = enc.AppendJSON(md[:0], val[:0], line); err != nil {
			b.Fatal(err)
		}
		v, err := variant.New(md, val)
		if err != nil {
			b.Fatal(err)
		}
		if err := in.Add(v); err != nil {
			b.Fatal(err)
		}
	}
	return in.Shape()
}

// BenchmarkVariantConvert writes JSON lines as a shredded VARIANT column
// with ZSTD, reporting input MB/s (from SetBytes), rows/s and file_bytes:
// pqsink's convert.RunVariant with inference, and with the shape given;
// arrow-go parsing each line with its variant.ParseJSONBytes and
// appending to its shredded VariantBuilder of the same shape, written by
// pqarrow in row groups of 512K rows.
func BenchmarkVariantConvert(b *testing.B) {
	input := variantEvents(variantRows)
	shape := inferShape(b, input)
	b.Logf("shape: %s", shape.String())
	pqsink := func(shape *variant.Shape) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			var size int64
			for b.Loop() {
				var out countingDiscard
				opts := convert.VariantOptions{Shape: shape}
				opts.Writer = []writer.Option{writer.Compression(meta.CodecZstd, 3)}
				st, err := convert.RunVariant(context.Background(), bytes.NewReader(input), &out, opts)
				if err != nil {
					b.Fatal(err)
				}
				if st.Rows != variantRows {
					b.Fatalf("%d rows", st.Rows)
				}
				size = out.n
			}
			report(b, variantRows, size)
		}
	}
	b.Run("lib=pqsink/shred=auto", pqsink(nil))
	b.Run("lib=pqsink/shred=given", pqsink(&shape))
	b.Run("lib=pqsink/shred=none", pqsink(&variant.Shape{}))
	arrowGo := func(shape *variant.Shape) func(b *testing.B) {
		return func(b *testing.B) {
			vt := extensions.NewDefaultVariantType()
			if shape.Typed() {
				dt, err := arrowShape(shape)
				if err != nil {
					b.Fatal(err)
				}
				vt = extensions.NewShreddedVariantType(dt)
			}
			b.SetBytes(int64(len(input)))
			var size int64
			for b.Loop() {
				var out countingDiscard
				if err := writeArrowVariant(&out, vt, input); err != nil {
					b.Fatal(err)
				}
				size = out.n
			}
			report(b, variantRows, size)
		}
	}
	b.Run("lib=arrow-go/shred=given", arrowGo(&shape))
	b.Run("lib=arrow-go/shred=none", arrowGo(&variant.Shape{}))
}

func writeArrowVariant(out *countingDiscard, vt *extensions.VariantType, input []byte) error {
	sc := arrow.NewSchema([]arrow.Field{{Name: "payload", Type: vt}}, nil)
	fw, err := newArrowWriter(out, sc)
	if err != nil {
		return err
	}
	bld := extensions.NewVariantBuilder(memory.DefaultAllocator, vt)
	defer bld.Release()
	const batch = 64 * 1024
	rows := 0
	flush := func() error {
		arr := bld.NewArray()
		defer arr.Release()
		rec := array.NewRecordBatch(sc, []arrow.Array{arr}, int64(arr.Len()))
		defer rec.Release()
		return fw.Write(rec)
	}
	for line := range bytes.SplitSeq(input, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		v, err := avariant.ParseJSONBytes(line, false)
		if err != nil {
			return err
		}
		bld.Append(v)
		if rows++; rows%batch == 0 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return fw.Close()
}

// arrowShape is the arrow type that extensions.NewShreddedVariantType
// turns into the typed_value of shape s.
func arrowShape(s *variant.Shape) (arrow.DataType, error) {
	switch s.Type {
	case variant.Object:
		var fields []arrow.Field
		for i := range s.Fields {
			f := &s.Fields[i]
			if !f.Shape.Typed() {
				continue
			}
			dt, err := arrowShape(&f.Shape)
			if err != nil {
				return nil, err
			}
			fields = append(fields, arrow.Field{Name: f.Name, Type: dt, Nullable: true})
		}
		return arrow.StructOf(fields...), nil
	case variant.Array:
		dt, err := arrowShape(s.Element)
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(dt), nil
	case variant.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case variant.Int8:
		return arrow.PrimitiveTypes.Int8, nil
	case variant.Int16:
		return arrow.PrimitiveTypes.Int16, nil
	case variant.Int32:
		return arrow.PrimitiveTypes.Int32, nil
	case variant.Int64:
		return arrow.PrimitiveTypes.Int64, nil
	case variant.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case variant.String:
		return arrow.BinaryTypes.String, nil
	case variant.Decimal4, variant.Decimal8, variant.Decimal16:
		// pqarrow (v18.8.0) cannot write DECIMAL32/64 arrays; decimal128
		// is what it writes for every precision.
		return &arrow.Decimal128Type{Precision: int32(s.Precision), Scale: int32(s.Scale)}, nil
	}
	return nil, fmt.Errorf("no arrow type for %v", s.Type)
}
