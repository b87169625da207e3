package table

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// A commit whose files the table holds already, or that has none (records
// only skipped or dead-lettered), may still move the state: its offsets
// pass the records it rejected. Such a state is committed in a snapshot
// of its own that adds no file: an append whose manifest list names the
// current snapshot's manifests, as Iceberg's Java library makes for an
// append of nothing. Without it, the state would wait for the next commit
// with files, and a restart in between would read the rejected records
// again and send their dead letters twice.

// commitState makes a snapshot of tbl that adds no data file and carries
// the summary property SummaryState = value: its manifest list, written
// next to the table's metadata, lists the current snapshot's manifests,
// and the catalog swaps it in as main's head only if main is still the
// snapshot read (a conflict otherwise, which Commit tries again).
func (h *Handle) commitState(ctx context.Context, tbl *itable.Table, value string) (int64, error) {
	md := tbl.Metadata()
	cur := tbl.CurrentSnapshot()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	var manifests []iceberg.ManifestFile
	summary := iceberg.Properties{}
	if cur != nil {
		if manifests, err = cur.Manifests(fsys); err != nil {
			return 0, fmt.Errorf("snapshot %d: reading its manifest list: %w", cur.SnapshotID, err)
		}
		if cur.Summary != nil {
			// The totals stay the parent's: nothing is added.
			for k, v := range cur.Summary.Properties {
				if strings.HasPrefix(k, "total-") {
					summary[k] = v
				}
			}
		}
	}
	for _, k := range []string{"added-data-files", "added-records", "added-files-size"} {
		summary[k] = "0"
	}
	summary[SummaryState] = value
	id := newSnapshotID(md)
	return id, h.commitManifests(ctx, tbl, id, manifests, itable.OpAppend, summary)
}

// commitManifests makes the snapshot id of tbl, the child of its current
// one, that lists manifests, with the operation op and summary: it
// writes its manifest list next to the table's metadata, and the catalog
// swaps it in as main's head only if main is still the snapshot read (a
// conflict otherwise). On format version 3, the data manifests without a
// first row id (those the snapshot adds) take theirs from the table's
// next row id, which the snapshot moves past their rows.
func (h *Handle) commitManifests(ctx context.Context, tbl *itable.Table, id int64, manifests []iceberg.ManifestFile, op itable.Operation, summary iceberg.Properties) error {
	md := tbl.Metadata()
	var parent *int64
	if cur := tbl.CurrentSnapshot(); cur != nil {
		parent = &cur.SnapshotID
	}
	version := md.Version()
	// Sequence numbers begin with format version 2, row ids with 3.
	var seq int64
	var seqPtr, firstRowID, addedRows *int64
	if version >= 2 {
		seq = md.LastSequenceNumber() + 1
		seqPtr = &seq
	}
	nextRow := md.NextRowID()
	var list bytes.Buffer
	lw, err := manifestListWriter(version, &list, id, parent, seqPtr, nextRow)
	if err != nil {
		return fmt.Errorf("writing the manifest list: %w", err)
	}
	if err := lw.AddManifests(manifests); err != nil {
		return fmt.Errorf("writing the manifest list: %w", err)
	}
	if err := lw.Close(); err != nil {
		return fmt.Errorf("writing the manifest list: %w", err)
	}
	if version >= 3 {
		added := int64(0)
		if n := lw.NextRowID(); n != nil {
			added = *n - nextRow
		}
		firstRowID, addedRows = &nextRow, &added
	}
	loc := fmt.Sprintf("%s/metadata/snap-%d-1-%s.avro", tbl.Location(), id, uuid.New())
	if err := writeObject(ctx, tbl, loc, list.Bytes()); err != nil {
		return fmt.Errorf("writing the manifest list %s: %w", loc, err)
	}
	schemaID := md.CurrentSchema().ID
	snap := itable.Snapshot{
		SnapshotID:       id,
		ParentSnapshotID: parent,
		SequenceNumber:   seq,
		TimestampMs:      max(time.Now().UnixMilli(), md.LastUpdatedMillis()+1),
		ManifestList:     loc,
		Summary:          &itable.Summary{Operation: op, Properties: summary},
		SchemaID:         &schemaID,
		FirstRowID:       firstRowID,
		AddedRows:        addedRows,
	}
	reqs := []itable.Requirement{itable.AssertTableUUID(md.TableUUID()), itable.AssertRefSnapshotID(itable.MainBranch, parent)}
	updates := []itable.Update{
		itable.NewAddSnapshotUpdate(&snap),
		itable.NewSetSnapshotRefUpdate(itable.MainBranch, id, itable.BranchRef, -1, -1, -1),
	}
	if h.beforeSwap != nil {
		h.beforeSwap()
	}
	_, _, err = h.cat.CommitTable(ctx, h.ident, reqs, updates)
	return err
}

// manifestListWriter starts the manifest list of snapshot id of a table
// of format version.
func manifestListWriter(version int, out *bytes.Buffer, id int64, parent, seq *int64, nextRow int64) (*iceberg.ManifestListWriter, error) {
	switch version {
	case 1:
		return iceberg.NewManifestListWriterV1(out, id, parent)
	case 2:
		return iceberg.NewManifestListWriterV2(out, id, *seq, parent)
	case 3:
		return iceberg.NewManifestListWriterV3(out, id, *seq, nextRow, parent)
	}
	return nil, fmt.Errorf("format version %d is not supported", version)
}

// newSnapshotID draws a snapshot id that md does not hold yet: positive,
// as Iceberg's own (random, not a counter, so that two writers racing do
// not draw the same).
func newSnapshotID(md itable.Metadata) int64 {
	for {
		id := rand.Int64N(1<<62) + 1
		if md.SnapshotByID(id) == nil {
			return id
		}
	}
}
