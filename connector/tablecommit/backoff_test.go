package tablecommit

import (
	"testing"
	"time"
)

// TestRetryDelay: the wait after the n-th failure in a row doubles from
// commit_interval up to the cap, and its jitter takes the upper half.
func TestRetryDelay(t *testing.T) {
	none := func(time.Duration) time.Duration { return 0 }
	all := func(d time.Duration) time.Duration { return d }
	for _, c := range []struct {
		name     string
		interval time.Duration
		n        int
		lo, hi   time.Duration
	}{
		{"first failure", time.Second, 1, 500 * time.Millisecond, time.Second},
		{"second", time.Second, 2, time.Second, 2 * time.Second},
		{"fifth", time.Second, 5, 8 * time.Second, 16 * time.Second},
		{"capped", time.Second, 6, 15 * time.Second, 30 * time.Second},
		{"capped long after", time.Second, 1000, 15 * time.Second, 30 * time.Second},
		{"5s interval", 5 * time.Second, 3, 10 * time.Second, 20 * time.Second},
		{"an interval over the cap is the cap", 2 * time.Minute, 4, time.Minute, 2 * time.Minute},
		{"odd", 3 * time.Nanosecond, 1, time.Nanosecond, 3 * time.Nanosecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := retryDelay(c.interval, c.n, none); got != c.lo {
				t.Errorf("without jitter %s, want %s", got, c.lo)
			}
			if got := retryDelay(c.interval, c.n, all); got != c.hi {
				t.Errorf("with the most jitter %s, want %s", got, c.hi)
			}
			for range 100 {
				if got := retryDelay(c.interval, c.n, randomJitter); got < c.lo || got > c.hi {
					t.Fatalf("random jitter: %s, not within [%s, %s]", got, c.lo, c.hi)
				}
			}
		})
	}
}

// TestBackoffAttempts: a table whose every commit fails, ticked each
// commit_interval (1s) for an hour of simulated time, is tried a bounded
// number of times: a handful while the wait doubles, then one every 15 to
// 30 s; a success makes the next tick try again.
func TestBackoffAttempts(t *testing.T) {
	const interval = time.Second
	var c commits
	start := time.Unix(1_700_000_000, 0)
	attempts, last := 0, time.Time{}
	for tick := range 3600 {
		now := start.Add(time.Duration(tick) * interval)
		if !c.due(now) {
			continue
		}
		attempts++
		last = now
		c.failed(now, interval)
	}
	// Doubling from 1s to the cap takes 6 attempts and at most 31s; then
	// at least 15s between two: at most (3600-0)/15 more.
	if attempts < 3600/30 || attempts > 6+3600/15 {
		t.Errorf("%d attempts in an hour of failures, want between %d and %d", attempts, 3600/30, 6+3600/15)
	}
	if got := c.failures.Load(); int(got) != attempts {
		t.Errorf("%d failures in a row counted, want %d", got, attempts)
	}
	if c.due(last) || c.due(last.Add(interval)) || !c.due(last.Add(MaxRetryDelay)) {
		t.Errorf("after the last failure, due at once %v, a tick later %v, %s later %v; want false, false, true",
			c.due(last), c.due(last.Add(interval)), MaxRetryDelay, c.due(last.Add(MaxRetryDelay)))
	}
	later := start.Add(time.Hour)
	c.succeeded()
	if !c.due(later) || c.failures.Load() != 0 {
		t.Errorf("after a success: due %v, failures %d; want due and 0", c.due(later), c.failures.Load())
	}
}
