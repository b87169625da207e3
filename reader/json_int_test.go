package reader

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestAppendInt compares appendInt with strconv.AppendInt around every
// power of ten, at the ends of the range and on random values, into
// buffers with and without room.
func TestAppendInt(t *testing.T) {
	check := func(x int64) {
		t.Helper()
		for _, dst := range [][]byte{nil, []byte("ab"), make([]byte, 3, 64)} {
			want := string(strconv.AppendInt(append([]byte(nil), dst...), x, 10))
			if got := string(appendInt(dst, x)); got != want {
				t.Fatalf("%d: got %q, want %q", x, got, want)
			}
		}
	}
	for _, x := range []int64{0, 1, -1, 9, 10, 99, 100, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32} {
		check(x)
	}
	for p := int64(1); p > 0 && p <= math.MaxInt64/10; p *= 10 {
		for _, x := range []int64{p - 1, p, p + 1, 10*p - 1} {
			check(x)
			check(-x)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 200_000 {
		check(r.Int64() >> r.IntN(64))
		check(-r.Int64() >> r.IntN(64))
	}
	if got := string(appendUint(nil, math.MaxUint64)); got != strconv.FormatUint(math.MaxUint64, 10) {
		t.Fatalf("MaxUint64: got %s", got)
	}
}

// TestAppendDigitsInPlace compares appendDigitsInPlace with appendDigits
// for every width the timestamps use and values with leading zeros.
func TestAppendDigitsInPlace(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 6, 9} {
		for _, v := range []int{0, 1, 9, 10, 99, 100, 12345, 999999, 123456789, 5, 50, 505} {
			v %= int(tenTo(n))
			for _, dst := range [][]byte{nil, []byte("x"), make([]byte, 1, 32)} {
				want := string(appendDigits(append([]byte(nil), dst...), v, n))
				if got := string(appendDigitsInPlace(dst, uint64(v), n)); got != want {
					t.Fatalf("%d in %d digits: got %q, want %q", v, n, got, want)
				}
			}
		}
	}
}
