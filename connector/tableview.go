package connector

import (
	"context"
	"errors"
	"maps"

	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/table"
)

// A partition's side of its table's views (tablecommit.Committer): it
// writes by one view, the files' path by one of the table's partition
// specs; it moves to the view of the table's new default spec at its next
// clean point (moveToSpec), resumes a committed state by the view of the
// spec its paths were written by (resumeView), and reads again from the
// table's state when a commit found the table rolled back (restartFromTable).

// reasonSpec: the table's partition spec changed: the partition's files
// end, and the next ones follow the new spec.
const reasonSpec = "spec"

// moveToSpec moves the partition to its table's current view when it
// follows another: at once when it is at a clean point after finishing
// its open files (reason spec), never while its skip set holds a path
// beyond its next offset.
func (p *partition) moveToSpec(ctx context.Context) error {
	if p.table == nil || p.stopped != nil {
		return nil
	}
	next := p.table.Current()
	if next == p.table || p.skipsBeyond() {
		return nil
	}
	if err := p.finishAll(ctx, reasonSpec); err != nil {
		return err
	}
	if len(p.files) > 0 || len(p.pending) > 0 || p.skipsBeyond() || p.stopped != nil || p.committed != p.next {
		return nil // an adoption left a path beyond: later
	}
	old := p.table
	if err := p.useTable(next); err != nil {
		return err
	}
	p.log.Info("partition follows the table's new partition spec", "table", next.Name(), "old_spec", old.SpecID(), "new_spec", next.SpecID(), "offset", p.next)
	return nil
}

// resumeView makes a partition that consumes again from a committed state
// someone else left (restartAt) write by the view of the paths of its skip
// set, spec being their spec's id when the table's state records it
// (tablecommit.Committer.ViewFor).
func (p *partition) resumeView(ctx context.Context, spec *int) error {
	if p.table == nil {
		return nil
	}
	v, err := p.table.ViewFor(ctx, p.skip.paths(), spec)
	if err != nil || v == p.table {
		return err
	}
	old := p.table
	if err := p.useTable(v); err != nil {
		return err
	}
	p.log.Info("partition resumes by the partition spec of its uploaded files", "table", v.Name(), "spec", v.SpecID(), "table_spec", old.Current().SpecID(), "by", tablecommit.ResumedBy(spec))
	return nil
}

// skipsBeyond reports whether the skip set holds a path that reaches the
// partition's next offset or beyond.
func (p *partition) skipsBeyond() bool {
	for _, last := range p.skip {
		if last >= p.next {
			return true
		}
	}
	return false
}

// useTable makes the partition, at a clean point, write by the view tc:
// its files' path, and the format and lookups that compute the path's
// values.
func (p *partition) useTable(tc *tablecommit.Committer) error {
	if len(p.files) > 0 || len(p.pending) > 0 {
		return errors.New("moving to another partition spec with files open") // moveToSpec's precondition: not met
	}
	np := newPartitionWithTable(p.s, p.topic, p.id, p.committed, p.skip, p.commit, tc)
	if np.stopped != nil {
		return np.stopped
	}
	// The path's identity starts afresh: nothing rendered yet.
	p.table, p.dec, p.path = np.table, np.dec, np.path
	return nil
}

// restartFromTable makes the partition read again from held, what its
// table holds of it after a rollback: its open files and the files it
// has not handed the committer are dropped (those uploaded stay in the
// store, and are adopted when their records come again).
func (p *partition) restartFromTable(ctx context.Context, held table.Progress) error {
	p.dropAll(ctx) // the records' times held count on (droppedFresh)
	p.handoff = tablecommit.Batch{}
	p.fresh.stale = true
	p.refreshFresh()
	skip := skipSet{}
	maps.Copy(skip, held.Paths)
	p.restartAt(held.Committed, "", skip)
	p.resetIndex(held.Index)
	// The state may hold paths of another spec than the one the
	// partition writes by now: it resumes by theirs.
	if err := p.resumeView(ctx, held.SpecID); err != nil {
		return err
	}
	return errRestart
}
