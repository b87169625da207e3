package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Handle is one table as the sink uses it: the schema its files must be
// written with, the commits that append them, and the exactly-once state
// read back. It is safe for concurrent use; commits of one Handle, of
// several, or of several processes to the same table all merge.
type Handle struct {
	k         *Catalog
	cat       catalog.Catalog
	ident     itable.Identifier
	name      string // ident joined with dots, for errors
	warehouse string
	schema    *schema.Schema
	// partitionBy is the table's spec when it was created or adopted (the
	// configured one while the table does not exist).
	partitionBy []string

	// fitMu serializes Fit: one schema update at a time from this process.
	fitMu sync.Mutex
	// fitted are the schemas Fit returned, by the text of the schema asked
	// for.
	fitted map[string]*schema.Schema

	// seenSpec is the id of the table's default partition spec as the
	// last attempt of Commit found it; -1 before the first (see
	// CommittedSpec).
	seenSpec atomic.Int64

	// beforeSwap, when set (by tests), runs in each attempt of Commit
	// after the table's state is read and before the swap.
	beforeSwap func()
}

// adopt checks the table's properties and reads its partition spec.
func (h *Handle) adopt(tbl *itable.Table) error {
	if err := noLibraryRetry(tbl); err != nil {
		return err
	}
	spec, ts := tbl.Spec(), tbl.Schema()
	h.partitionBy = nil
	for _, f := range spec.Fields() {
		col, ok := ts.FindColumnName(f.SourceID())
		if !ok {
			col = "#" + strconv.Itoa(f.SourceID())
		}
		h.partitionBy = append(h.partitionBy, f.Transform.String()+"("+col+")")
	}
	return nil
}

// CommittedSpec is the id of the table's default partition spec as the
// last commit found it: a change of it by another engine shows here
// without a read of the table of its own. It is -1 before the first
// commit, and when that found no table.
func (h *Handle) CommittedSpec() int { return int(h.seenSpec.Load()) }

// PartitionBy is the table's current partition spec, each field as
// table.partition_by writes it (config.PartitionField's String):
// "day(_kafka.timestamp)", "bucket[16](id)". An adopted table keeps its
// own spec, which may differ from the configured one.
func (h *Handle) PartitionBy() []string { return h.partitionBy }

// Schema is the Parquet schema the sink must write this table's files
// with: the schema given to Catalog.Table with every field's id the
// table's (the Parquet field_id), so that readers resolve columns by id.
// It is nil when the table was opened without one (see Fit).
func (h *Handle) Schema() *schema.Schema { return h.schema }

// Name is the table's identifier, its namespace and name joined by dots.
func (h *Handle) Name() string { return h.name }

// File is a data file the sink uploaded, to be appended to the table.
type File struct {
	// Location is the file's full URI, as the table references it
	// (s3://bucket/key or file:///path).
	Location string
	// Size is the file's length in bytes.
	Size int64
	// Footer is the file's metadata as the writer returned it: the Kafka
	// range in its key-value entries (archive.ReadRange), the metrics in
	// its column chunks.
	Footer *meta.FileMetaData
	// PathID is the path identity of the file's chain: the key of its path
	// in the skip set.
	PathID string
	// SpecID is the id of the table's partition spec that the file's path
	// follows (PathSpec.ID), which may be another than the table's
	// default spec when that changed since the file was written; nil for
	// the spec whose fields the path's folders are (the default one when
	// they are its).
	SpecID *int
}

// Result says what a commit did.
type Result struct {
	// SnapshotID is the snapshot made; 0 when there was nothing to commit.
	SnapshotID int64
	// Appended are the files the snapshot added.
	Appended int
	// Dropped are the files left out because the table already held their
	// records (committed by an earlier owner, or by this one before a
	// retry).
	Dropped int
	// Attempts is how many times the commit was tried (conflicts + 1).
	Attempts int
	// RowsDeleted is how many rows the snapshot deleted (DeleteOffsets);
	// DeleteFiles how many delete files (deletion vectors: blobs) it
	// added for them.
	RowsDeleted int64
	DeleteFiles int
	// AlreadyDeleted is how many offsets of DeleteOffsets had their rows
	// deleted already, and were left as they were.
	AlreadyDeleted int
}

// Commit retries a conflicting commit this many times, backing off
// exponentially from commitBackoff up to maxBackoff.
const (
	commitAttempts = 10
	commitBackoff  = 50 * time.Millisecond
	maxBackoff     = 5 * time.Second
)

// ErrOverlap is wrapped by the error of a commit holding a file whose
// range overlaps what the table holds without being covered by it: a file
// that would put a record in the table twice.
var ErrOverlap = errors.New("file overlaps records already in the table")

// Commit appends files, uploaded by group, to the table in one snapshot
// whose summary carries the table's state merged with state (the Progress
// of group's partitions after these files). It reloads the table's current
// snapshot, drops every file whose range that snapshot's state already
// covers, merges state into it, keeping every other partition's, and swaps
// the table's metadata at the catalog; on a conflict it does it all again,
// up to commitAttempts times. With no file left to append it commits a
// snapshot without files when the state moves (commitState), and nothing
// when it does not. With Seen, a table that holds less of a partition than
// the committer saw is not committed to (*RolledBackError); nor is one
// that holds, beyond a partition's committed offset, paths of another
// partition spec than the commit's files or progress of it
// (*SpecConflictError). With DeleteOffsets, the same snapshot deletes
// the rows of the Kafka records given (see DeleteOffsets).
func (h *Handle) Commit(ctx context.Context, group string, files []File, state State, opts ...CommitOption) (Result, error) {
	var o commitOptions
	for _, opt := range opts {
		opt(&o)
	}
	ranges := make([]archive.Range, len(files))
	for i, f := range files {
		if f.Footer == nil {
			return Result{}, fmt.Errorf("table %s: file %s: no footer", h.name, f.Location)
		}
		r, err := archive.ReadRange(f.Footer.KeyValueMetadata)
		if err != nil {
			return Result{}, fmt.Errorf("table %s: file %s: %w", h.name, f.Location, err)
		}
		ranges[i] = r
	}
	var res Result
	var err error
	attempts, err := h.retry(ctx, "commit", func() error {
		r, err := h.tryCommit(ctx, group, files, ranges, state, o)
		if err == nil {
			res = r
		}
		return err
	})
	res.Attempts = attempts
	return res, err
}

// retry runs try, again after a lost compare-and-swap (conflict), until
// it succeeds, fails otherwise, or has run commitAttempts times, backing
// off exponentially between runs; it returns how many times it ran try.
// what names the operation in its errors.
func (h *Handle) retry(ctx context.Context, what string, try func() error) (attempts int, err error) {
	backoff := commitBackoff
	for {
		attempts++
		err := try()
		if err == nil {
			return attempts, nil
		}
		if !conflict(err) || attempts >= commitAttempts {
			return attempts, fmt.Errorf("table %s: %s (attempt %d): %w", h.name, what, attempts, err)
		}
		select {
		case <-ctx.Done():
			return attempts, fmt.Errorf("table %s: %s: %w", h.name, what, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// conflict reports whether err is a lost compare-and-swap: the catalog's
// ErrCommitFailed (REST 409, SQL metadata_location moved, Glue's VersionId
// moved, which iceberg-go wraps in it), Glue's
// ConcurrentModificationException should it come unwrapped, or a
// requirement the catalog found broken before writing anything, which
// iceberg-go reports as a plain error.
func conflict(err error) bool {
	return errors.Is(err, itable.ErrCommitFailed) || glueConflict(err) ||
		strings.Contains(strings.ToLower(err.Error()), "requirement failed")
}

// tryCommit is one attempt of Commit.
func (h *Handle) tryCommit(ctx context.Context, group string, files []File, ranges []archive.Range, state State, o commitOptions) (res Result, err error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if err != nil {
		return res, err
	}
	if err := noLibraryRetry(tbl); err != nil {
		return res, err
	}
	h.seenSpec.Store(int64(tbl.Metadata().DefaultPartitionSpec()))
	cur, err := h.state(ctx, tbl)
	if err != nil {
		return res, err
	}
	// Whichever group wrote a record into the table, the table holds it.
	view := cur.As(group)
	if held := rolledBack(view, o.seen); held != nil {
		return res, &RolledBackError{Held: held}
	}
	if held := specConflicts(view, group, files, ranges, state); held != nil {
		return res, &SpecConflictError{Held: held}
	}
	var add []iceberg.DataFile
	// Format version 3 numbers rows (row lineage): the files take
	// consecutive ranges from the table's next row id.
	var rowID *int64
	if tbl.Metadata().Version() >= 3 {
		next := tbl.Metadata().NextRowID()
		rowID = &next
	}
	for i, f := range files {
		r := ranges[i]
		covered := view[Partition{group, r.Topic, r.Partition}].covered(f.PathID)
		switch {
		case r.Last <= covered:
			res.Dropped++
			continue
		case r.First <= covered:
			return res, fmt.Errorf("file %s (%s[%d] offsets %d to %d, path %q): %w up to offset %d",
				f.Location, r.Topic, r.Partition, r.First, r.Last, f.PathID, ErrOverlap, covered)
		}
		df, err := dataFile(tbl, f, rowID)
		if err != nil {
			return res, fmt.Errorf("file %s: %w", f.Location, err)
		}
		if rowID != nil {
			*rowID += f.Footer.NumRows
		}
		add = append(add, df)
	}
	merged := State{}
	for k, p := range cur {
		merged[k] = p
	}
	// A group's entry takes in what every group's entry says the table
	// holds, so that it alone tells where the partition is; the state
	// moves when the table's view of a partition does.
	moved := false
	for k, p := range state {
		p = view[k].Merge(p)
		if c, ok := view[k]; !ok || !c.equal(p) {
			moved = true
		}
		merged[k] = p
	}
	// The rows the commit deletes, of the partitions whose records the
	// table does not hold yet.
	var deletes *rowDeletes
	if want := pendingDeletes(o.deletes, group, state, view); len(want) > 0 {
		if deletes, err = h.resolveDeletes(ctx, tbl, want, add); err != nil {
			return res, err
		}
		res.AlreadyDeleted = deletes.already
		moved = true
	}
	if len(add) == 0 && !moved {
		return res, nil
	}
	value, obj, doc, err := summaryValue(merged)
	if err != nil {
		return res, err
	}
	if obj != "" {
		loc := h.stateLocation(obj)
		if err := writeObject(ctx, tbl, loc, doc); err != nil {
			return res, fmt.Errorf("storing the state object %s: %w", loc, err)
		}
		value = archive.CommitState + loc
	}
	var addDeletes, replaced []iceberg.DataFile
	if deletes != nil {
		if addDeletes, replaced, err = deleteFilesFor(ctx, tbl, deletes); err != nil {
			return res, err
		}
	}
	if len(add) == 0 && len(addDeletes) == 0 {
		// The state moved without a file: a snapshot of its own.
		res.SnapshotID, err = h.commitState(ctx, tbl, value)
		return res, err
	}
	if len(addDeletes) > 0 {
		// Data files and deletes in one snapshot, the replaced deletion
		// vectors removed.
		if res.SnapshotID, err = h.commitRowDelta(ctx, tbl, add, addDeletes, replaced, value); err != nil {
			return res, err
		}
		res.Appended = len(add)
		res.RowsDeleted, res.DeleteFiles = deletes.rows(), len(addDeletes)
		return res, nil
	}
	if h.beforeSwap != nil {
		h.beforeSwap()
	}
	tx := tbl.NewTransaction()
	// The duplicate check of iceberg-go reads every manifest of the table
	// at each commit; the state check above is what keeps a file from
	// being appended twice.
	if err := tx.AddDataFiles(ctx, add, iceberg.Properties{SummaryState: value}, itable.WithoutDuplicateCheck()); err != nil {
		return res, err
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return res, err
	}
	if s := next.CurrentSnapshot(); s != nil {
		res.SnapshotID = s.SnapshotID
	}
	res.Appended = len(add)
	return res, nil
}

// stateLocation is where a state object named obj is stored: under the
// warehouse's _pqsink/ prefix, outside the table's location, so that
// orphan-file removal of other engines, which deletes what the table's
// metadata does not reference, leaves it alone.
func (h *Handle) stateLocation(obj string) string {
	return h.warehouse + "/" + archive.StatePrefix + "tables/" + strings.Join(h.ident, "/") + "/" + obj
}

func writeObject(ctx context.Context, tbl *itable.Table, loc string, doc []byte) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	w, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return errors.New("the table's file system cannot write")
	}
	return w.WriteFile(loc, doc)
}

// State reads the exactly-once state of the table's current snapshot: the
// summary of the newest snapshot in its ancestry that carries one, so that
// a snapshot made by another engine (a compaction, an append of its own)
// does not hide it. A table none of whose snapshots carries one has the
// state its data files tell (recoverState): empty for a table without
// Kafka records.
func (h *Handle) State(ctx context.Context) (State, error) {
	tbl, err := h.cat.LoadTable(ctx, h.ident)
	if errors.Is(err, catalog.ErrNoSuchTable) && h.schema == nil {
		// Not created yet: the first file's schema will create it.
		return State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", h.name, err)
	}
	s, err := h.state(ctx, tbl)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", h.name, err)
	}
	return s, nil
}

func (h *Handle) state(ctx context.Context, tbl *itable.Table) (State, error) {
	if v, ok := stateValue(tbl); ok {
		return readState(ctx, tbl, v)
	}
	return h.recoverState(ctx, tbl)
}

// readState decodes a summary entry, reading the state object it names.
func readState(ctx context.Context, tbl *itable.Table, v string) (State, error) {
	switch {
	case strings.HasPrefix(v, archive.CommitInline):
		return decodeState([]byte(v[len(archive.CommitInline):]))
	case strings.HasPrefix(v, archive.CommitState):
		loc := v[len(archive.CommitState):]
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return nil, err
		}
		f, err := fsys.Open(loc)
		if err != nil {
			return nil, fmt.Errorf("reading the state object: %w", err)
		}
		defer f.Close()
		doc, err := io.ReadAll(f)
		if err != nil {
			return nil, fmt.Errorf("reading the state object %s: %w", loc, err)
		}
		return decodeState(doc)
	}
	return nil, fmt.Errorf("snapshot summary %s is not pqsink's", SummaryState)
}

// noLibraryRetry refuses a table on which iceberg-go would retry a
// conflicting commit itself: its retry replays the snapshot as built,
// summary included, onto the new current snapshot, so the state it carries
// would drop what the winner of the conflict wrote. Commit retries, merging
// the state again, instead.
func noLibraryRetry(tbl *itable.Table) error {
	v, ok := tbl.Properties()[itable.CommitNumRetriesKey]
	if !ok {
		return nil // iceberg-go's default is 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n != 0 {
		return fmt.Errorf("table property %s is %q: pqsink retries commits itself, merging its state each time, and needs it unset or 0", itable.CommitNumRetriesKey, v)
	}
	return nil
}
