package writer

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestChunkBuffer writes runs of writes of many sizes, twice through one
// buffer (reset between), and wants back exactly what was written.
func TestChunkBuffer(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
	}{
		{"empty", nil},
		{"one small", []int{10}},
		{"fills the first segment exactly", []int{minSegment}},
		{"one over a segment", []int{minSegment + 1}},
		{"many pages", []int{300 << 10, 5, 1 << 20, 70, 2 << 20, 0, 900 << 10, 17 << 20}},
	}
	var c chunkBuffer
	r := rand.New(rand.NewPCG(1, 2))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for round := range 2 {
				c.reset()
				var want []byte
				for _, n := range tt.sizes {
					b := make([]byte, n)
					for i := range b {
						b[i] = byte(r.Uint32())
					}
					want = append(want, b...)
					if k, err := c.Write(b); k != n || err != nil {
						t.Fatalf("Write(%d bytes) = %d, %v", n, k, err)
					}
				}
				var got bytes.Buffer
				if err := c.writeTo(&got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("round %d: %d bytes back, want %d", round, got.Len(), len(want))
				}
			}
		})
	}
}
