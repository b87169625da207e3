package avrorow

import (
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/schema/avro"
)

// The reference record (internal/events, about 210 bytes as JSON, 110 as
// Avro) decoded by the compiled decoder into column buffers, and by
// goavro's NativeFromBinary into native values (a map per record, which
// is all it does: no columns).
//
//	go test ./rowgroup/avrorow -run '^$' -bench . -benchmem

func BenchmarkDecoder(b *testing.B) {
	s := avro.MustParse(avroevents.Schema)
	_, recs := eventRecords(b, 4096)
	g, _, bl := newDecoder(b, s)
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n / len(recs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(recs) == 0 && i > 0 {
			g.Reset()
		}
		if err := bl.Append(recs[i%len(recs)], nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkGoavroNativeFromBinary(b *testing.B) {
	s := avro.MustParse(avroevents.Schema)
	_, recs := eventRecords(b, 4096)
	codec := s.Codec()
	n := 0
	for _, r := range recs {
		n += len(r)
	}
	b.SetBytes(int64(n / len(recs)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := codec.NativeFromBinary(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
