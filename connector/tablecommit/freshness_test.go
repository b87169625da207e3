package tablecommit

import (
	"slices"
	"testing"
)

// TestFreshnessBuckets: the bounds of pqsink_table_freshness_seconds run
// from half a second to an hour in increasing order, and each call gives
// a slice of its own, so that a caller changing one changes no other's.
func TestFreshnessBuckets(t *testing.T) {
	a := freshnessBuckets()
	if len(a) != 20 || a[0] != 0.5 || a[len(a)-1] != 3600 || !slices.IsSorted(a) {
		t.Fatalf("buckets %v", a)
	}
	a[0] = 99
	if b := freshnessBuckets(); b[0] != 0.5 {
		t.Errorf("a change to one call's buckets shows in the next: %v", b)
	}
}
