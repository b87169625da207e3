package table

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil"
)

// eventsTable opens the table "events" of format version version in a new
// environment, for the tests that run on both versions.
func eventsTable(t *testing.T, version int, partitionBy ...config.PartitionField) (*env, *Catalog, *Handle, string) {
	t.Helper()
	e := newEnv(t, partitionBy...)
	e.cfg.Table.FormatVersion = version
	c := e.open(t)
	h, err := c.Table(context.Background(), "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	return e, c, h, c.Location("events")
}

// without returns ids without those of drop, sorted.
func without(ids []int64, drop ...int64) []int64 {
	var out []int64
	for _, id := range ids {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

// icebirdIDs reads the id column of the table's current snapshot with
// icebird, through test/hyparquet/icebird_table.mjs, sorted.
func icebirdIDs(t *testing.T, c *Catalog, h *Handle) ([]int64, error) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testutil.RepoRoot(t), "test", "hyparquet")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("icebird harness: node is not installed (%v); install Node.js 20+, then %s", err, testutil.ProvisionHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "icebird", "package.json")); err != nil {
		t.Fatalf("icebird harness: test/hyparquet/node_modules/icebird is missing: %s", testutil.ProvisionHint)
	}
	cmd := exec.CommandContext(ctx, node, "icebird_table.mjs", tbl.MetadataLocation(), "id")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var ids []int64
	for _, line := range strings.Fields(stdout.String()) {
		var s string
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return nil, fmt.Errorf("line %q: %v", line, err)
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %v", line, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, nil
}

// commitDeleting writes the file of records first..last of events[0] and
// commits it with the state at last+1 and the deletes of offsets.
func commitDeleting(t *testing.T, h *Handle, f File, last int64, offsets ...int64) (Result, error) {
	t.Helper()
	var opts []CommitOption
	if len(offsets) > 0 {
		opts = append(opts, DeleteOffsets(map[KafkaPartition][]int64{{"events", 0}: offsets}))
	}
	return h.Commit(context.Background(), "g", []File{f}, State{{"g", "events", 0}: {Committed: last + 1}}, opts...)
}

// TestCommitDeletesByOffset commits, on a format version 2 and a version
// 3 table, files of ids 0-9, 10-19 and 20-29 (an id is its record's
// offset), the second and third with deletes of rows by offset: of the
// file before, and of the file the same commit appends; the third also
// of a file with deletes already (on version 3, a data file with a
// deletion vector gets one vector holding both). iceberg-go's scan and
// icebird (version 2) read the rows left; an offset in no row fails the
// commit with ErrNoLiveRow and commits nothing; an offset deleted already
// is left alone.
func TestCommitDeletesByOffset(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := context.Background()
			e, c, h, loc := eventsTable(t, version)
			a := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
			if _, err := commitDeleting(t, h, a, 9); err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				first, last int64
				offsets     []int64
				gone        []int64 // every id deleted after the step
				deleted     int64
			}{
				{10, 19, []int64{3, 7, 12}, []int64{3, 7, 12}, 3},
				{20, 29, []int64{5, 15, 25, 28}, []int64{3, 7, 12, 5, 15, 25, 28}, 4},
			}
			for _, s := range steps {
				f := writeFile(t, h, loc, "events", 0, s.first, s.last, sameDay)
				res, err := commitDeleting(t, h, f, s.last, s.offsets...)
				if err != nil {
					t.Fatal(err)
				}
				if res.Appended != 1 || res.RowsDeleted != s.deleted || res.DeleteFiles == 0 {
					t.Errorf("commit of %d..%d: %+v, want 1 file appended and %d rows deleted", s.first, s.last, res, s.deleted)
				}
				want := without(upTo(s.last+1), s.gone...)
				if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
					t.Errorf("after the commit of %d..%d iceberg-go reads %v, want %v", s.first, s.last, ids, want)
				}
				checkTotals(t, c, h)
			}
			// On version 3 a deletion vector a data file, the first
			// file's replaced (its new one holds 3, 5 and 7); on version 2
			// a position delete file a commit (the table has one
			// partition), which names no one data file here.
			perFile := map[string]int{}
			for _, d := range deleteFiles(t, c, h) {
				ref := d.ReferencedDataFile()
				switch {
				case version == 3 && (d.FileFormat() != iceberg.PuffinFile || ref == nil):
					t.Errorf("delete file %s of a v3 table is %s (referencing %v), want a deletion vector", d.FilePath(), d.FileFormat(), ref)
				case version == 3:
					perFile[*ref]++
				case d.FileFormat() != iceberg.ParquetFile:
					t.Errorf("delete file %s of a v2 table is %s, want Parquet", d.FilePath(), d.FileFormat())
				}
			}
			if version == 3 {
				// Row ids: the snapshots that deleted rows moved the
				// table's next row id past the rows they appended.
				tbl, err := c.cat.LoadTable(ctx, h.ident)
				if err != nil {
					t.Fatal(err)
				}
				if next := tbl.Metadata().NextRowID(); next != 30 {
					t.Errorf("next row id %d after 30 rows appended, want 30", next)
				}
				if len(perFile) != 3 {
					t.Errorf("deletion vectors of %d data files, want 3", len(perFile))
				}
				for ref, n := range perFile {
					if n != 1 {
						t.Errorf("data file %s has %d deletion vectors, want 1", ref, n)
					}
				}
				snap, err := c.Snapshot(ctx, h.ident, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range snap.Files {
					if f.Location != a.Location {
						continue
					}
					var rows []int64
					if f.Deleted != nil {
						rows = f.Deleted.Sorted()
					}
					if !slices.Equal(rows, []int64{3, 5, 7}) {
						t.Errorf("deleted rows of %s: %v, want 3, 5, 7", f.Location, rows)
					}
				}
			}
			want := without(upTo(30), steps[1].gone...)

			// An offset no row holds: nothing is committed.
			before, _ := snapshotCount(t, c, h)
			f := writeFile(t, h, loc, "events", 0, 30, 39, sameDay)
			_, err := commitDeleting(t, h, f, 39, 31, 999)
			if !errors.Is(err, ErrNoLiveRow) || !strings.Contains(err.Error(), "events[0]@999") {
				t.Errorf("deleting offset 999: %v, want ErrNoLiveRow naming it", err)
			}
			if n, _ := snapshotCount(t, c, h); n != before {
				t.Errorf("the failed commit made a snapshot: %d, want %d", n, before)
			}
			// Offsets deleted already (3) are left alone; 31 is deleted.
			res, err := commitDeleting(t, h, f, 39, 3, 31)
			if err != nil {
				t.Fatal(err)
			}
			if res.RowsDeleted != 1 || res.AlreadyDeleted != 1 {
				t.Errorf("commit deleting 3 again and 31: %+v, want 1 row deleted and 1 deleted already", res)
			}
			if version == 2 {
				// A position delete file of one data file names it: the
				// bounds of its file_path column are that file (the
				// referenced_data_file field is not in iceberg-go's
				// version 2 manifests).
				named := 0
				for _, d := range deleteFiles(t, c, h) {
					lo, hi := d.LowerBoundValues()[posDeleteFilePathID], d.UpperBoundValues()[posDeleteFilePathID]
					if string(lo) == f.Location && string(hi) == f.Location {
						named++
					}
				}
				if named != 1 {
					t.Errorf("%d delete files name %s alone, want 1", named, f.Location)
				}
			}
			want = without(upTo(40), append(steps[1].gone, 31)...)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("iceberg-go reads %v, want %v", ids, want)
			}

			// icebird applies version 2 position delete files; version
			// 0.3.1 reads every delete file as Parquet, so a deletion
			// vector (Puffin) fails its read rather than being ignored.
			ids, err := icebirdIDs(t, c, h)
			switch {
			case version == 2 && err != nil:
				t.Fatalf("icebird: %v", err)
			case version == 2 && !slices.Equal(ids, want):
				t.Errorf("icebird reads %v, want %v", ids, want)
			case version == 3 && err == nil:
				if !slices.Equal(ids, want) {
					t.Errorf("icebird reads %v from a table with deletion vectors, want %v", ids, want)
				}
				t.Logf("icebird reads deletion vectors now")
			case version == 3 && !strings.Contains(err.Error(), "PAR1"):
				t.Errorf("icebird fails on a table with deletion vectors, but not on reading the Puffin file as Parquet: %v", err)
			}
		})
	}
}

// TestCommitDeletesRetried: a commit with deletes that fails (its context
// ends before the swap) leaves its delete file an orphan; the commit made
// again writes new ones and lands once; made a third time (the caller
// unsure whether the second landed), it commits nothing, even though the
// deleted rows are deleted already. A commit that loses the swap to
// another member's append tries again, resolving its offsets anew.
func TestCommitDeletesRetried(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := context.Background()
			e, c, h, loc := eventsTable(t, version)
			if _, err := commitDeleting(t, h, writeFile(t, h, loc, "events", 0, 0, 9, sameDay), 9); err != nil {
				t.Fatal(err)
			}
			f := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
			deletes := DeleteOffsets(map[KafkaPartition][]int64{{"events", 0}: {4, 14}})
			state := State{{"g", "events", 0}: {Committed: 20}}

			failing, cancel := context.WithCancel(ctx)
			h.beforeSwap = cancel
			if _, err := h.Commit(failing, "g", []File{f}, state, deletes); err == nil {
				t.Fatal("the commit whose context ended before the swap succeeded")
			}
			h.beforeSwap = nil
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(10)) {
				t.Fatalf("after the failed commit iceberg-go reads %v, want 0..9", ids)
			}
			written, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(loc, "file://"), "data", "deletes-*"))
			if len(written) != 1 {
				t.Fatalf("the failed commit left %v, want one delete file", written)
			}

			res, err := h.Commit(ctx, "g", []File{f}, state, deletes)
			if err != nil {
				t.Fatal(err)
			}
			if res.Appended != 1 || res.RowsDeleted != 2 {
				t.Errorf("commit made again: %+v, want 1 file and 2 rows", res)
			}
			want := without(upTo(20), 4, 14)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("iceberg-go reads %v, want %v", ids, want)
			}
			for _, d := range deleteFiles(t, c, h) {
				if d.FilePath() == "file://"+written[0] {
					t.Errorf("the table references %s, which the failed attempt wrote", written[0])
				}
			}

			res, err = h.Commit(ctx, "g", []File{f}, state, deletes)
			if err != nil {
				t.Fatal(err)
			}
			if res.SnapshotID != 0 || res.Dropped != 1 || res.RowsDeleted != 0 {
				t.Errorf("commit made a third time: %+v, want nothing committed", res)
			}

			// Another member appends partition 1 between this commit's
			// read and its swap: the commit tries again.
			raceOnce(t, e, h, 1, 0, 9)
			g := writeFile(t, h, loc, "events", 0, 20, 29, sameDay)
			res, err = commitDeleting(t, h, g, 29, 0, 24)
			if err != nil {
				t.Fatal(err)
			}
			if res.Attempts != 2 || res.RowsDeleted != 2 {
				t.Errorf("commit racing an append: %+v, want 2 rows deleted after 2 attempts", res)
			}
			// Partition 1's ids 0..9 stay.
			want = append(without(upTo(30), 4, 14, 0, 24), upTo(10)...)
			slices.Sort(want)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("iceberg-go reads %v, want %v", ids, want)
			}
		})
	}
}

// TestCommitDeletesOnly: a commit of tombstones alone (no data file, its
// state moving) deletes rows in a snapshot of operation delete, of the
// Kafka partition named only: partition 1's file, whose bounds hold the
// same offsets, keeps its rows.
func TestCommitDeletesOnly(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := context.Background()
			e, c, h, loc := eventsTable(t, version)
			files := []File{
				writeFile(t, h, loc, "events", 0, 0, 9, sameDay),
				writeFile(t, h, loc, "events", 1, 100, 109, sameDay),
			}
			state := State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 110}}
			if _, err := h.Commit(ctx, "g", files, state); err != nil {
				t.Fatal(err)
			}
			state = State{{"g", "events", 1}: {Committed: 115}}
			res, err := h.Commit(ctx, "g", nil, state, DeleteOffsets(map[KafkaPartition][]int64{{"events", 1}: {102, 105}}))
			if err != nil {
				t.Fatal(err)
			}
			if res.RowsDeleted != 2 || res.Appended != 0 || res.SnapshotID == 0 {
				t.Errorf("commit of deletes alone: %+v, want 2 rows deleted", res)
			}
			tbl, err := c.cat.LoadTable(ctx, h.ident)
			if err != nil {
				t.Fatal(err)
			}
			if op := tbl.CurrentSnapshot().Summary.Operation; op != "delete" {
				t.Errorf("snapshot operation %q, want delete", op)
			}
			got, err := h.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if p := got[Partition{"g", "events", 1}]; p.Committed != 115 {
				t.Errorf("state of partition 1 after the deletes: %+v, want committed 115", p)
			}
			want := append(upTo(10), without(seq(100, 109, -1), 102, 105)...)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("iceberg-go reads %v, want %v", ids, want)
			}
		})
	}
}

// TestDeleteCandidates checks which data files, by their envelope bounds,
// may hold the offsets wanted, and which pin one Kafka partition.
func TestDeleteCandidates(t *testing.T) {
	known := func(lo, hi int64) Range[int64] { return Range[int64]{Min: lo, Max: hi, HasMin: true, HasMax: true} }
	topic := func(lo, hi string) Range[string] {
		return Range[string]{Min: lo, Max: hi, HasMin: true, HasMax: true}
	}
	want := map[KafkaPartition][]int64{{"events", 0}: {5, 50}, {"orders", 2}: {7}}
	cases := []struct {
		name     string
		env      Envelope
		may, pin bool
	}{
		{"offsets around 5", Envelope{Offset: known(0, 9), Partition: known(0, 0), Topic: topic("events", "events")}, true, true},
		{"offsets between the wanted", Envelope{Offset: known(6, 49), Partition: known(0, 0), Topic: topic("events", "events")}, false, true},
		{"offsets after", Envelope{Offset: known(51, 90), Partition: known(0, 0), Topic: topic("events", "events")}, false, true},
		{"another partition", Envelope{Offset: known(0, 9), Partition: known(1, 1), Topic: topic("events", "events")}, false, false},
		{"another topic", Envelope{Offset: known(0, 9), Partition: known(0, 0), Topic: topic("logs", "logs")}, false, false},
		{"unknown bounds", Envelope{}, true, false},
		{"unknown offsets", Envelope{Partition: known(2, 2), Topic: topic("orders", "orders")}, true, false},
		{"several partitions", Envelope{Offset: known(7, 7), Partition: known(0, 3), Topic: topic("events", "orders")}, true, false},
		{"truncated topic bounds", Envelope{Offset: known(40, 60), Partition: known(0, 0), Topic: topic("ev", "ew")}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := mayHold(c.env, want); got != c.may {
				t.Errorf("mayHold = %v, want %v", got, c.may)
			}
			if got := pinned(c.env, KafkaPartition{"events", 0}); got != c.pin {
				t.Errorf("pinned to events[0] = %v, want %v", got, c.pin)
			}
		})
	}
}

// TestPendingDeletes: a partition's offsets are resolved while the
// commit's state moves it, sorted and once each, and not once the table
// holds that state (the commit was made already).
func TestPendingDeletes(t *testing.T) {
	deletes := map[KafkaPartition][]int64{{"events", 0}: {9, 3, 9}, {"events", 1}: {4}, {"events", 2}: nil}
	state := State{{"g", "events", 0}: {Committed: 20}, {"g", "events", 1}: {Committed: 10}}
	cases := []struct {
		name string
		view State
		want map[KafkaPartition][]int64
	}{
		{"nothing held", State{}, map[KafkaPartition][]int64{{"events", 0}: {3, 9}, {"events", 1}: {4}}},
		{"partition 1 held", State{{"g", "events", 1}: {Committed: 10}}, map[KafkaPartition][]int64{{"events", 0}: {3, 9}}},
		{"partition 1 held further", State{{"g", "events", 1}: {Committed: 12}}, map[KafkaPartition][]int64{{"events", 0}: {3, 9}}},
		{"partition 0 behind", State{{"g", "events", 0}: {Committed: 19}}, map[KafkaPartition][]int64{{"events", 0}: {3, 9}, {"events", 1}: {4}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := pendingDeletes(deletes, "g", state, c.view)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("pendingDeletes = %v, want %v", got, c.want)
			}
		})
	}
}

// TestCommitDeletesPartitioned: on a table partitioned by day, deletes
// of rows of two days' files are written per partition (a position
// delete file each on version 2, naming its one data file; a vector
// each on version 3, in the data file's partition), and readers apply
// them.
func TestCommitDeletesPartitioned(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			ctx := context.Background()
			e, c, h, loc := eventsTable(t, version, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
			day := func(o int64) int { return int(o / 10) }
			files := []File{
				writeFile(t, h, loc, "events", 0, 0, 9, day),
				writeFile(t, h, loc, "events", 0, 10, 19, day),
			}
			if _, err := h.Commit(ctx, "g", files, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
				t.Fatal(err)
			}
			res, err := h.Commit(ctx, "g", nil, State{{"g", "events", 0}: {Committed: 25}}, DeleteOffsets(map[KafkaPartition][]int64{{"events", 0}: {2, 11, 12}}))
			if err != nil {
				t.Fatal(err)
			}
			if res.RowsDeleted != 3 || res.DeleteFiles != 2 {
				t.Errorf("commit: %+v, want 3 rows deleted with 2 delete files", res)
			}
			byFile := map[string]iceberg.DataFile{}
			for _, d := range deleteFiles(t, c, h) {
				target := string(d.LowerBoundValues()[posDeleteFilePathID])
				if ref := d.ReferencedDataFile(); ref != nil {
					target = *ref
				}
				byFile[target] = d
			}
			for _, f := range files {
				d, ok := byFile[f.Location]
				if !ok {
					t.Errorf("no delete file names %s alone", f.Location)
					continue
				}
				tbl, err := c.cat.LoadTable(ctx, h.ident)
				if err != nil {
					t.Fatal(err)
				}
				live, _, err := liveFiles(ctx, tbl)
				if err != nil {
					t.Fatal(err)
				}
				for _, lf := range live {
					if lf.Location == f.Location && !inPartitionOf(lf.df, d) {
						t.Errorf("the delete of %s is in partition %v, the file in %v", f.Location, d.Partition(), lf.df.Partition())
					}
				}
			}
			want := without(upTo(20), 2, 11, 12)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("iceberg-go reads %v, want %v", ids, want)
			}
			if version == 2 {
				ids, err := icebirdIDs(t, c, h)
				if err != nil {
					t.Fatalf("icebird: %v", err)
				}
				if !slices.Equal(ids, want) {
					t.Errorf("icebird reads %v, want %v", ids, want)
				}
			}
		})
	}
}

// TestCommitDeletesAfterOtherEngine: another engine deleted id 3 of the
// first file, merge-on-read (a position delete file on version 2, a
// deletion vector on 3) or copy-on-write (the file rewritten without the
// row, its later rows one position earlier). A commit deleting offsets
// 3, 5 and 13 leaves 3 as it is (merge-on-read) or fails naming it
// (copy-on-write: no row holds it), and deletes the rows of 5 and 13
// where they are now; on version 3 merge-on-read, the first file's vector
// is replaced by one holding both rows.
func TestCommitDeletesAfterOtherEngine(t *testing.T) {
	for _, version := range []int{2, 3} {
		for _, mode := range []string{"merge-on-read", "copy-on-write"} {
			t.Run(fmt.Sprintf("v%d %s", version, mode), func(t *testing.T) {
				ctx := context.Background()
				e, c, h, loc := eventsTable(t, version)
				files := []File{writeFile(t, h, loc, "events", 0, 0, 9, sameDay), writeFile(t, h, loc, "events", 0, 10, 19, sameDay)}
				if _, err := h.Commit(ctx, "g", files, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
					t.Fatal(err)
				}
				otherEngineDelete(t, c, h, mode, 3)
				f := writeFile(t, h, loc, "events", 0, 20, 29, sameDay)
				res, err := commitDeleting(t, h, f, 29, 3, 5, 13)
				already := 1
				if mode == "copy-on-write" {
					// The row is gone, not deleted: the caller hears
					// which offsets, and commits again without them.
					var missing *NoLiveRowError
					if !errors.As(err, &missing) || !errors.Is(err, ErrNoLiveRow) || fmt.Sprint(missing.Offsets) != "map[{events 0}:[3]]" {
						t.Fatalf("deleting a row copy-on-write removed: %v, want a NoLiveRowError of offset 3", err)
					}
					res, err = commitDeleting(t, h, f, 29, 5, 13)
					already = 0
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.RowsDeleted != 2 || res.AlreadyDeleted != already {
					t.Errorf("commit: %+v, want 2 rows deleted and %d deleted already", res, already)
				}
				want := without(upTo(30), 3, 5, 13)
				if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
					t.Errorf("iceberg-go reads %v, want %v", ids, want)
				}
				if version == 3 && mode == "merge-on-read" {
					vectors := 0
					for _, d := range deleteFiles(t, c, h) {
						if ref := d.ReferencedDataFile(); ref != nil && *ref == files[0].Location {
							vectors++
						}
					}
					if vectors != 1 {
						t.Errorf("%d deletion vectors of %s, want 1", vectors, files[0].Location)
					}
				}
				if version == 2 {
					ids, err := icebirdIDs(t, c, h)
					if err != nil {
						t.Fatalf("icebird: %v", err)
					}
					if !slices.Equal(ids, want) {
						t.Errorf("icebird reads %v, want %v", ids, want)
					}
				}
			})
		}
	}
}

// checkTotals checks the current snapshot's summary totals against its
// live manifest entries: data files, records, delete files, position
// deletes and bytes (each entry's file_size_in_bytes, a deletion vector's
// being its Puffin file's).
func checkTotals(t *testing.T, c *Catalog, h *Handle) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			f := e.DataFile()
			want["total-files-size"] += f.FileSizeBytes()
			if f.ContentType() == iceberg.EntryContentData {
				want["total-data-files"]++
				want["total-records"] += f.Count()
			} else {
				want["total-delete-files"]++
				want["total-position-deletes"] += f.Count()
			}
		}
	}
	for k, n := range want {
		v, ok := snap.Summary.Properties[k]
		if !ok {
			t.Errorf("snapshot %d's summary has no %s", snap.SnapshotID, k)
			continue
		}
		if v != strconv.FormatInt(n, 10) {
			t.Errorf("snapshot %d's summary: %s = %s, its live entries add up to %d", snap.SnapshotID, k, v, n)
		}
	}
}
