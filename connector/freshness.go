package connector

import (
	"sync/atomic"
	"time"

	"github.com/pqsink/pqsink/connector/tablecommit"
)

// Freshness: how long a record takes from Kafka to a snapshot of its
// table. A record's time is its Kafka timestamp, or, with
// table.freshness_from: read (or a record without a timestamp), when the
// sink read it. No work is done per record beyond keeping, per open file,
// the oldest and newest of these times (tablecommit.RecordTimes); the
// table's committer observes each file's two ages at the commit that puts
// it in the table (pqsink_table_freshness_seconds), and the oldest time
// still held by the table's partitions or its committer is the age of its
// oldest record not in the table yet
// (pqsink_table_oldest_uncommitted_seconds, oldestUncommitted).

// partFreshness is a partition's part: the oldest time among the records
// it holds that are not handed to its table's committer yet.
type partFreshness struct {
	read   bool  // table.freshness_from: read
	readAt int64 // when the sink read the batch being handled (Unix nanoseconds)
	// oldest is the oldest time among the records of the open files, the
	// records held back for a format's sample, and the uploaded files not
	// handed over yet (partition.handoff); stale says that a file that
	// may have held it left, and that it must be computed again
	// (refreshFresh).
	oldest int64
	stale  bool
	// floor is the oldest time of the records dropped to be read again
	// (dropAll: a failed upload, an adoption, a restart from the
	// committed offset): they are not in the table either, and count
	// until the partition hands files over again, by which time it has
	// read them again. Without it, the age would fall to 0 while a
	// failing store makes the partition wait.
	floor int64
	// pub is the older of oldest and floor, for the metrics, which read
	// it from other goroutines.
	pub atomic.Int64
}

// freshAt is r's time for freshness.
func (p *partition) freshAt(r *record) int64 {
	// A record without a timestamp (-1) has none to go by, nor has one
	// beyond the nanoseconds an int64 holds.
	if sec := r.time.Unix(); !p.fresh.read && sec > 0 && sec < 1<<33 {
		return sec*int64(time.Second) + int64(r.time.Nanosecond())
	}
	return p.fresh.readAt
}

// noteFresh counts r, written to f: the only freshness work per record.
func (p *partition) noteFresh(f *openFile, r *record) {
	if p.table == nil {
		return // measured for tables only
	}
	at := p.freshAt(r)
	f.times.Note(at)
	p.holdFresh(at)
}

// holdFresh notes that the partition holds a record of time at.
func (p *partition) holdFresh(at int64) {
	if p.fresh.oldest == 0 || at < p.fresh.oldest {
		p.fresh.oldest = at
		p.fresh.pub.Store(tablecommit.Older(at, p.fresh.floor))
	}
}

// forgetFresh notes that the records of times are no longer held (a file
// dropped, or handed to the committer).
func (p *partition) forgetFresh(times tablecommit.RecordTimes) {
	if times.Oldest != 0 && times.Oldest <= p.fresh.oldest {
		p.fresh.stale = true
	}
}

// refreshFresh computes the oldest time held again, if a file that may
// have held it left.
func (p *partition) refreshFresh() {
	if !p.fresh.stale {
		return
	}
	var o int64
	for _, f := range p.files {
		o = tablecommit.Older(o, f.times.Oldest)
	}
	for _, t := range p.handoff.Times {
		o = tablecommit.Older(o, t.Oldest)
	}
	for i := range p.pending {
		at := p.freshAt(&p.pending[i])
		if p.fresh.read {
			at = p.pendingAt.UnixNano()
		}
		o = tablecommit.Older(o, at)
	}
	p.fresh.oldest, p.fresh.stale = o, false
	p.fresh.pub.Store(tablecommit.Older(o, p.fresh.floor))
}

// droppedFresh notes that the partition dropped its open files and held
// records, to read them again.
func (p *partition) droppedFresh() {
	p.fresh.floor = tablecommit.Older(p.fresh.floor, p.fresh.oldest)
	p.fresh.stale = true
	p.refreshFresh()
}

// handedFresh notes that the partition's uploaded files, of the record
// times handed, went to the committer, which holds their times now.
func (p *partition) handedFresh(handed []tablecommit.RecordTimes) {
	for _, t := range handed {
		p.forgetFresh(t)
	}
	if p.fresh.floor != 0 {
		p.fresh.floor, p.fresh.stale = 0, true
	}
	p.refreshFresh()
}

// oldestUncommitted returns, per table, the age at now of its oldest
// record consumed and not in the table yet: 0 for a table whose
// partitions and committer hold no such record.
func (s *Sink) oldestUncommitted(now time.Time) map[string]time.Duration {
	oldest := s.tables.Oldest()
	s.mu.Lock()
	for p := range s.consuming {
		if p.table != nil {
			name := p.table.Name()
			oldest[name] = tablecommit.Older(oldest[name], p.fresh.pub.Load())
		}
	}
	s.mu.Unlock()
	ages := make(map[string]time.Duration, len(oldest))
	at := now.UnixNano()
	for name, o := range oldest {
		if o != 0 {
			ages[name] = time.Duration(max(at-o, 0))
		} else {
			ages[name] = 0
		}
	}
	return ages
}
