package rowgroup

import (
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
)

// BenchmarkJSONShredEvents shreds the sink's reference records
// (internal/events) with their schema, the workload of `pqsink bench` and
// `pqsink convert --schema`, and reports ns/record.
func BenchmarkJSONShredEvents(b *testing.B) {
	g, sh := newShredder(b, events.Schema)
	gen := events.New(1, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	data := make([][]byte, 4096)
	size := 0
	for i := range data {
		data[i] = gen.Append(nil)
		size += len(data[i])
	}
	b.SetBytes(int64(size / len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if i%10000 == 0 {
			g.Reset() // a flushed row group
		}
		if err := sh.Shred(data[i%len(data)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/record")
}
