package reader

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pqsink/pqsink/schema"
)

// TestTimestampCache compares tsCache with appendTimestamp on runs of
// nearby timestamps (the cache's hits), jumps between them, negative
// values, and the ends of the ranges of each unit, UTC or not.
func TestTimestampCache(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, u := range []schema.TimeUnit{schema.Millis, schema.Micros, schema.Nanos} {
		for _, utc := range []bool{true, false} {
			var c tsCache
			check := func(x int64) {
				t.Helper()
				want := string(appendTimestamp([]byte("x"), unitTime(x, u), u, utc))
				if got := string(c.append([]byte("x"), x, u, utc)); got != want {
					t.Fatalf("unit %v utc %v value %d: got %s, want %s", u, utc, x, got, want)
				}
			}
			for _, x := range []int64{0, -1, 1, 59, 60, -60, -61, math.MaxInt64, math.MinInt64, math.MaxInt64 / 2, math.MinInt64 / 2,
				253402300799999, 253402300800000, -62135596800000, -62135596800001, -62167219200000, -62167219200001} {
				check(x)
				check(x / 1000)
				check(x / 1000000)
			}
			x := int64(1795000000) * 1e9 / map[schema.TimeUnit]int64{schema.Millis: 1e6, schema.Micros: 1e3, schema.Nanos: 1}[u]
			for range 200_000 {
				switch r.IntN(50) {
				case 0:
					x = r.Int64() >> r.IntN(40)
				case 1:
					x = -x
				default:
					x += r.Int64N(1e7)
				}
				check(x)
			}
		}
	}
}
