package schema

import (
	"math"
	"testing"
)

// TestNanosBack: microseconds come back as nanoseconds, saturating at
// int64's ends, and a multiplier of 1 leaves the value as it is.
func TestNanosBack(t *testing.T) {
	for _, c := range []struct{ us, mul, want int64 }{
		{1_700_000_000_123_456, 1000, 1_700_000_000_123_456_000},
		{-1, 1000, -1000},
		{0, 1000, 0},
		{math.MaxInt64/1000 + 1, 1000, math.MaxInt64},
		{math.MinInt64/1000 - 1, 1000, math.MinInt64},
		{math.MinInt64, 1, math.MinInt64},
		{42, 1, 42},
	} {
		if got := NanosBack(c.us, c.mul); got != c.want {
			t.Errorf("NanosBack(%d, %d) = %d, want %d", c.us, c.mul, got, c.want)
		}
	}
}
