package writer

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// BenchmarkDictionary measures building a chunk's dictionary, the
// writer's hot loop for columns of few distinct values.
func BenchmarkDictionary(b *testing.B) {
	const rows = 1 << 18
	for _, tc := range []struct {
		name     string
		schema   string
		distinct int
	}{
		{"strings/10", `message m { required binary v (STRING); }`, 10},
		{"strings/1000", `message m { required binary v (STRING); }`, 1000},
		{"short/50", `message m { required binary v (STRING); }`, 50},
		{"int64/1000", `message m { required int64 v; }`, 1000},
		{"double/100000", `message m { required double v; }`, 100000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := schema.MustParse(tc.schema)
			g := rowgroup.New(s)
			c := g.Column(0)
			r := rand.New(rand.NewPCG(1, 2))
			for range rows {
				k := r.IntN(tc.distinct)
				switch {
				case tc.name == "short/50":
					c.AppendBytes(0, fmt.Appendf(nil, "C%c%c", 'A'+k/26, 'A'+k%26))
				case c.Leaf.Physical == meta.TypeByteArray:
					c.AppendBytes(0, fmt.Appendf(nil, "https://shop.example.com/item/%d", k))
				case c.Leaf.Physical == meta.TypeDouble:
					c.AppendDouble(0, float64(k)/100)
				default:
					c.AppendInt64(0, int64(k)*7919)
				}
				g.EndRow()
			}
			d := newDictionary(c.Leaf.Physical, 0)
			var idx []int32
			var cpu time.Duration
			for b.Loop() {
				if cpu == 0 { // b.Loop's first call starts the clock
					cpu = processCPU()
				}
				d.reset()
				idx = d.add(idx[:0], c, 0, rows)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/value")
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N*rows), "cpu-ns/value")
		})
	}
}
