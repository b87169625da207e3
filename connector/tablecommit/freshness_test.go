package tablecommit

import "testing"

// TestFreshnessBuckets: the histogram's bounds rise, reach an hour, and
// are at most a second apart from 3 s to 10 s, where a freshness target's
// p99 lies; each call returns a slice of its own.
func TestFreshnessBuckets(t *testing.T) {
	b := freshnessBuckets()
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Fatalf("bound %d (%v) not above %v", i, b[i], b[i-1])
		}
		if b[i] > 3 && b[i] <= 10 && b[i]-b[i-1] > 1 {
			t.Errorf("bounds %v and %v: more than a second apart below 10 s", b[i-1], b[i])
		}
	}
	if b[len(b)-1] != 3600 {
		t.Errorf("the last bound is %v, want an hour", b[len(b)-1])
	}
	b[0] = -1
	if freshnessBuckets()[0] == -1 {
		t.Error("a caller's change shows in the next call's bounds")
	}
}
