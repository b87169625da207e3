package tablecommit

import (
	"context"
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
// (connector's moveToSpec), on its own, whatever the other partitions and
// members do.
//
// A clean point is one where every record before the partition's next
// offset is in a file that is uploaded, no record after it is, and the
// skip set holds no path beyond it: the progress handed to the table is
// then its committed offset alone, which means the same under either
// spec. A partition that resumes from a state whose skip set holds paths
// of another spec than the current one (the process stopped between the
// move and the commit after it) resumes with that spec's view, and moves
// at its own next clean point (ViewFor).

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
// table's still, and /readyz says why (see Tables.Failing).
func (tc *Committer) noticeSpec(ctx context.Context) {
	id := tc.h.CommittedSpec()
	tc.viewsMu.Lock()
	if id < 0 || id == tc.noticed {
		tc.viewsMu.Unlock()
		return
	}
	before := tc.noticed
	tc.noticed = id
	tc.viewsMu.Unlock()
	t, cur, name := tc.t, tc.cur.Load(), tc.h.Name()
	if id == cur.specID {
		// Back to the spec the files follow.
		tc.specErr.Store(nil)
		return
	}
	if t.cfg.Table.PartitionBySet {
		err := fmt.Errorf("table %s: its default partition spec changed from %d to %d, and table.partition_by says %q (spec %d): the sink keeps writing by partition_by, still one of the table's specs; set partition_by to the table's spec, or leave it out to follow it, before the sink restarts, which refuses them as they are",
			name, before, id, partitionSpec(t.cfg), cur.specID)
		t.log.Warn("table: its partition spec moved away from table.partition_by", "table", name, "old_spec", before, "new_spec", id, "partition_by", partitionSpec(t.cfg), "error", err)
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
			t.log.Warn("table: reading its new partition spec", "table", name, "new_spec", id, "error", err)
		}
		return
	}
	err = followSpec(t.cfg, name, specText(spec))
	var v *Committer
	if err == nil {
		v, err = t.newView(ctx, tc.topic, tc.h, tc.commits, spec)
	}
	if err != nil {
		err = fmt.Errorf("table %s: its partition spec changed from %d to %d, which the sink cannot follow, and it keeps writing by spec %d: %w", name, cur.specID, id, cur.specID, err)
		t.log.Error("table: its new partition spec cannot be followed", "table", name, "old_spec", cur.specID, "new_spec", id, "error", err)
		tc.specErr.Store(&err)
		return
	}
	tc.specErr.Store(nil)
	tc.cur.Store(v)
	t.log.Info("table: its partition spec changed; each partition writes by the new one from its next clean point",
		"table", name, "old_spec", cur.specID, "new_spec", id, "partition_by", specText(spec), "files", v.tmpl.String())
}

// View returns the view of the table's spec id, making it when needed.
func (tc *Committer) View(ctx context.Context, id int) (*Committer, error) {
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
	if err := followSpec(tc.t.cfg, tc.h.Name(), specText(spec)); err != nil {
		return nil, err
	}
	return tc.t.newView(ctx, tc.topic, tc.h, tc.commits, spec)
}

// ViewFor returns the view whose paths are those of skip, the skip set a
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
func (tc *Committer) ViewFor(ctx context.Context, skip map[string]int64, spec *int) (*Committer, error) {
	cur := tc.cur.Load()
	if spec != nil && hasPaths(skip) {
		v := cur
		if *spec != cur.specID {
			var err error
			if v, err = tc.View(ctx, *spec); err != nil {
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
		v, err := tc.View(ctx, id)
		if err != nil {
			continue // a spec the sink never wrote by
		}
		if v.follows(skip) {
			return v, nil
		}
	}
	return cur, nil
}

// hasPaths reports whether skip holds a path.
func hasPaths(skip map[string]int64) bool { return len(skip) > 0 }

// ResumedBy says, for the log, how a partition found the spec it resumes
// by: the spec id its table's state records, or the folders of its paths
// (a state written before spec ids were kept).
func ResumedBy(spec *int) string {
	if spec != nil {
		return "spec_id"
	}
	return "folders"
}

// follows reports whether every path of skip is one of the view's: the
// template renders it, with no folder in a value.
func (tc *Committer) follows(skip map[string]int64) bool {
	for id := range skip {
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
