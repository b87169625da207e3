package variant

import (
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/jsonscan"
)

// BenchmarkEncodeEvents encodes the sink's reference records (about 210
// bytes, nested objects and an array), the common case of the Encoder.
func BenchmarkEncodeEvents(b *testing.B) {
	g := events.New(1, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	lines := make([][]byte, 1000)
	size := 0
	for i := range lines {
		lines[i] = g.Append(nil)
		size += len(lines[i])
	}
	// The one-pass Builder, and the node-tree one it replaced, in turns.
	b.Run("onepass", func(b *testing.B) {
		e := NewEncoder()
		var m, v []byte
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var err error
				m, v, err = e.AppendJSON(m[:0], v[:0], l)
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		var rb refBuilder
		var scan jsonscan.Scanner
		var m, v []byte
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			for _, l := range lines {
				var err error
				m, v, err = rb.encode(&scan, m[:0], v[:0], l, false)
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
