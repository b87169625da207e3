package rowgroup

import (
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// BenchmarkVariantShredEvents shreds the sink's reference records
// (internal/events, about 210 bytes each) into a VARIANT column, the
// ordinary workload of `pqsink convert --variant` and of a sink with
// format.type variant: shredded by the shape inferred from them (the
// direct path, and the two-pass reference), and unshredded. It reports
// ns/record.
func BenchmarkVariantShredEvents(b *testing.B) {
	gen := events.New(1, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	data := make([][]byte, 4096)
	size := 0
	inf := variant.NewInferrer(variant.InferOptions{})
	enc := variant.NewEncoder()
	for i := range data {
		data[i] = gen.Append(nil)
		size += len(data[i])
		md, val, err := enc.AppendJSON(nil, nil, data[i])
		if err != nil {
			b.Fatal(err)
		}
		v, err := variant.New(md, val)
		if err != nil {
			b.Fatal(err)
		}
		if err := inf.Add(v); err != nil {
			b.Fatal(err)
		}
	}
	inferred := inf.Shape()
	run := func(shape variant.Shape, opts ...VariantOption) func(b *testing.B) {
		return func(b *testing.B) {
			node, err := VariantNode("payload", schema.Required, shape)
			if err != nil {
				b.Fatal(err)
			}
			s, err := schema.New("m", node)
			if err != nil {
				b.Fatal(err)
			}
			g := New(s)
			sh, err := NewVariantShredder(g, opts...)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(size / len(data)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%10000 == 0 {
					g.Reset() // a flushed row group
				}
				if err := sh.ShredJSON(data[i%len(data)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
		}
	}
	b.Run("shred=auto", run(inferred))
	b.Run("shred=auto/twopass", run(inferred, VariantTwoPass()))
	b.Run("shred=none", run(variant.Shape{}))
}
