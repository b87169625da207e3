package tablecommit

import (
	"math"
	"time"
)

// Freshness: how long a record takes from Kafka to a snapshot of its
// table. The partitions keep, per file, the oldest and newest of its
// records' times (RecordTimes) and hand them over with the file (Add); a
// committer holds them until the commit that puts the file in the table,
// observes the file's two ages then (pqsink_table_freshness_seconds), and
// keeps the oldest time it still holds (Oldest), which with the
// partitions' own makes pqsink_table_oldest_uncommitted_seconds.

// RecordTimes are the oldest and newest record times of a file, Unix
// nanoseconds; 0 when the file has no record yet.
type RecordTimes struct {
	Oldest, Newest int64
	// Adopted says that the file is an earlier owner's object, whose
	// records may be in the table already: its ages are not observed.
	Adopted bool
}

// Note counts a record of time at.
func (t *RecordTimes) Note(at int64) {
	if t.Oldest == 0 || at < t.Oldest {
		t.Oldest = at
	}
	if at > t.Newest {
		t.Newest = at
	}
}

// Older is the older of two record times, 0 standing for none.
func Older(a, b int64) int64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// holdTime adds the times of the file at loc, handed over by a
// partition, to what the committer holds (tc.mu held).
func (tc *Committer) holdTime(loc string, t RecordTimes) {
	if tc.times == nil {
		tc.times = map[string]RecordTimes{}
	}
	tc.times[loc] = t
	tc.oldest.Store(Older(tc.oldest.Load(), t.Oldest))
}

// refreshOldest computes again the oldest record time of the files the
// committer holds (tc.mu held).
func (tc *Committer) refreshOldest() {
	var o int64
	for _, t := range tc.times {
		o = Older(o, t.Oldest)
	}
	tc.oldest.Store(o)
}

// freshnessBuckets returns the bounds of pqsink_table_freshness_seconds:
// from a second (the shortest commit_interval) to an hour; a new slice at
// each call, so that no caller can change another's.
func freshnessBuckets() []float64 {
	return []float64{0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 900, 1800, 3600}
}

// observeFreshness observes the ages of the files just committed at now,
// and returns the oldest and the newest record's ages among them (-1
// when no file had times).
func (tc *Committer) observeFreshness(now time.Time, times map[string]RecordTimes) (oldest, newest time.Duration) {
	oldest, newest = -1, time.Duration(math.MaxInt64)
	name := tc.h.Name()
	hist := tc.t.stats.Freshness
	o, n := hist.WithLabelValues(name, "oldest"), hist.WithLabelValues(name, "newest")
	at := now.UnixNano()
	for _, t := range times {
		if t.Adopted || t.Oldest == 0 {
			continue
		}
		// A producer's clock ahead of the sink's makes an age below 0: 0.
		ao, an := time.Duration(max(at-t.Oldest, 0)), time.Duration(max(at-t.Newest, 0))
		o.Observe(ao.Seconds())
		n.Observe(an.Seconds())
		oldest, newest = max(oldest, ao), min(newest, an)
	}
	if oldest < 0 {
		newest = -1
	}
	return oldest, newest
}

// Oldest returns, per table, the oldest record time of the files its
// committer holds (Unix nanoseconds; 0 when it holds none): records
// consumed and not in the table yet.
func (t *Tables) Oldest() map[string]int64 {
	oldest := map[string]int64{}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tc := range t.byTopic {
		name := tc.h.Name()
		oldest[name] = Older(oldest[name], tc.oldest.Load())
	}
	return oldest
}
