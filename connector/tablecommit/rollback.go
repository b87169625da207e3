package tablecommit

import (
	"maps"
	"sync"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/table"
)

// rollbacks keeps a table's commits from running past a rollback made
// behind the sink's back (another engine's rollback_to_snapshot): for
// each partition this member holds, what it last saw the table hold of
// it (held), which every commit hands the table as table.Seen; and the
// partitions a commit found rolled back, which must read again from the
// table's state before they commit anything more (restart).
type rollbacks struct {
	mu      sync.Mutex
	held    map[int32]table.Progress
	restart map[int32]table.Progress
}

// saw records that the table held p of partition id (read when the
// partition was taken, or committed by this member).
func (r *rollbacks) saw(id int32, p table.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[int32]table.Progress{}
	}
	r.held[id] = p
}

// seen is what this member saw the table hold of the partitions of parts.
func (r *rollbacks) seen(group, topic string, parts map[int32]*pendingProgress) table.State {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := table.State{}
	for id := range parts {
		if p, ok := r.held[id]; ok {
			out[table.Partition{Group: group, Topic: topic, Partition: id}] = p
		}
	}
	return out
}

// took records that partition id starts from p, just read from the
// table: a restart it had not taken yet is moot.
func (r *rollbacks) took(id int32, p table.Progress) {
	r.saw(id, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.restart, id)
}

// committed records that the table holds what parts asked for.
func (r *rollbacks) committed(parts map[int32]*pendingProgress) {
	for id, pp := range parts {
		r.saw(id, pp.progress)
	}
}

// lost records that the table holds only held of each partition there:
// they read again from it.
func (r *rollbacks) lost(held table.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restart == nil {
		r.restart = map[int32]table.Progress{}
	}
	if r.held == nil {
		r.held = map[int32]table.Progress{}
	}
	for k, p := range held {
		r.held[k.Partition], r.restart[k.Partition] = p, p
	}
}

// waiting says whether partition id must read again before it commits:
// what it hands the committer until then is dropped.
func (r *rollbacks) waiting(id int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.restart[id]
	return ok
}

// take returns, once, the state partition id reads again from.
func (r *rollbacks) take(id int32) (table.Progress, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.restart[id]
	delete(r.restart, id)
	return p, ok
}

// rolledBack handles a commit the table refused as rolled back, or, with
// spec, as holding beyond the committed offset of some partitions paths of
// another partition spec than the commit's (table.SpecConflictError): the
// partitions of held read again from what the table holds of them, and
// their files and progress are dropped (the files stay in the store, to
// be adopted when the records are read again by the same spec, or left
// to orphan removal); the others' wait for the next commit.
func (tc *Committer) rolledBack(held table.State, spec bool, files []table.File, parts map[int32]*pendingProgress) ([]table.File, map[int32]*pendingProgress) {
	log := tc.t.log
	tc.rb.lost(held)
	if spec {
		tc.t.stats.SpecConflicts.Add(1)
	} else {
		tc.t.stats.Rollbacks.Add(1)
	}
	for k, p := range held {
		if spec && (p.SpecID == nil || len(p.Paths) == 0) {
			// Records below the committed offset that files of this
			// commit hold too (table.SpecConflictError).
			log.Warn("the table holds records of the partition that this sink's files hold too, from files of another partition spec (a member fenced off, or its successor); reading it again from the table's state",
				"table", tc.h.Name(), "topic", k.Topic, "partition", k.Partition, "offset", p.Committed, "spec", tc.specID)
			continue
		}
		if spec {
			heldSpec := -1
			if p.SpecID != nil {
				heldSpec = *p.SpecID
			}
			log.Warn("the table holds, beyond the partition's committed offset, files of another partition spec than this sink's (a member fenced off, or its successor); reading it again from the table's state, by that spec",
				"table", tc.h.Name(), "topic", k.Topic, "partition", k.Partition, "offset", p.Committed, "table_paths_spec", heldSpec, "spec", tc.specID)
			continue
		}
		log.Warn("the table holds less of the partition than this sink committed (rolled back to an older snapshot?); reading it again from the table's state",
			"table", tc.h.Name(), "topic", k.Topic, "partition", k.Partition, "offset", p.Committed)
	}
	kept := files[:0]
	for _, f := range files {
		if tc.dropsFile(f) {
			tc.pending(f, -1)
			continue
		}
		kept = append(kept, f)
	}
	maps.DeleteFunc(parts, func(id int32, _ *pendingProgress) bool { return tc.rb.waiting(id) })
	return kept, parts
}

// dropsFile says whether f is of a partition that reads again after a
// rollback.
func (tc *Committer) dropsFile(f table.File) bool {
	if f.Footer == nil {
		return false
	}
	r, err := archive.ReadRange(f.Footer.KeyValueMetadata)
	return err == nil && tc.rb.waiting(r.Partition)
}

// TakeRestart returns, once, the state Kafka partition id must read again
// from, when a commit found the table rolled back behind it (or holding
// paths of another spec beyond its committed offset): what the partition
// hands the committer until then is dropped.
func (tc *Committer) TakeRestart(id int32) (table.Progress, bool) { return tc.rb.take(id) }
