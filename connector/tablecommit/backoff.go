package tablecommit

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/pqsink/pqsink/internal/backoff"
)

// Backoff: a table whose commits fail (the catalog down, slow or
// refusing) is not tried again every commit_interval. After the n-th
// failure in a row the next periodic commit waits retryDelay: the
// interval doubled per failure, capped at MaxRetryDelay, drawn in the
// upper half of that (jitter, so that the members of a group and the
// tables of one member do not retry in step). A commit that succeeds
// resets it. The files keep arriving meanwhile and are held, so that the
// commit after the outage holds them all: the table catches up in one
// snapshot. pqsink_table_oldest_uncommitted_seconds shows the delay as it
// grows, and pqsink_table_freshness_seconds once the records are in.
// The commits of a rebalance and of the shutdown do not wait.

// MaxRetryDelay is the longest wait between two periodic commits of a
// failing table, unless table.commit_interval is longer: once the
// catalog is back, the table catches up within it.
const MaxRetryDelay = 30 * time.Second

// retryDelay is how long the periodic commits of a table wait after its
// n-th failed commit in a row (n ≥ 1), commit_interval being interval:
// interval·2^(n-1), at most max(MaxRetryDelay, interval), of which
// jitter(d) takes a random part of the upper half.
func retryDelay(interval time.Duration, n int, jitter func(time.Duration) time.Duration) time.Duration {
	d := backoff.Doubling(interval, n, max(MaxRetryDelay, interval))
	return d/2 + jitter(d-d/2)
}

// randomJitter is a uniformly random duration in [0, d].
func randomJitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d + 1)
}

// failed notes a failed commit at now, and returns how long the
// periodic commits now wait.
func (c *commits) failed(now time.Time, interval time.Duration) time.Duration {
	n := c.failures.Add(1)
	d := retryDelay(interval, int(n), randomJitter)
	c.retryAt.Store(now.Add(d).UnixNano())
	return d
}

// succeeded notes a commit that succeeded: the next is on time.
func (c *commits) succeeded() {
	c.failures.Store(0)
	c.retryAt.Store(0)
}

// due says whether the periodic commit at now may try the table: not
// while it backs off after failures.
func (c *commits) due(now time.Time) bool {
	at := c.retryAt.Load()
	return at == 0 || !now.Before(time.Unix(0, at))
}

// commitDue commits, of every table, what it holds, except the tables
// whose commits back off after failures (Run, each commit_interval).
func (t *Tables) commitDue(ctx context.Context, now time.Time) {
	for _, tc := range t.all() {
		if !tc.due(now) {
			continue
		}
		t.commitOne(ctx, tc)
	}
}
