package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
)

// ErrRewriteConflict is wrapped by the error of a Rewrite whose inputs are
// no longer all in the table: another rewrite (a compaction elsewhere, or
// another engine's) replaced some of them first. Retrying cannot help; a
// new plan can.
var ErrRewriteConflict = errors.New("an input of the rewrite is no longer in the table")

// LiveFile is a data file of the table's current snapshot, with what a
// compaction plans with.
type LiveFile struct {
	// Location is the file's full URI, as the table references it.
	Location string
	// Size is the file's length in bytes; Records its record count.
	Size, Records int64
	// Added is when the snapshot that added the file was made.
	Added time.Time
	// Deletes is how many of the snapshot's delete files may apply to
	// the file (see Live): rows of it may have been deleted, so its
	// records are not all in the table: a compaction that takes it
	// applies them (Handle.Deletes, RewriteApplying).
	Deletes int
	// EqualityDeletes is how many of the Deletes are equality delete
	// files.
	EqualityDeletes int
	// NamedDeletes is how many rows of the file the deletion vectors and
	// position delete files that name it (among the Deletes) delete, by
	// their record counts: at most Records, unless the metadata is wrong.
	// Deletes that name no file (equality deletes, position delete files
	// of several files) are not counted.
	NamedDeletes int64
}

// Live lists the data files of the table's current snapshot, and that
// snapshot's id (0 and no file for a table with none). Each file says how
// many of the snapshot's delete files (another engine's row-level deletes:
// position delete files, deletion vectors, equality delete files) may
// apply to it, by the table spec's rules of scan planning, erring towards
// more: position deletes and deletion vectors apply to the files of their
// partition of a data sequence number up to theirs, or to the one file
// they name; equality deletes to the files of their partition (of any
// partition for an unpartitioned spec) of a data sequence number below
// theirs.
func (h *Handle) Live(ctx context.Context) ([]LiveFile, int64, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return nil, 0, fmt.Errorf("table %s: %w", h.name, err)
	}
	files, _, err := liveFiles(ctx, tbl)
	if err != nil {
		return nil, 0, fmt.Errorf("table %s: %w", h.name, err)
	}
	out := make([]LiveFile, 0, len(files))
	for _, f := range files {
		out = append(out, f.LiveFile)
	}
	var id int64
	if s := tbl.CurrentSnapshot(); s != nil {
		id = s.SnapshotID
	}
	return out, id, nil
}

// liveFile is a LiveFile with its entry in the table's manifests.
type liveFile struct {
	LiveFile
	df iceberg.DataFile
	// seq is its data sequence number.
	seq int64
	// deletes are the delete files that may apply, by deleteKey.
	deletes []string
}

// liveFiles reads the data files of tbl's current snapshot, and which of
// its delete files may apply to each (deleteScope); it returns the
// snapshot's delete files too, by deleteKey.
func liveFiles(ctx context.Context, tbl *itable.Table) ([]liveFile, map[string]snapFile, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return nil, nil, nil
	}
	return snapshotFiles(ctx, tbl, snap)
}

// snapshotFiles is liveFiles of the snapshot snap of tbl.
func snapshotFiles(ctx context.Context, tbl *itable.Table, snap *itable.Snapshot) ([]liveFile, map[string]snapFile, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, nil, err
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %d: reading its manifest list: %w", snap.SnapshotID, err)
	}
	var out []liveFile
	var scope deleteScope
	deletes := map[string]snapFile{}
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return nil, nil, fmt.Errorf("snapshot %d: reading manifest %s: %w", snap.SnapshotID, m.FilePath(), err)
			}
			df := e.DataFile()
			if m.ManifestContent() != iceberg.ManifestContentData || df.ContentType() != iceberg.EntryContentData {
				scope.add(tbl.Metadata().PartitionSpecByID, e)
				deletes[deleteKey(df)] = snapFile{df: df, seq: e.SequenceNum()}
				continue
			}
			f := liveFile{LiveFile: LiveFile{Location: df.FilePath(), Size: df.FileSizeBytes(), Records: df.Count()}, df: df, seq: e.SequenceNum()}
			if s := tbl.SnapshotByID(e.SnapshotID()); s != nil {
				f.Added = time.UnixMilli(s.TimestampMs)
			}
			out = append(out, f)
		}
	}
	for i := range out {
		out[i].deletes = scope.applying(out[i].seq, out[i].df)
		out[i].Deletes = len(out[i].deletes)
		out[i].NamedDeletes = scope.named(out[i].seq, out[i].df)
		for _, d := range out[i].deletes {
			if deletes[d].df.ContentType() == iceberg.EntryContentEqDeletes {
				out[i].EqualityDeletes++
			}
		}
	}
	return out, deletes, nil
}

// RewriteResult says what a Rewrite did.
type RewriteResult struct {
	// SnapshotID is the replace snapshot made.
	SnapshotID int64
	// Attempts is how many times the commit was tried (conflicts + 1).
	Attempts int
	// DeleteFilesRemoved is how many delete files the snapshot removed:
	// those the rewrite applied that no live data file is left for.
	DeleteFilesRemoved int
}

// Rewrite replaces the data files at the locations remove with the files
// add, which hold exactly their rows, in one replace snapshot: the table's
// records stay the same, in fewer files. It is RewriteApplying without
// deletes: an input that a delete file may apply to gives the commit up.
func (h *Handle) Rewrite(ctx context.Context, remove []string, add []File) (RewriteResult, error) {
	return h.RewriteApplying(ctx, remove, add, nil)
}

// RewriteApplying replaces the data files at the locations remove with the
// files add, which hold exactly their rows but those that the delete files
// applied delete (PlanDeletes.Applied of Handle.Deletes), in one replace
// snapshot: the table reads the same records, in fewer files. The snapshot
// carries the exactly-once state of the current one unchanged, so that
// running sinks go on where they were, and removes the delete files that
// applied to an input and may apply to no data file left live
// (removableDeletes). It reloads the table at each attempt and checks that
// every file of remove is still live: a commit that lost the catalog's
// compare-and-swap to an append (a sink's) is tried again, up to
// commitAttempts times, and one whose inputs another rewrite replaced is
// given up (ErrRewriteConflict), leaving add uncommitted: orphans for
// maintenance to remove. So is one of which an input has a delete file
// that may apply to it and is not among applied (ErrRewriteDeletes):
// another engine deleted rows of it since the plan, which the new files
// would bring back.
func (h *Handle) RewriteApplying(ctx context.Context, remove []string, add []File, applied []string) (RewriteResult, error) {
	var res RewriteResult
	var err error
	res.Attempts, err = h.retry(ctx, "rewrite", func() error {
		id, removed, err := h.tryRewrite(ctx, remove, add, applied)
		if err == nil {
			res.SnapshotID, res.DeleteFilesRemoved = id, removed
		}
		return err
	})
	return res, err
}

func (h *Handle) tryRewrite(ctx context.Context, remove []string, add []File, applied []string) (int64, int, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return 0, 0, err
	}
	if err := noLibraryRetry(tbl); err != nil {
		return 0, 0, err
	}
	live, deleteFiles, err := liveFiles(ctx, tbl)
	if err != nil {
		return 0, 0, err
	}
	byLocation := make(map[string]liveFile, len(live))
	for _, f := range live {
		byLocation[f.Location] = f
	}
	wasApplied := make(map[string]bool, len(applied))
	for _, d := range applied {
		wasApplied[d] = true
	}
	inputs := make(map[string]bool, len(remove))
	del := make([]iceberg.DataFile, 0, len(remove))
	var gone, deleted []string
	for _, loc := range remove {
		f, ok := byLocation[loc]
		if !ok {
			gone = append(gone, loc)
			continue
		}
		var unknown []string
		for _, d := range f.deletes {
			if !wasApplied[d] {
				unknown = append(unknown, d)
			}
		}
		if len(unknown) > 0 {
			deleted = append(deleted, fmt.Sprintf("%s (%s)", loc, strings.Join(unknown, ", ")))
			continue
		}
		inputs[loc] = true
		del = append(del, f.df)
	}
	if len(gone) > 0 {
		return 0, 0, fmt.Errorf("%w: %s", ErrRewriteConflict, strings.Join(gone, ", "))
	}
	// Another engine's delete (merge-on-read: position deletes, deletion
	// vectors, equality deletes) committed since the compaction planned,
	// which applied the deletes of its inputs then (applied). The new
	// files would carry none of the new delete (a position delete names
	// the old file; an equality delete applies only to files older than
	// itself), so the rows it deleted would come back. Java's
	// RewriteFiles refuses the same (its validation of no new deletes for
	// the rewritten files). iceberg-go's rewrite checks it too, but only
	// against the snapshots committed after this attempt loaded the
	// table, while the plan was made long before (and each attempt loads
	// the table again, TestRewriteRacesDelete): so every delete file of
	// the snapshot loaded that may apply to an input must be one the plan
	// applied, and the catalog's compare-and-swap covers the time from
	// this load to the commit.
	if len(deleted) > 0 {
		return 0, 0, fmt.Errorf("%w: %s", ErrRewriteDeletes, strings.Join(deleted, "; "))
	}
	expunge := removableDeletes(live, deleteFiles, inputs)
	var rowID *int64
	if tbl.Metadata().Version() >= 3 {
		next := tbl.Metadata().NextRowID()
		rowID = &next
	}
	dfs := make([]iceberg.DataFile, 0, len(add))
	for _, f := range add {
		df, err := dataFile(tbl, f, rowID)
		if err != nil {
			return 0, 0, fmt.Errorf("file %s: %w", f.Location, err)
		}
		if rowID != nil {
			*rowID += f.Footer.NumRows
		}
		dfs = append(dfs, df)
	}
	// The state stands as it is: the rewrite moves records between files,
	// never into or out of the table.
	props := iceberg.Properties{}
	if v, ok := stateValue(tbl); ok {
		props[SummaryState] = v
	}
	if h.beforeSwap != nil {
		h.beforeSwap()
	}
	tx := tbl.NewTransaction()
	// A rewrite (operation replace): readers of the table's changes know
	// that no record came or went.
	rw := tx.NewRewrite(props)
	for _, df := range del {
		rw.DeleteFile(df)
	}
	for _, d := range expunge {
		rw.DeleteFile(d)
	}
	for _, df := range dfs {
		rw.AddDataFile(df)
	}
	if err := rw.Commit(ctx); err != nil {
		return 0, 0, err
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return 0, 0, err
	}
	var id int64
	if s := next.CurrentSnapshot(); s != nil {
		id = s.SnapshotID
	}
	return id, len(expunge), nil
}

// stateValue is the summary entry of the exactly-once state in force: that
// of the newest snapshot of the current one's ancestry that has one.
func stateValue(tbl *itable.Table) (string, bool) {
	md := tbl.Metadata()
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[SummaryState]; ok {
				return v, true
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = md.SnapshotByID(*snap.ParentSnapshotID)
	}
	return "", false
}
