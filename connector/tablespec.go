package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/table"
)

// Another engine may change a table's partition spec while the sink
// writes to it (ALTER TABLE ... ADD, REPLACE or DROP PARTITION FIELD).
// Files written by the spec before are committed with it (table.File's
// SpecID): a snapshot may add files of any of the table's specs. Without
// partition_by, the sink notices the new default spec at its next commit
// (the commit reads the table anyway: no read of its own) and makes the
// view of it; each partition moves to that view at its next clean point
// (moveToSpec), on its own, whatever the other partitions and members do.
//
// A clean point is one where every record before the partition's next
// offset is in a file that is uploaded, no record after it is, and the
// skip set holds no path beyond it: the progress handed to the table is
// then its committed offset alone, which means the same under either
// spec. A partition that resumes from a state whose skip set holds paths
// of another spec than the current one (the process stopped between the
// move and the commit after it) resumes with that spec's view, and moves
// at its own next clean point (viewFor).

// reasonSpec: the table's partition spec changed: the partition's files
// end, and the next ones follow the new spec.
const reasonSpec = "spec"

// specText is spec's fields as table.partition_by writes them.
func specText(spec table.PathSpec) []string {
	out := make([]string, len(spec.Fields))
	for i, f := range spec.Fields {
		out[i] = f.Transform + "(" + f.Column + ")"
	}
	return out
}

// noticeSpec acts on a change of the table's default partition spec that
// the last commit found. Without partition_by, new files follow it: the
// partitions move to its view. With partition_by, or a spec the sink
// cannot put in a path, the files keep the spec they follow, one of the
// table's still, and /readyz says why (see tables.failing).
func (tc *tableCommitter) noticeSpec(ctx context.Context) {
	id := tc.h.CommittedSpec()
	tc.viewsMu.Lock()
	if id < 0 || id == tc.noticed {
		tc.viewsMu.Unlock()
		return
	}
	before := tc.noticed
	tc.noticed = id
	tc.viewsMu.Unlock()
	s, cur, name := tc.t.s, tc.cur.Load(), tc.h.Name()
	if id == cur.specID {
		// Back to the spec the files follow.
		tc.specErr.Store(nil)
		return
	}
	if s.cfg.Table.PartitionBySet {
		err := fmt.Errorf("table %s: its default partition spec changed from %d to %d, and table.partition_by says %q (spec %d): the sink keeps writing by partition_by, still one of the table's specs; set partition_by to the table's spec, or leave it out to follow it, before the sink restarts, which refuses them as they are",
			name, before, id, partitionSpec(s.cfg), cur.specID)
		s.log.Warn("table: its partition spec moved away from table.partition_by", "table", name, "old_spec", before, "new_spec", id, "partition_by", partitionSpec(s.cfg), "error", err)
		tc.specErr.Store(&err)
		return
	}
	spec, err := tc.h.PathSpec(ctx, id)
	if err != nil {
		// The catalog, not the spec: tried again at the next commit.
		tc.viewsMu.Lock()
		tc.noticed = before
		tc.viewsMu.Unlock()
		if ctx.Err() == nil {
			s.log.Warn("table: reading its new partition spec", "table", name, "new_spec", id, "error", err)
		}
		return
	}
	err = followSpec(s.cfg, name, specText(spec))
	var v *tableCommitter
	if err == nil {
		v, err = tc.t.newView(ctx, tc.topic, tc.h, tc.tableCommits, spec)
	}
	if err != nil {
		err = fmt.Errorf("table %s: its partition spec changed from %d to %d, which the sink cannot follow, and it keeps writing by spec %d: %w", name, cur.specID, id, cur.specID, err)
		s.log.Error("table: its new partition spec cannot be followed", "table", name, "old_spec", cur.specID, "new_spec", id, "error", err)
		tc.specErr.Store(&err)
		return
	}
	tc.specErr.Store(nil)
	tc.cur.Store(v)
	s.log.Info("table: its partition spec changed; each partition writes by the new one from its next clean point",
		"table", name, "old_spec", cur.specID, "new_spec", id, "partition_by", specText(spec), "files", v.tmpl.String())
}

// view returns the view of the table's spec id, making it when needed.
func (tc *tableCommitter) view(ctx context.Context, id int) (*tableCommitter, error) {
	tc.viewsMu.Lock()
	v := tc.views[id]
	tc.viewsMu.Unlock()
	if v != nil {
		return v, nil
	}
	spec, err := tc.h.PathSpec(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := followSpec(tc.t.s.cfg, tc.h.Name(), specText(spec)); err != nil {
		return nil, err
	}
	return tc.t.newView(ctx, tc.topic, tc.h, tc.tableCommits, spec)
}

// viewFor returns the view whose paths are those of skip, the skip set a
// partition resumes from, and spec the id of their spec as the table's
// state records it (nil in a state that does not say it). Without paths,
// the current view. With spec, that spec's view: two specs may name
// their folders alike (a field replaced under its name by another
// transform), and only the id tells their paths apart; a spec whose view
// cannot be made, or whose paths skip's are not, is an error (resuming
// by another spec would skip records it has not written, and write
// again those it has). Without spec, by the folders of the paths: the
// current view when they are its, else the view of the first of the
// table's specs whose they are. The partition moves to the current view
// at its next clean point.
func (tc *tableCommitter) viewFor(ctx context.Context, skip skipSet, spec *int) (*tableCommitter, error) {
	cur := tc.cur.Load()
	if spec != nil && hasPaths(skip) {
		v := cur
		if *spec != cur.specID {
			var err error
			if v, err = tc.view(ctx, *spec); err != nil {
				return nil, fmt.Errorf("table %s: the state's paths beyond the committed offset follow its partition spec %d, and the sink cannot write by it: %w", tc.h.Name(), *spec, err)
			}
		}
		if !v.follows(skip) {
			return nil, fmt.Errorf("table %s: the state's paths beyond the committed offset are said to follow its partition spec %d, and are not paths of it (%s)", tc.h.Name(), *spec, v.tmpl)
		}
		return v, nil
	}
	if cur.follows(skip) {
		return cur, nil
	}
	ids, err := tc.h.SpecIDs(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if id == cur.specID {
			continue
		}
		v, err := tc.view(ctx, id)
		if err != nil {
			continue // a spec the sink never wrote by
		}
		if v.follows(skip) {
			return v, nil
		}
	}
	return cur, nil
}

// hasPaths reports whether skip holds a path, dead letters aside.
func hasPaths(skip skipSet) bool {
	for id := range skip {
		if id != deadLetterID {
			return true
		}
	}
	return false
}

// resumedBy says, for the log, how a partition found the spec it resumes
// by: the spec id its table's state records, or the folders of its paths
// (a state written before spec ids were kept).
func resumedBy(spec *int) string {
	if spec != nil {
		return "spec_id"
	}
	return "folders"
}

// follows reports whether every path of skip is one of the view's: the
// template renders it, with no folder in a value.
func (tc *tableCommitter) follows(skip skipSet) bool {
	for id := range skip {
		if id == deadLetterID {
			continue
		}
		k, ok := tc.tmpl.Match(archive.ObjectKey(id, 0))
		if !ok {
			return false
		}
		for _, v := range append(k.Times, k.Fields...) {
			if strings.Contains(v, "/") {
				return false
			}
		}
	}
	return true
}

// moveToSpec moves the partition to its table's current view when it
// follows another: at once when it is at a clean point after finishing
// its open files (reason spec), never while its skip set holds a path
// beyond its next offset.
func (p *partition) moveToSpec(ctx context.Context) error {
	if p.table == nil || p.stopped != nil {
		return nil
	}
	next := p.table.cur.Load()
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
	p.log.Info("partition follows the table's new partition spec", "table", next.h.Name(), "old_spec", old.specID, "new_spec", next.specID, "offset", p.next)
	return nil
}

// resumeView makes a partition that consumes again from a committed state
// someone else left (restartAt) write by the view of the paths of its skip
// set, spec being their spec's id when the table's state records it
// (viewFor).
func (p *partition) resumeView(ctx context.Context, spec *int) error {
	if p.table == nil {
		return nil
	}
	v, err := p.table.viewFor(ctx, p.skip, spec)
	if err != nil || v == p.table {
		return err
	}
	old := p.table
	if err := p.useTable(v); err != nil {
		return err
	}
	p.log.Info("partition resumes by the partition spec of its uploaded files", "table", v.h.Name(), "spec", v.specID, "table_spec", old.cur.Load().specID, "by", resumedBy(spec))
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
func (p *partition) useTable(tc *tableCommitter) error {
	if len(p.files) > 0 || len(p.pending) > 0 {
		return errors.New("moving to another partition spec with files open") // moveToSpec's precondition: not met
	}
	np := newPartitionWithTable(p.s, p.topic, p.id, p.committed, p.skip, p.commit, tc)
	if np.stopped != nil {
		return np.stopped
	}
	p.table, p.tmpl, p.pathLoc, p.dec = np.table, np.tmpl, np.pathLoc, np.dec
	p.tableVals, p.tablePartFromPayload, p.fixedTablePart = np.tableVals, np.tablePartFromPayload, np.fixedTablePart
	p.lookup, p.vals, p.idFixed, p.idTimeOnly = np.lookup, np.vals, np.idFixed, np.idTimeOnly
	p.fixedID, p.idbuf, p.idWindow = nil, nil, false
	return nil
}
