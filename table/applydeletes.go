package table

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
)

// PlanDeletes are the rows that the delete files of a snapshot delete
// from the data files a compaction rewrites (Handle.Deletes): the new
// files leave them out, and the rewrite (RewriteApplying) removes the
// delete files left with nothing to apply to.
type PlanDeletes struct {
	// Rows are the deleted positions, by data file location; a file no
	// delete applies to has no entry.
	Rows map[string]*Positions
	// Applied identify the delete files that may apply to the inputs, all
	// of which were read: RewriteApplying's applied. Each is a delete
	// file's location, and for a deletion vector its offset in the
	// Puffin file too (location#offset): one Puffin file may hold the
	// vectors of several data files.
	Applied []string
	// Removable identify those of Applied that may apply to no data file
	// of the snapshot but the inputs: the rewrite would remove them, were
	// the snapshot still current.
	Removable []string
}

// Sorted returns the positions of the set in increasing order.
func (p *Positions) Sorted() []int64 {
	out := make([]int64, 0, p.Len())
	for pos := range p.b.Positions() {
		out = append(out, int64(pos))
	}
	slices.Sort(out)
	return out
}

// Deletes reads the rows that the delete files of snapshot snapshotID
// delete from its data files at the locations inputs, which a compaction
// is about to rewrite: the position delete files, deletion vectors and
// equality delete files that may apply to them (by the scan planning
// rules of Live), applied as replay applies them (applyDeletes). A
// location the snapshot does not hold is refused. The error wraps
// ErrDeleteFiles for delete files pqsink does not read.
func (h *Handle) Deletes(ctx context.Context, snapshotID int64, inputs []string) (PlanDeletes, error) {
	var out PlanDeletes
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return out, fmt.Errorf("table %s: %w", h.name, err)
	}
	snap := tbl.SnapshotByID(snapshotID)
	if snap == nil {
		return out, fmt.Errorf("table %s: %w %d", h.name, ErrNoSuchSnapshot, snapshotID)
	}
	live, deleteFiles, err := snapshotFiles(ctx, tbl, snap)
	if err != nil {
		return out, fmt.Errorf("table %s: %w", h.name, err)
	}
	byLocation := make(map[string]*liveFile, len(live))
	for i := range live {
		byLocation[live[i].Location] = &live[i]
	}
	isInput := make(map[string]bool, len(inputs))
	var data, deletes []snapFile
	applied := map[string]bool{}
	for _, loc := range inputs {
		f := byLocation[loc]
		if f == nil {
			return out, fmt.Errorf("table %s, snapshot %d: no data file %s", h.name, snapshotID, loc)
		}
		isInput[loc] = true
		data = append(data, snapFile{df: f.df, seq: f.seq})
		for _, d := range f.deletes {
			if !applied[d] {
				applied[d] = true
				deletes = append(deletes, deleteFiles[d])
				out.Applied = append(out.Applied, d)
			}
		}
	}
	slices.Sort(out.Applied)
	specs := func(id int32) *iceberg.PartitionSpec { return tbl.Metadata().PartitionSpecByID(int(id)) }
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return out, fmt.Errorf("table %s: %w", h.name, err)
	}
	if out.Rows, err = applyDeletes(ctx, fsys, specs, h.name, snapshotID, data, deletes); err != nil {
		return out, err
	}
	for _, d := range removableDeletes(live, deleteFiles, isInput) {
		out.Removable = append(out.Removable, deleteKey(d))
	}
	return out, nil
}

// removableDeletes returns the delete files that may apply to a data file
// of inputs (by location) and to no other of live: once a rewrite has
// replaced the inputs by files that hold their rows but the deleted ones,
// such a delete file deletes nothing any more, and the rewrite removes it
// as Spark's rewrite_position_delete_files (and, for equality deletes,
// its removal of dangling deletes) would. The new files take the
// rewrite's data sequence number, above every delete file's, so no delete
// file of the snapshot may apply to them: a position delete or deletion
// vector applies to files of a sequence number up to its own, an equality
// delete to files of a lower one. Snapshots before the rewrite keep
// theirs: reading one of them applies its own delete files.
func removableDeletes(live []liveFile, deleteFiles map[string]snapFile, inputs map[string]bool) []iceberg.DataFile {
	needed := map[string]bool{}
	var candidates []string
	seen := map[string]bool{}
	for _, f := range live {
		for _, d := range f.deletes {
			switch {
			case !inputs[f.Location]:
				needed[d] = true
			case !seen[d]:
				seen[d] = true
				candidates = append(candidates, d)
			}
		}
	}
	slices.Sort(candidates)
	var out []iceberg.DataFile
	for _, d := range candidates {
		sf, ok := deleteFiles[d]
		if needed[d] || !ok {
			continue
		}
		out = append(out, sf.df)
	}
	return out
}
