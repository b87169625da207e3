package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// OnceResult says what ListOnce did.
type OnceResult struct {
	// Files is how many data files the current snapshot listed more than
	// once; Entries how many entries beyond the first it listed of them,
	// and Records their records, each of which the table held twice.
	Files, Entries int
	Records        int64
	// Snapshot is the snapshot made, 0 when nothing was listed twice.
	Snapshot int64
	// Attempts is how many times the commit was tried (conflicts + 1).
	Attempts int
}

// ListOnce makes the table list each of its data files once: an older
// pqsink, when a second consumer group wrote to the table, appended files
// the table held already, so their records were in it twice. The new
// snapshot's manifests are the current one's, but those with a second
// entry of a file, which are written again without it (the first entry,
// its sequence numbers and the delete files that apply to it unchanged);
// it carries the exactly-once state in force, and its operation is a
// delete, as rows leave the table. iceberg-go's rewrites cannot do this:
// they refuse to delete a file listed twice. A table that lists every
// file once is left as it is.
func (h *Handle) ListOnce(ctx context.Context) (OnceResult, error) {
	var res OnceResult
	var err error
	res.Attempts, err = h.retry(ctx, "listing each data file once", func() error {
		res = OnceResult{}
		return h.tryListOnce(ctx, &res)
	})
	return res, err
}

func (h *Handle) tryListOnce(ctx context.Context, res *OnceResult) error {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return err
	}
	cur := tbl.CurrentSnapshot()
	if cur == nil {
		return nil
	}
	md := tbl.Metadata()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	manifests, err := cur.Manifests(fsys)
	if err != nil {
		return fmt.Errorf("snapshot %d: reading its manifest list: %w", cur.SnapshotID, err)
	}
	id := newSnapshotID(md)
	seen := map[string]bool{}
	twice := map[string]bool{}
	var bytesGone int64
	out := make([]iceberg.ManifestFile, 0, len(manifests))
	for _, m := range manifests {
		if m.ManifestContent() != iceberg.ManifestContentData {
			out = append(out, m)
			continue
		}
		var keep []iceberg.ManifestEntry
		dropped := false
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				return fmt.Errorf("snapshot %d: reading manifest %s: %w", cur.SnapshotID, m.FilePath(), err)
			}
			df := e.DataFile()
			if seen[df.FilePath()] {
				dropped = true
				twice[df.FilePath()] = true
				res.Entries++
				res.Records += df.Count()
				bytesGone += df.FileSizeBytes()
				continue
			}
			seen[df.FilePath()] = true
			keep = append(keep, e)
		}
		if !dropped {
			out = append(out, m)
			continue
		}
		if len(keep) == 0 {
			continue
		}
		written, err := h.writeManifest(ctx, tbl, id, m, keep)
		if err != nil {
			return err
		}
		out = append(out, written)
	}
	res.Files = len(twice)
	if res.Entries == 0 {
		return nil
	}
	summary := iceberg.Properties{
		"deleted-data-files": strconv.Itoa(res.Entries),
		"deleted-records":    strconv.FormatInt(res.Records, 10),
		"removed-files-size": strconv.FormatInt(bytesGone, 10),
	}
	if cur.Summary != nil {
		for k, v := range cur.Summary.Properties {
			if !strings.HasPrefix(k, "total-") {
				continue
			}
			summary[k] = v
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "total-data-files":
				summary[k] = strconv.FormatInt(n-int64(res.Entries), 10)
			case "total-records":
				summary[k] = strconv.FormatInt(n-res.Records, 10)
			case "total-files-size":
				summary[k] = strconv.FormatInt(n-bytesGone, 10)
			}
		}
	}
	if v, ok := stateValue(tbl); ok {
		summary[SummaryState] = v
	}
	if err := h.commitManifests(ctx, tbl, id, out, itable.OpDelete, summary); err != nil {
		return err
	}
	res.Snapshot = id
	return nil
}

// writeManifest writes the entries of m that keep holds into a new
// manifest of snapshot id, beside the table's metadata, as existing
// entries: their snapshot ids and sequence numbers stay theirs.
func (h *Handle) writeManifest(ctx context.Context, tbl *itable.Table, id int64, m iceberg.ManifestFile, keep []iceberg.ManifestEntry) (iceberg.ManifestFile, error) {
	md := tbl.Metadata()
	spec := md.PartitionSpecByID(int(m.PartitionSpecID()))
	if spec == nil {
		return nil, fmt.Errorf("manifest %s: the table has no partition spec %d", m.FilePath(), m.PartitionSpecID())
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(md.Version(), &buf, *spec, md.CurrentSchema(), id)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
	}
	for _, e := range keep {
		if err := w.Existing(e); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
	}
	if err := w.Close(); err != nil && !errors.Is(err, iceberg.ErrEmptyManifest) {
		return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
	}
	loc := fmt.Sprintf("%s/metadata/%s-m0.avro", tbl.Location(), uuid.New())
	if err := writeObject(ctx, tbl, loc, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("writing the manifest %s: %w", loc, err)
	}
	return w.ToManifestFile(loc, int64(buf.Len()))
}
