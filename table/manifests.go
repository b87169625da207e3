package table

import (
	"context"
	"fmt"

	itable "github.com/apache/iceberg-go/table"
)

// ManifestResult says what a manifest rewrite did.
type ManifestResult struct {
	// Before is how many manifests the current snapshot listed; After how
	// many it lists now (Before when nothing was rewritten).
	Before, After int
	// Rewritten and Added are the manifests the rewrite replaced and
	// those it wrote in their place.
	Rewritten, Added int
	// Snapshot is the snapshot made, 0 when nothing was rewritten.
	Snapshot int64
	// Attempts is how many times the commit was tried (conflicts + 1).
	Attempts int
}

// RewriteManifests merges the manifests of the table's current snapshot
// into few of about the table's commit.manifest.target-size-bytes (8 MiB
// unless set) when it lists more than above of them, with iceberg-go's
// rewrite, in a replace snapshot that changes no data file.
//
// Every commit of a sink writes a manifest of its files (iceberg-go's fast
// append does not merge them), so a table committed every 30 seconds lists
// 2,880 more each day, and every reader's planning opens them all. Snapshot
// expiry does not help: the current snapshot still lists each. This is
// Spark's rewrite_manifests, run when the count says so.
//
// The rewrite's snapshot carries no pqsink.state (iceberg-go takes no
// summary properties for it): the state in force stays in its parent,
// where State and ExpireSnapshots look for it, as they do under another
// engine's snapshots. The commit is a compare-and-swap, tried again on a
// conflict (a sink's append in between) up to commitAttempts times, as
// Commit does; the manifests an attempt that lost wrote are orphans.
func (h *Handle) RewriteManifests(ctx context.Context, above int) (ManifestResult, error) {
	var res ManifestResult
	var err error
	res.Attempts, err = h.retry(ctx, "rewriting manifests", func() error {
		res = ManifestResult{}
		return h.tryRewriteManifests(ctx, above, &res)
	})
	return res, err
}

func (h *Handle) tryRewriteManifests(ctx context.Context, above int, res *ManifestResult) error {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return err
	}
	if err := noLibraryRetry(tbl); err != nil {
		return err
	}
	if res.Before, err = manifestCount(ctx, tbl); err != nil {
		return err
	}
	res.After = res.Before
	if res.Before <= above {
		return nil
	}
	tx := tbl.NewTransaction()
	r, err := tx.RewriteManifests(ctx)
	if err != nil {
		return err
	}
	if r.IsNoOp() {
		return nil
	}
	if h.beforeSwap != nil {
		h.beforeSwap()
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	res.Rewritten, res.Added = len(r.RewrittenManifests), len(r.AddedManifests)
	if s := next.CurrentSnapshot(); s != nil {
		res.Snapshot = s.SnapshotID
	}
	res.After, err = manifestCount(ctx, next)
	return err
}

// manifestCount is how many manifests tbl's current snapshot lists.
func manifestCount(ctx context.Context, tbl *itable.Table) (int, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return 0, fmt.Errorf("snapshot %d: reading its manifest list: %w", snap.SnapshotID, err)
	}
	return len(manifests), nil
}

// ManifestCount is how many manifests the table's current snapshot lists.
func (h *Handle) ManifestCount(ctx context.Context) (int, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", h.name, err)
	}
	n, err := manifestCount(ctx, tbl)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", h.name, err)
	}
	return n, nil
}
