package avrofmt

import (
	"math"
	"strings"
	"testing"
)

// TestTimeMillisBack: a time in microseconds gives its int of
// milliseconds; one beyond an int of milliseconds, which the sink never
// writes, is an error naming the field.
func TestTimeMillisBack(t *testing.T) {
	for _, c := range []struct {
		us, want int64
		err      bool
	}{
		{45_296_789_000, 45_296_789, false},
		{math.MaxInt32 * 1000, math.MaxInt32, false},
		{math.MinInt32 * 1000, math.MinInt32, false},
		{(math.MaxInt32 + 1) * 1000, 0, true},
		{math.MinInt64, 0, true},
	} {
		got, err := timeMillisBack(c.us, "a.tod")
		if (err != nil) != c.err || got != c.want {
			t.Errorf("timeMillisBack(%d) = %d, %v; want %d, error %v", c.us, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), "a.tod") {
			t.Errorf("error %q does not name the field", err)
		}
	}
}
