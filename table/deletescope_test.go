package table

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
)

// TestDeleteScope pins which delete files may apply to a data file: the
// table spec's rules of scan planning, erring towards applying where
// readers differ or a value is not known.
func TestDeleteScope(t *testing.T) {
	day := iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "d", Transform: iceberg.IdentityTransform{}}
	partitioned := iceberg.NewPartitionSpecID(0, day)
	unpartitioned := iceberg.NewPartitionSpecID(1)
	specOf := func(id int) *iceberg.PartitionSpec {
		switch id {
		case 0:
			return &partitioned
		case 1:
			return &unpartitioned
		}
		return nil
	}
	const data = "s3://b/t/data/d=5/t+0+0.parquet"
	p5 := map[int]any{1000: int32(5)}
	type del struct {
		content   iceberg.ManifestEntryContent
		spec      int // 0 partitioned, 1 unpartitioned, 2 unknown
		partition map[int]any
		seq       int64 // -1: unknown
		ref       string
		lo, hi    string // file_path bounds
	}
	pos := func(seq int64, partition map[int]any) del {
		return del{content: iceberg.EntryContentPosDeletes, partition: partition, seq: seq}
	}
	eq := func(seq int64, spec int, partition map[int]any) del {
		return del{content: iceberg.EntryContentEqDeletes, spec: spec, partition: partition, seq: seq}
	}
	withRef := func(d del, ref string) del { d.ref = ref; return d }
	withBounds := func(d del, lo, hi string) del { d.lo, d.hi = lo, hi; return d }
	for _, tc := range []struct {
		name      string
		dataSeq   int64
		partition map[int]any
		del       del
		applies   bool
	}{
		{"position, same partition, same sequence number", 3, p5, pos(3, p5), true},
		{"position, same partition, later", 3, p5, pos(4, p5), true},
		{"position, older than the data file", 3, p5, pos(2, p5), false},
		{"position, other partition", 3, p5, pos(3, map[int]any{1000: int32(6)}), false},
		{"position, null partition value", 3, p5, pos(3, map[int]any{1000: nil}), false},
		{"position, empty partition tuple", 3, p5, pos(3, nil), true},
		{"position, partition value of another type", 3, p5, pos(3, map[int]any{1000: int64(5)}), true},
		{"position naming the file", 3, p5, withRef(pos(3, p5), data), true},
		{"position naming the file, other partition", 3, p5, withRef(pos(3, map[int]any{1000: int32(6)}), data), true},
		{"position naming another file", 3, p5, withRef(pos(3, p5), data+"x"), false},
		{"position naming the file, older", 3, p5, withRef(pos(2, p5), data), false},
		{"position bounds equal to the file", 3, p5, withBounds(pos(3, p5), data, data), true},
		{"position bounds equal to another file", 3, p5, withBounds(pos(3, p5), data+"x", data+"x"), false},
		{"position bounds a range", 3, p5, withBounds(pos(3, p5), "a", "z"), true},
		{"position, unknown sequence number", 3, p5, pos(-1, p5), true},
		{"position, data of unknown sequence number", -1, p5, pos(0, p5), true},
		{"deletion vector", 3, p5, withRef(del{content: iceberg.EntryContentPosDeletes, partition: p5, seq: 5}, data), true},
		{"equality, same sequence number", 3, p5, eq(3, 0, p5), false},
		{"equality, later", 3, p5, eq(4, 0, p5), true},
		{"equality, other partition", 3, p5, eq(4, 0, map[int]any{1000: int32(6)}), false},
		{"equality, unpartitioned spec", 3, p5, eq(4, 1, nil), true},
		{"equality, unknown spec", 3, p5, eq(4, 2, map[int]any{1000: int32(6)}), true},
		{"equality, unpartitioned spec, same sequence number", 3, p5, eq(3, 1, nil), false},
		{"equality, data file of an empty tuple", 3, nil, eq(4, 0, p5), true},
		{"equality, NaN", 3, map[int]any{1000: math.NaN()}, eq(4, 0, map[int]any{1000: 1.5}), true},
		{"equality, other float", 3, map[int]any{1000: 2.5}, eq(4, 0, map[int]any{1000: 1.5}), false},
		{"equality, unknown sequence number", 3, p5, eq(-1, 0, p5), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := partitioned
			switch tc.del.spec {
			case 1:
				spec = unpartitioned
			case 2:
				spec = iceberg.NewPartitionSpecID(2, day)
			}
			b, err := iceberg.NewDataFileBuilder(spec, tc.del.content, "s3://b/t/data/del.parquet", iceberg.ParquetFile, tc.del.partition, nil, nil, 1, 100)
			if err != nil {
				t.Fatal(err)
			}
			if tc.del.content == iceberg.EntryContentEqDeletes {
				b = b.EqualityFieldIDs([]int{1})
			}
			if tc.del.ref != "" {
				b = b.ReferencedDataFile(tc.del.ref)
			}
			if tc.del.lo != "" {
				b = b.LowerBoundValues(map[int][]byte{filePathFieldID: []byte(tc.del.lo)}).UpperBoundValues(map[int][]byte{filePathFieldID: []byte(tc.del.hi)})
			}
			var seq *int64
			if tc.del.seq >= 0 {
				seq = &tc.del.seq
			}
			var scope deleteScope
			scope.add(specOf, iceberg.NewManifestEntry(iceberg.EntryStatusADDED, nil, seq, seq, b.Build()))
			db, err := iceberg.NewDataFileBuilder(partitioned, iceberg.EntryContentData, data, iceberg.ParquetFile, tc.partition, nil, nil, 10, 1000)
			if err != nil {
				t.Fatal(err)
			}
			got := scope.applying(tc.dataSeq, db.Build())
			if applies := len(got) > 0; applies != tc.applies {
				t.Errorf("applies = %v (%v), want %v", applies, got, tc.applies)
			}
		})
	}
}

// otherEngineDelete deletes the rows of id with iceberg-go's
// Transaction.Delete, as another engine's DELETE FROM would, after
// setting the table's write.delete.mode to mode (merge-on-read: position
// deletes, deletion vectors in v3; copy-on-write: the files rewritten).
func otherEngineDelete(t *testing.T, c *Catalog, h *Handle, mode string, id int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: mode}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		t.Fatalf("deleting id %d (%s): %v", id, mode, err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("committing the delete of id %d (%s): %v", id, mode, err)
	}
}

// otherEngineEqualityDelete deletes the rows of id with an equality
// delete file on the id column, as Flink's upserts write them, through
// iceberg-go's Transaction.CommitEqualityDeletes.
func otherEngineEqualityDelete(t *testing.T, c *Catalog, h *Handle, id int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	field, ok := tbl.Schema().FindFieldByName("id")
	if !ok {
		t.Fatal("no id column")
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(field.ID)})}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	rec := b.NewRecordBatch()
	defer rec.Release()
	records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	tx := tbl.NewTransaction()
	if err := tx.CommitEqualityDeletes(ctx, []int{field.ID}, records, nil); err != nil {
		t.Fatalf("equality delete of id %d: %v", id, err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("committing the equality delete of id %d: %v", id, err)
	}
}

// deleteFiles lists the delete files of the table's current snapshot.
func deleteFiles(t *testing.T, c *Catalog, h *Handle) []iceberg.DataFile {
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
	manifests, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var out []iceberg.DataFile
	for _, m := range manifests {
		for e, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			if e.DataFile().ContentType() != iceberg.EntryContentData {
				out = append(out, e.DataFile())
			}
		}
	}
	return out
}

// TestLiveWithDeletes commits three files of ids 0-9, 10-19 and 20-29,
// then another engine deletes id 3 (in the first file) or, for the
// equality delete, ids 3 and 13: Live says which files deletes may apply
// to, a rewrite of such a file is refused (ErrRewriteDeletes) and commits
// nothing, one of the others commits, and the table reads the same rows
// before and after (iceberg-go's scan, which applies the deletes).
// Orphan removal, run after everything is old, keeps the delete files
// (Parquet position or equality deletes, Puffin deletion vectors).
func TestLiveWithDeletes(t *testing.T) {
	ctx := context.Background()
	byDay := []config.PartitionField{{Transform: "day", Column: "_kafka.timestamp"}}
	for _, tc := range []struct {
		name    string
		version int
		by      []config.PartitionField
		delete  func(t *testing.T, c *Catalog, h *Handle)
		// withDeletes are the files (0, 1, 2) deletes may apply to;
		// replaced the files no longer live.
		withDeletes, replaced []int
		deleted               []int64
		deleteFormat          iceberg.FileFormat
	}{
		// iceberg-go's position delete files name no data file (no
		// referenced_data_file, and file_path bounds truncated to 16
		// characters): they may apply to every file of their partition.
		{"v2 position deletes", 2, nil, func(t *testing.T, c *Catalog, h *Handle) { otherEngineDelete(t, c, h, itable.WriteModeMergeOnRead, 3) },
			[]int{0, 1, 2}, nil, []int64{3}, iceberg.ParquetFile},
		{"v2 position deletes, a partition a day", 2, byDay, func(t *testing.T, c *Catalog, h *Handle) { otherEngineDelete(t, c, h, itable.WriteModeMergeOnRead, 3) },
			[]int{0}, nil, []int64{3}, iceberg.ParquetFile},
		{"v3 deletion vectors", 3, nil, func(t *testing.T, c *Catalog, h *Handle) { otherEngineDelete(t, c, h, itable.WriteModeMergeOnRead, 3) },
			[]int{0}, nil, []int64{3}, iceberg.PuffinFile},
		{"copy-on-write", 2, nil, func(t *testing.T, c *Catalog, h *Handle) { otherEngineDelete(t, c, h, itable.WriteModeCopyOnWrite, 3) },
			nil, []int{0}, []int64{3}, ""},
		{"equality deletes", 2, nil, func(t *testing.T, c *Catalog, h *Handle) {
			otherEngineEqualityDelete(t, c, h, 3)
			otherEngineEqualityDelete(t, c, h, 13)
		}, []int{0, 1, 2}, nil, []int64{3, 13}, iceberg.ParquetFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.by...)
			e.cfg.Table.FormatVersion = tc.version
			// Each file's records on a day of their own.
			dayOf := func(o int64) int { return int(o / 10) }
			c := e.open(t)
			h, err := c.Table(ctx, "events", eventSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			loc := c.Location("events")
			files := commitEach(t, h, loc, 3, dayOf)
			tc.delete(t, c, h)
			want := slices.DeleteFunc(upTo(30), func(id int64) bool { return slices.Contains(tc.deleted, id) })
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Fatalf("after the delete the table reads %v, want %v", got, want)
			}
			dels := deleteFiles(t, c, h)
			if tc.deleteFormat == "" && len(dels) != 0 || tc.deleteFormat != "" && len(dels) == 0 {
				t.Fatalf("%d delete files after the delete", len(dels))
			}
			for _, d := range dels {
				if d.FileFormat() != tc.deleteFormat {
					t.Errorf("delete file %s is %s, want %s", d.FilePath(), d.FileFormat(), tc.deleteFormat)
				}
			}

			live, _, err := h.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			byLoc := map[string]LiveFile{}
			for _, f := range live {
				byLoc[f.Location] = f
			}
			var free []string
			for i, f := range files {
				l, ok := byLoc[f.Location]
				if ok == slices.Contains(tc.replaced, i) {
					t.Errorf("file %d live: %v", i, ok)
					continue
				}
				if !ok {
					continue
				}
				if (l.Deletes > 0) != slices.Contains(tc.withDeletes, i) {
					t.Errorf("file %d: %d delete files may apply", i, l.Deletes)
				}
				if l.Deletes == 0 {
					free = append(free, f.Location)
				}
			}
			for _, i := range tc.withDeletes {
				before, _, _ := h.Live(ctx)
				merged := writeFile(t, h, loc+"/m", "events", 0, 10*int64(i), 10*int64(i)+9, dayOf)
				_, err := h.Rewrite(ctx, []string{files[i].Location}, []File{merged})
				if !errors.Is(err, ErrRewriteDeletes) || !strings.Contains(err.Error(), files[i].Location) {
					t.Errorf("rewriting file %d, which has deletes: %v, want ErrRewriteDeletes naming it", i, err)
				}
				if after, _, _ := h.Live(ctx); !slices.Equal(before, after) {
					t.Errorf("a refused rewrite changed the live files")
				}
			}
			for _, i := range tc.replaced {
				merged := writeFile(t, h, loc+"/m", "events", 0, 10*int64(i), 10*int64(i)+9, dayOf)
				if _, err := h.Rewrite(ctx, []string{files[i].Location}, []File{merged}); !errors.Is(err, ErrRewriteConflict) {
					t.Errorf("rewriting file %d, which another engine replaced: %v, want ErrRewriteConflict", i, err)
				}
			}
			for i, loc1 := range free {
				merged := writeFile(t, h, loc+"/m", "events", 0, 10+10*int64(i), 19+10*int64(i), dayOf)
				if _, err := h.Rewrite(ctx, []string{loc1}, []File{merged}); err != nil {
					t.Fatalf("rewriting a file without deletes: %v", err)
				}
			}
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Errorf("after the rewrite the table reads %v, want %v", got, want)
			}

			// Expiry of every snapshot but the current one, then orphan
			// removal with everything two hours old: the delete files
			// are referenced, and stay.
			time.Sleep(5 * time.Millisecond)
			if res, err := h.ExpireSnapshots(ctx, 0, 1); err != nil || res.Expired == 0 {
				t.Fatalf("expiry: %+v, %v", res, err)
			}
			root := filepath.Join(e.dir, "warehouse")
			old := time.Now().Add(-2 * time.Hour)
			err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return err
				}
				return os.Chtimes(p, old, old)
			})
			if err != nil {
				t.Fatal(err)
			}
			store, err := objstore.Open(ctx, e.warehouse)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			res, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if res.Removed == 0 {
				t.Error("orphan removal removed nothing: the files the rewrites replaced are orphans")
			}
			for _, d := range deleteFiles(t, c, h) {
				if _, err := os.Stat(strings.TrimPrefix(d.FilePath(), "file://")); err != nil {
					t.Errorf("delete file after orphan removal: %v", err)
				}
			}
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Errorf("after orphan removal the table reads %v, want %v", got, want)
			}
		})
	}
}

// TestRewriteRacesDelete: another engine deletes a row of a file that a
// compaction planned to rewrite, after the plan (while the compaction
// merges) or between the rewrite's check and its compare-and-swap (which
// then fails, and the next attempt finds the delete). The rewrite gives up
// with ErrRewriteDeletes either way, the delete stays, and the table holds
// no deleted row; a new plan leaves the file out and rewrites the others.
func TestRewriteRacesDelete(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		version  int
		inHook   bool
		attempts string
	}{
		{"v2, after the plan", 2, false, "attempt 1"},
		{"v2, before the swap", 2, true, "attempt 2"},
		{"v3, before the swap", 3, true, "attempt 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			by := []config.PartitionField{{Transform: "day", Column: "_kafka.timestamp"}}
			e := newEnv(t, by...)
			e.cfg.Table.FormatVersion = tc.version
			c := e.open(t)
			h, err := c.Table(ctx, "events", eventSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			c2 := e.open(t)
			h2, err := c2.Table(ctx, "events", nil)
			if err != nil {
				t.Fatal(err)
			}
			loc := c.Location("events")
			// Two files of day 0 (ids 0-9, 10-19) and two of day 1.
			dayOf := func(o int64) int { return int(o / 20) }
			files := commitEach(t, h, loc, 4, dayOf)
			live, _, err := h.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var plan []string
			for _, f := range live {
				if f.Deletes != 0 {
					t.Fatalf("%s: %d deletes before any delete", f.Location, f.Deletes)
				}
				plan = append(plan, f.Location)
			}
			del := func() { otherEngineDelete(t, c2, h2, itable.WriteModeMergeOnRead, 3) }
			if tc.inHook {
				once := false
				h.beforeSwap = func() {
					if !once {
						once = true
						del()
					}
				}
			} else {
				del()
			}
			merged := []File{
				writeFile(t, h, loc+"/m", "events", 0, 0, 19, dayOf),
				writeFile(t, h, loc+"/m", "events", 0, 20, 39, dayOf),
			}
			_, err = h.Rewrite(ctx, plan, merged)
			h.beforeSwap = nil
			if !errors.Is(err, ErrRewriteDeletes) || !strings.Contains(err.Error(), files[0].Location) || !strings.Contains(err.Error(), tc.attempts) {
				t.Fatalf("the rewrite: %v; want ErrRewriteDeletes at %s naming %s", err, tc.attempts, files[0].Location)
			}
			want := slices.DeleteFunc(upTo(40), func(id int64) bool { return id == 3 })
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Errorf("after the refused rewrite the table reads %v, want %v", got, want)
			}
			if n := len(deleteFiles(t, c, h)); n == 0 {
				t.Error("the delete file is gone")
			}

			// Planned again: the file with the deleted row has deletes
			// (in v2, iceberg-go's position delete file names no file, so
			// the other file of its day too); those of day 1 have none,
			// and are rewritten.
			live, _, err = h.Live(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var free []string
			for _, f := range live {
				if f.Deletes == 0 {
					free = append(free, f.Location)
				}
			}
			slices.Sort(free)
			wantFree := []string{files[1].Location, files[2].Location, files[3].Location}
			if tc.version == 2 {
				wantFree = wantFree[1:]
			}
			if !slices.Equal(free, wantFree) {
				t.Fatalf("files without deletes: %v, want %v", free, wantFree)
			}
			plan = []string{files[2].Location, files[3].Location}
			if _, err := h.Rewrite(ctx, plan, merged[1:]); err != nil {
				t.Fatalf("the new plan's rewrite: %v", err)
			}
			if got := scanIDs(t, e, h, 0); !slices.Equal(got, want) {
				t.Errorf("after the new plan's rewrite the table reads %v, want %v", got, want)
			}
		})
	}
}
