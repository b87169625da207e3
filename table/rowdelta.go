package table

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// A commit that deletes rows makes its snapshot itself, as commitState
// does, rather than with iceberg-go's RowDelta: that one (v0.7.0) checks
// that every data file a delete references is in the table's current
// snapshot before the swap, so a delete of a row that the same snapshot
// appends (a key replaced twice between two commits) never commits.

// commitRowDelta makes a snapshot of tbl, the child of its current one,
// that adds the data files data and the delete files deletes and removes
// the deletion vectors replaced (which deletes replace: the specification
// allows one a data file), with the summary property SummaryState =
// value. Its operation is overwrite, or delete when it adds no data file.
func (h *Handle) commitRowDelta(ctx context.Context, tbl *itable.Table, data, deletes, replaced []iceberg.DataFile, value string) (int64, error) {
	md := tbl.Metadata()
	id := newSnapshotID(md)
	var manifests []iceberg.ManifestFile
	// The current snapshot's manifests, those holding a replaced vector
	// written again with its entry deleted.
	gone := map[string]bool{}
	for _, d := range replaced {
		gone[dvKey(d)] = true
	}
	var removedRecords, removedBytes int64
	if cur := tbl.CurrentSnapshot(); cur != nil {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return 0, err
		}
		old, err := cur.Manifests(fsys)
		if err != nil {
			return 0, fmt.Errorf("snapshot %d: reading its manifest list: %w", cur.SnapshotID, err)
		}
		for _, m := range old {
			if len(gone) == 0 || m.ManifestContent() != iceberg.ManifestContentDeletes {
				manifests = append(manifests, m)
				continue
			}
			var entries []iceberg.ManifestEntry
			hit := false
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					return 0, fmt.Errorf("reading manifest %s: %w", m.FilePath(), err)
				}
				entries = append(entries, e)
				hit = hit || gone[dvKey(e.DataFile())]
			}
			if !hit {
				manifests = append(manifests, m)
				continue
			}
			spec := md.PartitionSpecByID(int(m.PartitionSpecID()))
			if spec == nil {
				return 0, fmt.Errorf("manifest %s: the table has no partition spec %d", m.FilePath(), m.PartitionSpecID())
			}
			mf, err := h.newManifest(ctx, tbl, id, *spec, iceberg.ManifestContentDeletes, func(w *iceberg.ManifestWriter) error {
				for _, e := range entries {
					if gone[dvKey(e.DataFile())] {
						delete(gone, dvKey(e.DataFile()))
						removedRecords += e.DataFile().Count()
						removedBytes += e.DataFile().FileSizeBytes()
						if err := w.Delete(e); err != nil {
							return err
						}
					} else if err := w.Existing(e); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return 0, err
			}
			manifests = append(manifests, mf)
		}
	}
	if len(gone) > 0 {
		return 0, fmt.Errorf("%d deletion vectors to replace are not in the current snapshot", len(gone))
	}
	// The new files, a manifest a partition spec and content; new ones
	// first, as iceberg-go lists them.
	var added []iceberg.ManifestFile
	for _, group := range []struct {
		files   []iceberg.DataFile
		content iceberg.ManifestContent
	}{{data, iceberg.ManifestContentData}, {deletes, iceberg.ManifestContentDeletes}} {
		bySpec := map[int32][]iceberg.DataFile{}
		for _, f := range group.files {
			bySpec[f.SpecID()] = append(bySpec[f.SpecID()], f)
		}
		for _, specID := range slices.Sorted(maps.Keys(bySpec)) {
			spec := md.PartitionSpecByID(int(specID))
			if spec == nil {
				return 0, fmt.Errorf("the table has no partition spec %d", specID)
			}
			mf, err := h.newManifest(ctx, tbl, id, *spec, group.content, func(w *iceberg.ManifestWriter) error {
				for _, f := range bySpec[specID] {
					if err := w.Add(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, f)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return 0, err
			}
			added = append(added, mf)
		}
	}
	op := itable.OpOverwrite
	if len(data) == 0 {
		op = itable.OpDelete
	}
	summary := rowDeltaSummary(tbl.CurrentSnapshot(), data, deletes, len(replaced), removedRecords, removedBytes)
	summary[SummaryState] = value
	return id, h.commitManifests(ctx, tbl, id, append(added, manifests...), op, summary)
}

// dvKey identifies a deletion vector: its Puffin file and the data file
// it deletes rows of.
func dvKey(df iceberg.DataFile) string {
	ref := ""
	if r := df.ReferencedDataFile(); r != nil {
		ref = *r
	}
	return df.FilePath() + "\x00" + ref
}

// newManifest writes a manifest of snapshot id, of content and spec,
// with the entries add gives it, next to the table's metadata.
func (h *Handle) newManifest(ctx context.Context, tbl *itable.Table, id int64, spec iceberg.PartitionSpec, content iceberg.ManifestContent, add func(*iceberg.ManifestWriter) error) (iceberg.ManifestFile, error) {
	md := tbl.Metadata()
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(md.Version(), &buf, spec, md.CurrentSchema(), id, iceberg.WithManifestWriterContent(content))
	if err != nil {
		return nil, fmt.Errorf("writing a manifest: %w", err)
	}
	if err := add(w); err != nil {
		return nil, fmt.Errorf("writing a manifest: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("writing a manifest: %w", err)
	}
	loc := fmt.Sprintf("%s/metadata/%s-m0.avro", tbl.Location(), uuid.New())
	mf, err := w.ToManifestFile(loc, int64(buf.Len()))
	if err != nil {
		return nil, fmt.Errorf("writing the manifest %s: %w", loc, err)
	}
	if err := writeObject(ctx, tbl, loc, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("writing the manifest %s: %w", loc, err)
	}
	return mf, nil
}

// rowDeltaSummary is the summary of a snapshot, child of parent, that adds
// data and deletes (position deletes) and removes removed deletion
// vectors of removedRecords rows and removedBytes bytes: the added and
// removed counts, and the parent's totals moved by them (a total the
// parent lacks is left out). A vector's size is its Puffin file's, as
// its manifest entry says, so the totals move as Iceberg's own
// summaries do, by each entry's file_size_in_bytes.
func rowDeltaSummary(parent *itable.Snapshot, data, deletes []iceberg.DataFile, removed int, removedRecords, removedBytes int64) iceberg.Properties {
	var records, size, posDeletes, deleteSize int64
	for _, f := range data {
		records += f.Count()
		size += f.FileSizeBytes()
	}
	for _, f := range deletes {
		posDeletes += f.Count()
		deleteSize += f.FileSizeBytes()
	}
	out := iceberg.Properties{
		"added-data-files":            strconv.Itoa(len(data)),
		"added-records":               strconv.FormatInt(records, 10),
		"added-files-size":            strconv.FormatInt(size+deleteSize, 10),
		"added-delete-files":          strconv.Itoa(len(deletes)),
		"added-position-delete-files": strconv.Itoa(len(deletes)),
		"added-position-deletes":      strconv.FormatInt(posDeletes, 10),
	}
	if removed > 0 {
		out["removed-delete-files"] = strconv.Itoa(removed)
		out["removed-position-delete-files"] = strconv.Itoa(removed)
		out["removed-position-deletes"] = strconv.FormatInt(removedRecords, 10)
		out["removed-files-size"] = strconv.FormatInt(removedBytes, 10)
	}
	if parent == nil || parent.Summary == nil {
		return out
	}
	moves := map[string]int64{
		"total-data-files":       int64(len(data)),
		"total-records":          records,
		"total-files-size":       size + deleteSize - removedBytes,
		"total-delete-files":     int64(len(deletes) - removed),
		"total-position-deletes": posDeletes - removedRecords,
		"total-equality-deletes": 0,
	}
	for k, d := range moves {
		v, ok := parent.Summary.Properties[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		out[k] = strconv.FormatInt(n+d, 10)
	}
	return out
}
