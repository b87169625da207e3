package writer

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// TestKeyAt wants the short keys read from a buffer to equal those packed
// from the value alone, at every offset and length, the buffer's end
// included.
func TestKeyAt(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 7))
	for _, size := range []int{0, 3, 8, 9, 40} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(r.IntN(256))
		}
		for lo := 0; lo <= size; lo++ {
			for hi := lo; hi <= min(size, lo+maxShort); hi++ {
				a, b, ok := keyAt(buf, uint32(lo), uint32(hi))
				if ok != (lo+8 <= size) {
					t.Fatalf("buffer of %d, [%d:%d]: keyAt ok %v", size, lo, hi, ok)
				}
				if !ok {
					continue
				}
				wa, wb := shortKey(buf[lo:hi])
				if a != wa || b != wb {
					t.Fatalf("buffer of %d, [%d:%d]: keyAt %x %x, shortKey %x %x", size, lo, hi, a, b, wa, wb)
				}
			}
		}
	}
}

// TestBytesDictAdd wants a string dictionary to give every value the index
// of its first appearance, whatever its length, across calls, after being
// cut back, and when its table grows.
func TestBytesDictAdd(t *testing.T) {
	for _, tt := range []struct {
		name     string
		distinct int
		maxLen   int
	}{
		{"short few", 20, 16},
		{"short many", 5000, 16},
		{"mixed", 3000, 40},
		{"long", 500, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tt.distinct), 1))
			pool := make([][]byte, tt.distinct)
			for i := range pool {
				// Distinct values that share prefixes and suffixes and
				// differ in length by a byte.
				v := fmt.Appendf(nil, "%x", i)
				n := r.IntN(tt.maxLen + 1)
				for len(v) < n {
					v = append(v, 'a'+byte(len(v)%3))
				}
				pool[i] = v
			}
			g := rowgroup.New(schema.MustParse(`message m { required binary v; }`))
			c := g.Column(0)
			for range 20_000 {
				c.AppendBytes(0, pool[r.IntN(len(pool))])
				g.EndRow()
			}
			d := newBytesDict(0)
			d.table.reset()
			var idx []int32
			want := map[string]int32{}
			check := func(v0, v1 int) {
				t.Helper()
				for i := v0; i < v1; i++ {
					v := c.ByteArray(i)
					j, ok := want[string(v)]
					if !ok {
						j = int32(len(want))
						want[string(v)] = j
					}
					if idx[i] != j || !bytes.Equal(d.entry(int(j)), v) {
						t.Fatalf("value %d (%q): index %d, want %d", i, v, idx[i], j)
					}
				}
				if d.len() != len(want) {
					t.Fatalf("%d entries, want %d", d.len(), len(want))
				}
			}
			idx = d.add(idx, c, 0, 7000)
			check(0, 7000)
			// Cut back to half, as a chunk undoes a page, and go on.
			n := d.len() / 2
			d.truncate(n)
			for k, j := range want {
				if j >= int32(n) {
					delete(want, k)
				}
			}
			idx = idx[:0]
			for i := 0; i < 7000; i++ {
				idx = append(idx, want[string(c.ByteArray(i))]) // placeholders for values 0..6999
			}
			idx = d.add(idx, c, 7000, 20_000)
			check(7000, 20_000)
		})
	}
}
