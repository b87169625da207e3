package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"
)

// ErrNoSuchTable is wrapped by the error of Catalog.Snapshot for a table
// the catalog does not hold.
var ErrNoSuchTable = errors.New("no such table")

// ErrNoSuchSnapshot is wrapped by the error of Catalog.Snapshot for a
// snapshot the table does not have (or a table with no snapshot yet).
var ErrNoSuchSnapshot = errors.New("no such snapshot")

// ErrDeleteFiles is wrapped by the error of an operation on a snapshot
// whose delete files it cannot take into account. The sink writes no
// delete file (Commit's DeleteOffsets, for upsert tables, is not used by
// it yet); another engine's deletes or updates do. Catalog.Snapshot applies
// position delete files, deletion vectors and equality delete files
// (DataFile.Deleted), and wraps it for delete files of other formats.
var ErrDeleteFiles = errors.New("the snapshot has delete files")

// Snapshot is one snapshot of a table and the data files it holds.
type Snapshot struct {
	// Table is the table's identifier, its namespace and name joined by
	// dots.
	Table string
	// ID is the snapshot's id.
	ID int64
	// Current says whether the snapshot is the table's current one.
	Current bool
	// Location is the table's location (its base URI).
	Location string
	// MetadataLocation is the table's current metadata file, the one the
	// catalog points at (what DuckDB's iceberg_scan reads).
	MetadataLocation string
	// Files are the snapshot's data files, by location.
	Files []DataFile
	// Earlier are data files of the snapshot's ancestors that it no longer
	// holds (rewritten by a compaction or another engine's copy-on-write
	// delete), newest first, at most maxEarlier of them: the files a
	// rewrite replaced, whose footers may hold what the rewritten files
	// lost (the records' schema). They may have been deleted from the
	// store since.
	Earlier []DataFile
}

// How far Catalog.Snapshot looks back for Snapshot.Earlier.
const (
	maxEarlier          = 16
	maxEarlierSnapshots = 20 // of those older than the newest rewrite or delete
)

// DataFile is a data file of a snapshot.
type DataFile struct {
	// Location is the file's full URI, as the table references it.
	Location string
	// Size is the file's length in bytes.
	Size int64
	// Records is the number of records the manifest says it holds.
	Records int64
	// Deleted are the positions of the rows of the file that the
	// snapshot's delete files delete, or nil when none do.
	Deleted *Positions
	// Envelope is what the manifest says of the file's Kafka envelope
	// columns (not set for Snapshot.Earlier).
	Envelope Envelope
}

// Snapshot reads the data files of snapshot id of the table ident (its
// namespace levels, then its name), or of the table's current snapshot
// when id is 0, with the rows its delete files delete from each
// (applyDeletes). It only reads: the table is not created, and the
// configured namespace and partition spec play no part. The error wraps
// ErrNoSuchTable, ErrNoSuchSnapshot or ErrDeleteFiles when it is one of
// those.
func (k *Catalog) Snapshot(ctx context.Context, ident []string, id int64) (*Snapshot, error) {
	what := strings.Join(ident, ".")
	tbl, err := k.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("table %s: %w in catalog %s", what, ErrNoSuchTable, k.cfg.Catalog.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	snap := tbl.CurrentSnapshot()
	switch {
	case id == 0 && snap == nil:
		return nil, fmt.Errorf("table %s: %w: the table has no snapshot yet (nothing was committed to it)", what, ErrNoSuchSnapshot)
	case id != 0:
		snap = tbl.SnapshotByID(id)
		if snap == nil {
			return nil, fmt.Errorf("table %s: %w %d (the table's snapshots: %s)", what, ErrNoSuchSnapshot, id, snapshotIDs(tbl))
		}
	}
	out := &Snapshot{Table: what, ID: snap.SnapshotID, Location: tbl.Location(), MetadataLocation: tbl.MetadataLocation()}
	if cur := tbl.CurrentSnapshot(); cur != nil && cur.SnapshotID == snap.SnapshotID {
		out.Current = true
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", what, err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("table %s, snapshot %d: reading its manifest list: %w", what, snap.SnapshotID, err)
	}
	var data, deletes []snapFile
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return nil, fmt.Errorf("table %s, snapshot %d: reading manifest %s: %w", what, snap.SnapshotID, m.FilePath(), err)
			}
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentData {
				deletes = append(deletes, snapFile{df: df, seq: e.SequenceNum()})
				continue
			}
			if df.FileFormat() != iceberg.ParquetFile {
				return nil, fmt.Errorf("table %s, snapshot %d: data file %s is %s, not Parquet", what, snap.SnapshotID, df.FilePath(), df.FileFormat())
			}
			data = append(data, snapFile{df: df, seq: e.SequenceNum()})
		}
	}
	specs := func(id int32) *iceberg.PartitionSpec { return tbl.Metadata().PartitionSpecByID(int(id)) }
	deleted, err := applyDeletes(ctx, fsys, specs, what, snap.SnapshotID, data, deletes)
	if err != nil {
		return nil, err
	}
	ts, off, part, topic := envelopeFields(tbl.Metadata(), snap)
	for _, f := range data {
		df := f.df
		out.Files = append(out.Files, DataFile{Location: df.FilePath(), Size: df.FileSizeBytes(), Records: df.Count(), Deleted: deleted[df.FilePath()],
			Envelope: envelopeOf(df, ts, off, part, topic)})
	}
	slices.SortFunc(out.Files, func(a, b DataFile) int { return strings.Compare(a.Location, b.Location) })
	seenManifests := map[string]bool{}
	for _, m := range manifests {
		seenManifests[m.FilePath()] = true
	}
	if out.Earlier, err = earlierFiles(tbl, fsys, snap, data, seenManifests); err != nil {
		return nil, fmt.Errorf("table %s, snapshot %d: %w", what, snap.SnapshotID, err)
	}
	return out, nil
}

// earlierFiles returns Snapshot.Earlier: the data files of snap's nearest
// ancestors that snap does not hold. Only an ancestor older than a
// snapshot that may have removed files (any but an append) can hold such
// files, so a table the sink only appended to costs nothing; and of those
// ancestors, only the manifests snap does not list are read.
func earlierFiles(tbl *itable.Table, fsys icebergio.IO, snap *itable.Snapshot, data []snapFile, seen map[string]bool) ([]DataFile, error) {
	live := make(map[string]bool, len(data))
	for _, f := range data {
		live[f.df.FilePath()] = true
	}
	var out []DataFile
	md := tbl.Metadata()
	removed := false // whether a snapshot from snap down to cur's child may have removed files
	for read, cur := 0, snap; read < maxEarlierSnapshots && len(out) < maxEarlier && cur.ParentSnapshotID != nil; {
		removed = removed || cur.Summary == nil || cur.Summary.Operation != itable.OpAppend
		if cur = md.SnapshotByID(*cur.ParentSnapshotID); cur == nil {
			break // expired
		}
		if !removed {
			continue
		}
		read++
		manifests, err := cur.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("reading the manifest list of snapshot %d: %w", cur.SnapshotID, err)
		}
		for _, m := range manifests {
			if seen[m.FilePath()] || m.ManifestContent() != iceberg.ManifestContentData {
				continue
			}
			seen[m.FilePath()] = true
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					return nil, fmt.Errorf("reading manifest %s of snapshot %d: %w", m.FilePath(), cur.SnapshotID, err)
				}
				df := e.DataFile()
				if df.ContentType() != iceberg.EntryContentData || df.FileFormat() != iceberg.ParquetFile || live[df.FilePath()] {
					continue
				}
				live[df.FilePath()] = true
				out = append(out, DataFile{Location: df.FilePath(), Size: df.FileSizeBytes(), Records: df.Count()})
				if len(out) == maxEarlier {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// snapshotIDs lists a table's snapshot ids, oldest first, for an error
// message: at most the 10 newest.
func snapshotIDs(tbl *itable.Table) string {
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) == 0 {
		return "none"
	}
	var ids []string
	for _, s := range snaps[max(0, len(snaps)-10):] {
		ids = append(ids, strconv.FormatInt(s.SnapshotID, 10))
	}
	if len(snaps) > 10 {
		return "…, " + strings.Join(ids, ", ")
	}
	return strings.Join(ids, ", ")
}
