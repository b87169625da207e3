package table

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// SmallFiles counts the small data files of a table's current snapshot
// by folder.
type SmallFiles struct {
	// Snapshot is the current snapshot's id; 0 for a table without one.
	Snapshot int64
	// ByFolder is how many data files under the size asked for each
	// folder holds (a pqsink table's folder is its partition tuple), by
	// the folder's URI, as compact.Bin.Folder names it. It is nil when
	// the snapshot is the one the caller counted last.
	ByFolder map[string]int
	// Manifests is how many data manifests were read.
	Manifests int
	// Snapshots is how many snapshots the table's metadata holds, counted
	// also when the current snapshot is the one seen.
	Snapshots int
}

// SmallFiles counts, by folder, the live data files of the table's
// current snapshot smaller than below bytes, from its manifests (no data
// file is opened). When the current snapshot is seen (one counted
// before) nothing is read: the counts are those of the last call.
func (h *Handle) SmallFiles(ctx context.Context, below, seen int64) (SmallFiles, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return SmallFiles{}, fmt.Errorf("table %s: %w", h.name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return SmallFiles{}, nil
	}
	res := SmallFiles{Snapshot: snap.SnapshotID, Snapshots: len(tbl.Metadata().Snapshots())}
	if snap.SnapshotID == seen {
		return res, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, fmt.Errorf("table %s: %w", h.name, err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return res, fmt.Errorf("table %s: snapshot %d: reading its manifest list: %w", h.name, snap.SnapshotID, err)
	}
	res.ByFolder = map[string]int{}
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		res.Manifests++
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return res, fmt.Errorf("table %s: snapshot %d: reading manifest %s: %w", h.name, snap.SnapshotID, m.FilePath(), err)
			}
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData || df.FileSizeBytes() >= below {
				continue
			}
			loc := df.FilePath()
			res.ByFolder[loc[:max(strings.LastIndexByte(loc, '/'), 0)]]++
		}
	}
	return res, nil
}
