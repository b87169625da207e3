package table

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// CommitOption adjusts a Commit.
type CommitOption func(*commitOptions)

type commitOptions struct {
	seen State
	// deletes are the rows the commit deletes (DeleteOffsets).
	deletes map[KafkaPartition][]int64
}

// Seen gives Commit what the committer last saw the table hold of its
// partitions: the state it read when it took them, or that its last
// commit left. A table holding less of one of them now was rolled back
// (rollback_to_snapshot, a restore of older metadata) behind the
// committer's back, and Commit fails with a *RolledBackError instead of
// appending after records the table no longer holds.
func Seen(s State) CommitOption {
	return func(o *commitOptions) { o.seen = s }
}

// RolledBackError is the error of a commit that found the table holding
// less of some partitions than the committer saw it hold. Nothing was
// committed. The records the table lost must be read again from Held,
// what the table holds of those partitions now; the files after it that
// the committer holds would leave a gap, and its state would claim
// records that are not in the table.
type RolledBackError struct {
	Held State
}

func (e *RolledBackError) Error() string {
	return "the table holds less than it did (rolled back to an older snapshot?): it holds " +
		describeHeld(e.Held, func(Progress) string { return "" })
}

// describeHeld lists, for an error, the first five partitions of held (in
// order) and what the table holds of each: its committed offset, then
// what more says of its progress.
func describeHeld(held State, more func(Progress) string) string {
	keys := slices.SortedFunc(maps.Keys(held), comparePartitions)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 5 {
			fmt.Fprintf(&b, "and %d more", len(keys)-i)
			break
		}
		fmt.Fprintf(&b, "%s[%d] of group %s from offset %d%s", k.Topic, k.Partition, k.Group, held[k].Committed, more(held[k]))
	}
	return b.String()
}

// rolledBack returns the partitions of seen of which cur, the table's
// state now, holds less: an offset committed or a path's last offset
// that went back. A partition cur has no state of is not compared: a
// table whose state is gone altogether (another engine's snapshots,
// which carry none, with the ones that did expired) would otherwise send
// every partition back to its first offset and into the table twice;
// merging the committer's state back, as before Seen, is what keeps that
// table exact. A rollback to before a partition's first commit goes
// unnoticed.
func rolledBack(cur, seen State) State {
	var out State
	for k, p := range seen {
		c, ok := cur[k]
		if !ok {
			continue
		}
		less := c.Committed < p.Committed
		for id, o := range p.Paths {
			less = less || c.covered(id) < o
		}
		if less {
			if out == nil {
				out = State{}
			}
			out[k] = c
		}
	}
	return out
}
