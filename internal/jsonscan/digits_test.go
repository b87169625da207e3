package jsonscan

import (
	"math/rand/v2"
	"testing"
)

// TestDigitsEnd compares the word-at-a-time digit scan with a byte loop on
// runs of digits ended by every byte value, at every alignment.
func TestDigitsEnd(t *testing.T) {
	want := func(d []byte, i int) int {
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i
	}
	r := rand.New(rand.NewPCG(1, 2))
	for stop := range 256 {
		for n := range 20 {
			for tail := range 10 {
				d := make([]byte, 0, n+1+tail)
				for range n {
					d = append(d, byte('0'+r.IntN(10)))
				}
				d = append(d, byte(stop))
				for range tail {
					d = append(d, byte(r.IntN(256)))
				}
				for i := 0; i <= len(d); i++ {
					if got, w := digitsEnd(d, i), want(d, i); got != w {
						t.Fatalf("digitsEnd(%q, %d) = %d, want %d", d, i, got, w)
					}
				}
			}
		}
	}
}
