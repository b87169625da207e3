package table

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/catalog"
	itable "github.com/apache/iceberg-go/table"
)

// ExpireResult says what an expiry did.
type ExpireResult struct {
	// Expired is how many snapshots were removed from the metadata; Kept
	// how many remain.
	Expired, Kept int
	// Retained is the count of newest snapshots of the current ancestry
	// kept whatever their age: the keep asked for, or more when the
	// snapshot carrying the exactly-once state in force is older.
	Retained int
	// Attempts is how many times the commit was tried (conflicts + 1).
	Attempts int
}

// ExpireSnapshots removes from the table's metadata the snapshots made
// more than olderThan ago, except the newest keep of the current
// snapshot's ancestry (at least 1), with iceberg-go's expiry (which also
// keeps every snapshot a branch or tag points at).
//
// The exactly-once state is read from the newest snapshot of the current
// ancestry that carries one (State), so that snapshot must survive: the
// count kept is raised to reach it when it lies deeper than keep. (The
// alternative, copying the state into a new snapshot, would make a
// snapshot per expiry and race the sinks' own state merges.) pqsink's
// appends and rewrites all carry the state, so the deeper case needs
// snapshots of another engine on top.
//
// Files of the expired snapshots are not deleted here: those no snapshot
// still references become orphans, deleted by RemoveOrphans once old
// enough. The commit is a compare-and-swap on the table's metadata, tried
// again on a conflict (a sink's append in between) up to commitAttempts
// times, as Commit does.
func (h *Handle) ExpireSnapshots(ctx context.Context, olderThan time.Duration, keep int) (ExpireResult, error) {
	return h.ExpireSnapshotsAtMost(ctx, olderThan, keep, 0)
}

// ExpireSnapshotsAtMost is ExpireSnapshots with a bound on the count:
// when more than most snapshots would stay (a table committed to every
// second holds a week of them before any is old enough), only the newest
// most of the current ancestry are kept, whatever their age, and every
// snapshot outside it that no branch or tag points at is expired. The
// bound never goes below keep, nor below the snapshot carrying the
// exactly-once state. Snapshots that other branches or tags point at
// stay, and count. most <= 0 sets no bound.
func (h *Handle) ExpireSnapshotsAtMost(ctx context.Context, olderThan time.Duration, keep, most int) (ExpireResult, error) {
	var res ExpireResult
	var err error
	res.Attempts, err = h.retry(ctx, "expiring snapshots", func() error {
		return h.tryExpire(ctx, olderThan, max(keep, 1), most, &res)
	})
	return res, err
}

func (h *Handle) tryExpire(ctx context.Context, olderThan time.Duration, keep, most int, res *ExpireResult) error {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return err
	}
	if err := noLibraryRetry(tbl); err != nil {
		return err
	}
	before := len(tbl.Metadata().Snapshots())
	res.Retained = max(keep, stateDepth(tbl)+1)
	res.Expired, res.Kept = 0, before
	if before == 0 {
		return nil
	}
	tx, after, err := stageExpiry(tbl, olderThan, res.Retained)
	if err != nil {
		return err
	}
	if most > 0 && after > most {
		// Over the bound by age: keep the newest most, however young
		// the others are.
		res.Retained = max(most, res.Retained)
		if tx, after, err = stageExpiry(tbl, 0, res.Retained); err != nil {
			return err
		}
	}
	if after == before {
		return nil // nothing to expire: no commit
	}
	if h.beforeSwap != nil {
		h.beforeSwap()
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	res.Kept = len(next.Metadata().Snapshots())
	res.Expired = before - res.Kept
	return nil
}

// stageExpiry stages on tbl the expiry of the snapshots older than
// olderThan beyond the newest retain of the current ancestry, and says
// how many snapshots would stay.
func stageExpiry(tbl *itable.Table, olderThan time.Duration, retain int) (*itable.Transaction, int, error) {
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(
		itable.WithOlderThan(olderThan),
		itable.WithRetainLast(retain),
		// The files are left to orphan removal, which waits for them to
		// be old enough that no reader still plans with them.
		itable.WithPostCommit(false),
	); err != nil {
		return nil, 0, err
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return nil, 0, err
	}
	return tx, len(staged.Metadata().Snapshots()), nil
}

// stateDepth is the position in the current snapshot's ancestry (0 for
// the current one) of the snapshot whose summary carries the state in
// force (see stateValue); 0 when none does.
func stateDepth(tbl *itable.Table) int {
	md := tbl.Metadata()
	depth := 0
	for snap := tbl.CurrentSnapshot(); snap != nil; depth++ {
		if snap.Summary != nil {
			if _, ok := snap.Summary.Properties[SummaryState]; ok {
				return depth
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = md.SnapshotByID(*snap.ParentSnapshotID)
	}
	return 0
}

// Exists reports whether the table is in the catalog: a table whose first
// record's schema creates it (Avro) is not until then.
func (h *Handle) Exists(ctx context.Context) (bool, error) {
	_, err := h.cat.LoadTable(ctx, h.ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("table %s: %w", h.name, err)
	}
	return true, nil
}
