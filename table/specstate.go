package table

import (
	"fmt"

	"github.com/pqsink/pqsink/archive"
)

// The paths a partition's state holds beyond its committed offset follow
// one partition spec, which the state records (Progress.SpecID): a
// partition moves to a new spec only at a clean point, with no path
// beyond its next offset. Two members can write one partition by two
// specs only when one of them is fenced off without knowing it (it lost
// the partition, and its successor writes by the table's new spec) or
// resumed from a state that did not say its spec. Their files then take
// keys that differ, so the create-if-absent upload does not stop the
// second, and their paths differ, so the per-path state does not either:
// both would put the same records in the table. Commit refuses that
// (specConflicts): the commit of a partition whose files or paths are of
// another spec than the paths the table holds beyond its committed offset
// fails with a *SpecConflictError, and the committer reads the partition
// again from the table's state, by the spec that state names.

// A file of a spec that begins at or below what the table covers of its
// path and ends beyond it (straddles) holds records that the table has
// from files of another chain: by the same chain it would have had the
// key of the table's file that begins where it does, and the
// create-if-absent upload would have stopped it. Chains of one path part
// only when two members write one partition by two specs, and the state
// cannot always say so by its paths: when a fenced-off member's late
// commit of the old spec is taken first (nothing of the partition was in
// the table beyond its files), its committed offset passes its paths,
// and the successor's files of the new spec, begun before that offset
// and ending after it, meet no path of another spec. Such a file would
// put records in the table twice, and refusing the whole commit
// (ErrOverlap, as for a file without a spec id) would refuse every later
// commit of the member too, since the committer keeps its files for the
// next one: the partition is a conflict like the others, read again from
// the table's state (TestTableSinkFencedMemberAcrossSpecChange, case
// first).

// SpecConflictError is the error of a commit that found, beyond the
// committed offset of some of its partitions, paths of another partition
// spec than the files or progress it brought for them, or below it
// records that a file it brought holds too, from files of another
// chain (of another spec: see straddles above). Nothing was
// committed. Those partitions must be read again from Held, what the
// table holds of them now, by the spec Held names: the files the
// committer holds of them would put records in the table a second time.
type SpecConflictError struct {
	Held State
}

func (e *SpecConflictError) Error() string {
	return "the table holds, beyond the committed offset, paths of another partition spec than this commit's, or below it records of this commit's files from files of another chain (a member fenced off, or its successor, writing by the other spec): it holds " +
		describeHeld(e.Held, func(p Progress) string {
			last, ok := p.beyond()
			if !ok {
				return ", records below it from files of another chain"
			}
			spec := "?"
			if s := p.specOfPaths(); s != nil {
				spec = fmt.Sprint(*s)
			}
			return fmt.Sprintf(", paths of spec %s to offset %d", spec, last)
		})
}

// specConflicts returns, with what cur (the table's state) holds of them,
// the partitions of group for which a commit of files (their Kafka
// ranges in ranges) and state would put paths of two partition specs
// beyond the committed offset, or a record in the table twice: a file
// that straddles what cur covers of its path (see above); a file that
// cur does not cover, of another spec than the paths cur holds beyond
// its committed offset, and beginning at or before the last of them (its
// records may be in theirs); or paths of state of another spec than
// cur's that would both stay beyond the merged committed offset. A
// file beginning after every such path, or paths the merged committed
// offset passes, are a partition that moved to a new spec at a clean
// point, and pass. A partition whose spec cur does not know (a state of
// a pqsink that kept none), or a file or progress without one, is not
// compared: it is committed as before spec ids were kept.
func specConflicts(cur State, group string, files []File, ranges []archive.Range, state State) State {
	var out State
	conflict := func(k Partition) {
		if out == nil {
			out = State{}
		}
		out[k] = cur[k]
	}
	for i, f := range files {
		r := ranges[i]
		k := Partition{group, r.Topic, r.Partition}
		t, ok := cur[k]
		if c := t.covered(f.PathID); ok && f.SpecID != nil && r.First <= c && r.Last > c {
			// The table holds records of the file from another chain.
			conflict(k)
			continue
		}
		spec := t.specOfPaths()
		if !ok || spec == nil || f.SpecID == nil || *f.SpecID == *spec {
			continue
		}
		if last, ok := t.beyond(); ok && r.Last > t.covered(f.PathID) && r.First <= last {
			conflict(k)
		}
	}
	for k, q := range state {
		t, ok := cur[k]
		ts, qs := t.specOfPaths(), q.specOfPaths()
		if !ok || ts == nil || qs == nil || *ts == *qs {
			continue
		}
		c := max(t.Committed, q.Committed)
		tl, tok := t.beyond()
		ql, qok := q.beyond()
		if tok && qok && tl >= c && ql >= c {
			conflict(k)
		}
	}
	return out
}
