// Package backoff holds the waits between retries that the sink's loops
// share: a delay doubling from a first one up to a limit, and a sleep that
// a context cuts short.
package backoff

import (
	"context"
	"time"
)

// Doubling is the wait before retry attempt n (from 1): first, doubled
// at each attempt after the first, at most limit.
func Doubling(first time.Duration, n int, limit time.Duration) time.Duration {
	d := first
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Sleep waits for d or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
