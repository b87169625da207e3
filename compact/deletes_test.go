package compact

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path"
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
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

// deleteEnv is a table that pqsink commits to, in a SQL catalog on
// SQLite, and a connection of iceberg-go's own to the same catalog: the
// other engine, which deletes rows.
type deleteEnv struct {
	h      *table.Handle
	loc    string // the table's location
	dir    string // the warehouse's folder
	store  objstore.Store
	other  catalog.Catalog
	folder func(day int) string // a day's data folder, under loc
}

// day0 is the day of the records' timestamps (record o's is day0 plus
// its file's day and o seconds).
var day0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// newDeleteEnv makes the table, of the format version, partitioned by
// day(_kafka.timestamp) when byDay.
func newDeleteEnv(t *testing.T, version int, byDay bool) *deleteEnv {
	t.Helper()
	return newDeleteEnvOf(t, version, byDay, eventSchema(t))
}

// newDeleteEnvOf is newDeleteEnv with the table made from the schema s.
func newDeleteEnvOf(t *testing.T, version int, byDay bool, s *schema.Schema) *deleteEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "warehouse")
	dbPath := filepath.Join(dir, "catalog.db")
	cfg := &config.Config{
		Store: config.Store{URL: wh},
		Table: &config.Table{
			Format:         "iceberg",
			Catalog:        config.Catalog{Type: "sql", URI: config.Secret("sqlite://" + dbPath), Name: "pqsink"},
			Namespace:      "kafka",
			Name:           "{topic}",
			CommitInterval: 30 * time.Second,
			FormatVersion:  version,
		},
	}
	if byDay {
		cfg.Table.PartitionBy = []config.PartitionField{{Transform: "day", Column: "_kafka.timestamp"}}
	}
	c, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h, err := c.Table(ctx, "events", s)
	if err != nil {
		t.Fatal(err)
	}
	e := &deleteEnv{h: h, loc: c.Location("events"), dir: filepath.Join(dir, "warehouse")}
	e.folder = func(int) string { return e.loc + "/data" }
	if byDay {
		fields, err := h.PathFields(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.folder = func(day int) string {
			return fmt.Sprintf("%s/data/%s=%s", e.loc, fields[0].Name, day0.AddDate(0, 0, day).Format(time.DateOnly))
		}
	}
	if e.store, err = objstore.Open(ctx, wh); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if e.other, err = sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": wh}); err != nil {
		t.Fatal(err)
	}
	return e
}

// eventSchema is the payload of the test records plus the envelope.
func eventSchema(t *testing.T) *schema.Schema {
	t.Helper()
	s, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		schema.Leaf("name", schema.Optional, meta.TypeByteArray, schema.Logical{Kind: schema.String}),
		rowgroup.EnvelopeNodeIn(schema.Micros))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// commit writes the records of ids (offsets of partition 0) first..last,
// of the day, as the sink would, and commits the file; it returns the
// file's location.
func (e *deleteEnv) commit(t *testing.T, first, last int64, day int) string {
	t.Helper()
	ctx := context.Background()
	s := e.h.Schema()
	g, b := rowgrouptest.JSON(t, s)
	for o := first; o <= last; o++ {
		ts := day0.AddDate(0, 0, day).Add(time.Duration(o) * time.Second)
		rec := fmt.Sprintf(`{"id":%d,"name":"n%d"}`, o, o)
		if err := b.Append([]byte(rec), &rowgroup.Envelope{Topic: "events", Partition: 0, Offset: o, Timestamp: ts, Key: []byte("k")}); err != nil {
			t.Fatal(err)
		}
	}
	loc := fmt.Sprintf("%s/events+0+%020d.parquet", e.folder(day), first)
	p := strings.TrimPrefix(loc, "file://")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := writer.New(out, s)
	if err != nil {
		t.Fatal(err)
	}
	archive.Range{Topic: "events", Partition: 0, First: first, Last: last, Records: last - first + 1}.Footer(w.SetKeyValue)
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := table.File{Location: loc, Size: w.Offset(), Footer: md, PathID: "p"}
	if _, err := e.h.Commit(ctx, "g", []table.File{f}, table.State{{Group: "g", Topic: "events", Partition: 0}: {Committed: last + 1}}); err != nil {
		t.Fatal(err)
	}
	return loc
}

// delete deletes the rows of ids as another engine's DELETE FROM would,
// in one snapshot, with iceberg-go's Transaction.Delete in mode
// (write.delete.mode), or, for mode "equality", with an equality delete
// file on the id column (iceberg-go's CommitEqualityDeletes, as Flink's
// upserts write them).
func (e *deleteEnv) delete(t *testing.T, mode string, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if mode == "equality" {
		field, ok := tbl.Schema().FindFieldByName("id")
		if !ok {
			t.Fatal("no id column")
		}
		sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(field.ID)})}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		records := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
		err = tx.CommitEqualityDeletes(ctx, []int{field.ID}, records, nil)
	} else {
		if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: mode}); err != nil {
			t.Fatal(err)
		}
		err = tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
	}
	if err != nil {
		t.Fatalf("deleting ids %v (%s): %v", ids, mode, err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("committing the delete of ids %v (%s): %v", ids, mode, err)
	}
}

// ids reads the ids of the table's rows with iceberg-go's scan, which
// applies the delete files.
func (e *deleteEnv) ids(t *testing.T) []int64 {
	t.Helper()
	ctx := context.Background()
	tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var ids []int64
	for i := 0; i < int(at.NumCols()); i++ {
		if at.Column(i).Name() == "id" {
			for _, ch := range at.Column(i).Data().Chunks() {
				ids = append(ids, ch.(*array.Int64).Int64Values()...)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// live is the table's live data files by location.
func (e *deleteEnv) live(t *testing.T) map[string]table.LiveFile {
	t.Helper()
	live, _, err := e.h.Live(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]table.LiveFile{}
	for _, f := range live {
		out[f.Location] = f
	}
	return out
}

// deleteCount is how many delete files the table's current snapshot has.
func (e *deleteEnv) deleteCount(t *testing.T) int {
	t.Helper()
	ctx := context.Background()
	tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
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
	n := 0
	for _, m := range manifests {
		for en, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			if en.DataFile().ContentType() != iceberg.EntryContentData {
				n++
			}
		}
	}
	return n
}

// duckIDs reads the ids of the data files at locs with DuckDB.
func duckIDs(t *testing.T, db *duckdb.DB, locs []string) string {
	t.Helper()
	if len(locs) == 0 {
		return ""
	}
	var paths []string
	for _, l := range locs {
		paths = append(paths, duckdb.Quote(strings.TrimPrefix(l, "file://")))
	}
	r := db.Query(t, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) AS ids FROM read_parquet(["+strings.Join(paths, ",")+"])")
	return fmt.Sprint(r.Value(0, "ids"))
}

// joinIDs writes ids as DuckDB's string_agg does.
func joinIDs(ids []int64) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.FormatInt(id, 10))
	}
	return strings.Join(s, ",")
}

// TestCompactAppliesDeletes commits small files, lets another engine
// delete a row (or two), and compacts. Position deletes and deletion
// vectors are applied: their files are rewritten without the deleted
// rows, the delete files that applied only to them are gone from the
// snapshot, those that may still apply to a file left live stay, and the
// run says how many rows and delete files it applied and removed.
// Equality deletes are not: the files they may apply to are left as they
// are. Either way the table reads exactly the rows it read before
// (iceberg-go's scan, which applies the deletes; DuckDB over the data
// files no delete may apply to, which must hold the rest of them), and
// orphan removal deletes none of its files.
func TestCompactAppliesDeletes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		version int
		byDay   bool
		mode    string
		deleted []int64
		// together deletes them in one DELETE, not one each.
		together bool
		// noOutput: every row compacted is deleted, and no file written.
		noOutput bool
		// target is the target file size; 1 MiB when 0.
		target int64
		// days of the files, 10 records each, ids 0-9 the first's.
		days []int
		// young are the files (by index) committed too recently to be
		// compacted (before the deletes, which may apply to them).
		young []int
		// after are the days of files committed after the delete.
		after []int
		// kept are the files (by index, those after the delete following
		// the others) left as they are; foreign the files left that the
		// sink did not write.
		kept        []int
		withDeletes int
		foreign     int
		// deletedRows and removed: the report's; deletesLeft, the delete
		// files of the snapshot after the compaction.
		deletedRows int64
		removed     int
		deletesLeft int
	}{
		// iceberg-go's v2 position delete files name no data file: they
		// may apply to every file of their partition (day 0), and go
		// when all of those are rewritten.
		{name: "v2 position deletes", version: 2, byDay: true, mode: itable.WriteModeMergeOnRead, deleted: []int64{3, 14},
			days: []int{0, 0, 0, 1, 1, 1}, deletedRows: 2, removed: 2},
		// One file of day 0 is too young to compact: the delete files of
		// day 0 may apply to it, and stay.
		{name: "v2 position deletes that may apply to a file left", version: 2, byDay: true, mode: itable.WriteModeMergeOnRead, deleted: []int64{33},
			days: []int{1, 1, 1, 0, 0, 0}, young: []int{5}, kept: []int{5}, deletedRows: 1, deletesLeft: 1},
		// A deletion vector names its data file, and goes with it.
		{name: "v3 deletion vectors", version: 3, mode: itable.WriteModeMergeOnRead, deleted: []int64{3, 45, 46},
			days: []int{0, 0, 0, 0, 0, 0}, deletedRows: 3, removed: 2},
		// One DELETE of rows of two files writes their deletion vectors
		// in one Puffin file: that of the young file stays.
		{name: "v3 deletion vectors in one Puffin file", version: 3, mode: itable.WriteModeMergeOnRead, deleted: []int64{3, 45}, together: true,
			days: []int{0, 0, 0, 0, 0}, young: []int{4}, kept: []int{4}, deletedRows: 1, removed: 1, deletesLeft: 1},
		// A file whose every row is deleted goes, with its vector, and
		// no file takes its place.
		{name: "v3, every row of a file", version: 3, mode: itable.WriteModeMergeOnRead, deleted: upTo(10), together: true,
			days: []int{0}, deletedRows: 10, removed: 1, noOutput: true},
		// Files too large to compact (of 2 kB, for a target of 2,000
		// bytes): the one of which deletion vectors delete 40% is
		// rewritten alone, the one of 10% left as it is.
		{name: "v3, large files with deletes", version: 3, mode: itable.WriteModeMergeOnRead, deleted: []int64{0, 1, 2, 3, 15}, together: true,
			days: []int{0, 0, 0}, target: 2000, kept: []int{1, 2}, deletedRows: 4, removed: 1, deletesLeft: 1},
		// The file of the young one's stays with it.
		{name: "v3 deletion vectors, one of a file left", version: 3, mode: itable.WriteModeMergeOnRead, deleted: []int64{3, 45},
			days: []int{0, 0, 0, 0, 0}, young: []int{4}, kept: []int{4}, deletedRows: 1, removed: 1, deletesLeft: 1},
		// The file of id 3 is rewritten by the other engine: its output
		// has no Kafka ranges, and the columns of the sink's files (these
		// files' _kafka.timestamp is in microseconds, as the sink's table
		// files have it), so it is taken back with them
		// (TestCompactTakesBackRewritten), no delete file applied.
		{name: "copy-on-write", version: 2, mode: itable.WriteModeCopyOnWrite, deleted: []int64{3},
			days: []int{0, 0, 0, 0}},
		// An equality delete applies to every older file of an
		// unpartitioned table, and to none committed after it: it goes
		// when they are all rewritten (the new files, of a later data
		// sequence number, are not its to delete from).
		{name: "equality delete", version: 2, mode: "equality", deleted: []int64{3, 15},
			days: []int{0, 0, 0}, after: []int{0, 0, 0}, deletedRows: 2, removed: 2},
		// The young file keeps it.
		{name: "equality delete that may apply to a file left", version: 2, mode: "equality", deleted: []int64{3},
			days: []int{0, 0, 0, 0}, young: []int{3}, kept: []int{3}, deletedRows: 1, deletesLeft: 1},
		// In a v3 table, beside deletion vectors.
		{name: "v3 equality delete and deletion vectors", version: 3, mode: "equality", deleted: []int64{3, 14},
			days: []int{0, 0, 0}, deletedRows: 2, removed: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDeleteEnv(t, tc.version, tc.byDay)
			var files []string
			var cutoff time.Time
			for i, day := range tc.days {
				if slices.Contains(tc.young, i) && cutoff.IsZero() {
					// Snapshot times are in milliseconds.
					time.Sleep(5 * time.Millisecond)
					cutoff = time.Now()
					time.Sleep(5 * time.Millisecond)
				}
				files = append(files, e.commit(t, 10*int64(i), 10*int64(i)+9, day))
			}
			if tc.together {
				e.delete(t, tc.mode, tc.deleted...)
			} else {
				for _, id := range tc.deleted {
					e.delete(t, tc.mode, id)
				}
			}
			for i, day := range tc.after {
				n := int64(len(tc.days) + i)
				files = append(files, e.commit(t, 10*n, 10*n+9, day))
			}
			all := upTo(10 * int64(len(files)))
			want := slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return slices.Contains(tc.deleted, id) })
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Fatalf("before the compaction the table reads %v, want %v", got, want)
			}
			deletes := e.deleteCount(t)

			// The dry run's plan, then the run.
			o := Options{TargetFileSize: cmp.Or(tc.target, 1<<20), MinInputFiles: 2, OlderThan: 0}
			if !cutoff.IsZero() {
				o.Now = func() time.Time { return cutoff }
			}
			o.DryRun = true
			plan, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
			if err != nil {
				t.Fatal(err)
			}
			if n := e.deleteCount(t); n != deletes {
				t.Errorf("%d delete files after the dry run, %d before", n, deletes)
			}
			o.DryRun = false
			rep, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []Report{plan, rep} {
				if r.WithDeletes != tc.withDeletes || r.Foreign != tc.foreign {
					t.Errorf("report: %d files left for deletes, %d foreign; want %d and %d", r.WithDeletes, r.Foreign, tc.withDeletes, tc.foreign)
				}
				if r.DeletedRows != tc.deletedRows || r.DeleteFilesRemoved != tc.removed || r.Rows != inputRecords(r)-tc.deletedRows {
					t.Errorf("report: %d deleted rows applied, %d delete files removed, %d rows of %d; want %d and %d",
						r.DeletedRows, r.DeleteFilesRemoved, r.Rows, inputRecords(r), tc.deletedRows, tc.removed)
				}
			}
			if rep.Snapshot == 0 {
				t.Fatal("nothing compacted")
			}
			live := e.live(t)
			var compacted, free []string
			for i, f := range files {
				_, ok := live[f]
				if tc.mode == itable.WriteModeCopyOnWrite && i == 0 {
					// Replaced by the other engine's file, without id 3.
					if ok {
						t.Errorf("file 0 live after the copy-on-write delete")
					}
					continue
				}
				if ok != slices.Contains(tc.kept, i) {
					t.Errorf("file %d (%s) live after the compaction: %v", i, path.Base(f), ok)
				}
			}
			for loc, f := range live {
				if f.Deletes == 0 {
					free = append(free, loc)
				}
				if strings.HasPrefix(path.Base(loc), outputPrefix) {
					compacted = append(compacted, loc)
					if f.Deletes > 0 {
						t.Errorf("delete files may apply to %s, written after them", path.Base(loc))
					}
				}
			}
			if (len(compacted) == 0) != tc.noOutput {
				t.Errorf("%d compacted files live", len(compacted))
			}
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Errorf("after the compaction the table reads %v, want %v", got, want)
			}
			if n := e.deleteCount(t); n != tc.deletesLeft {
				t.Errorf("%d delete files after the compaction, want %d (%d before)", n, tc.deletesLeft, deletes)
			}
			// The files without deletes hold every row of the table but
			// those of the files with deletes, each once.
			var inKept []int64
			for _, i := range tc.kept {
				if l, ok := live[files[i]]; ok && l.Deletes > 0 {
					for id := 10 * int64(i); id < 10*int64(i)+10; id++ {
						inKept = append(inKept, id)
					}
				}
			}
			wantFree := slices.DeleteFunc(slices.Clone(want), func(id int64) bool { return slices.Contains(inKept, id) })
			db := duckdb.Start(t)
			if got := duckIDs(t, db, free); got != joinIDs(wantFree) {
				t.Errorf("DuckDB reads ids %s in the files without deletes, want %s", got, joinIDs(wantFree))
			}
			// Orphan removal deletes no file the table reads.
			if _, err := e.h.RemoveOrphans(ctx, e.store, table.OrphanOptions{OlderThan: 0}); err != nil {
				t.Fatal(err)
			}
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Errorf("after orphan removal the table reads %v, want %v", got, want)
			}
		})
	}
}

// TestCompactRacesDelete: another engine deletes a row of a file being
// compacted while the merge runs. The run gives up without committing
// (table.ErrRewriteDeletes), though it applied the deletes it planned
// with, the deletes stay, and the table holds no deleted row; the next run
// applies every delete, and the delete files go.
func TestCompactRacesDelete(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		version int
		before  []int64 // deleted before the plan
	}{{2, nil}, {3, nil}, {2, []int64{3}}, {3, []int64{3}}} {
		t.Run(fmt.Sprintf("v%d, %d deleted before", tc.version, len(tc.before)), func(t *testing.T) {
			e := newDeleteEnv(t, tc.version, true)
			var files []string
			for i, day := range []int{0, 0, 0, 1, 1, 1} {
				files = append(files, e.commit(t, 10*int64(i), 10*int64(i)+9, day))
			}
			for _, id := range tc.before {
				e.delete(t, itable.WriteModeMergeOnRead, id)
			}
			once := false
			o := Options{TargetFileSize: 1 << 20, MinInputFiles: 2, OlderThan: 0, Progress: func(Progress) {
				if !once {
					once = true
					e.delete(t, itable.WriteModeMergeOnRead, 13)
				}
			}}
			before := e.live(t)
			_, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
			if !errors.Is(err, table.ErrRewriteDeletes) || !strings.Contains(err.Error(), files[1]) {
				t.Fatalf("the compaction: %v; want table.ErrRewriteDeletes naming %s", err, files[1])
			}
			after := e.live(t)
			for loc := range before {
				if _, ok := after[loc]; !ok {
					t.Errorf("%s is no longer live after the refused compaction", loc)
				}
			}
			deleted := append(slices.Clone(tc.before), 13)
			want := slices.DeleteFunc(upTo(60), func(id int64) bool { return slices.Contains(deleted, id) })
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Errorf("after the refused compaction the table reads %v, want %v", got, want)
			}
			if n := e.deleteCount(t); n != len(deleted) {
				t.Errorf("%d delete files after the refused compaction, want %d", n, len(deleted))
			}

			o.Progress = nil
			rep, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
			if err != nil || rep.Snapshot == 0 || rep.WithDeletes != 0 || rep.DeletedRows != int64(len(deleted)) || rep.DeleteFilesRemoved != len(deleted) {
				t.Fatalf("the next compaction: %+v, %v; want %d deleted rows and delete files applied", rep, err, len(deleted))
			}
			after = e.live(t)
			for _, f := range files {
				if _, ok := after[f]; ok {
					t.Errorf("%s was not compacted", path.Base(f))
				}
			}
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Errorf("after the next compaction the table reads %v, want %v", got, want)
			}
			if n := e.deleteCount(t); n != 0 {
				t.Errorf("%d delete files after the next compaction, want none", n)
			}
		})
	}
}

// inputRecords is the records of the inputs of r's bins.
func inputRecords(r Report) int64 {
	var n int64
	for _, b := range r.Bins {
		n += b.Records
	}
	return n
}

// upTo is 0..n-1.
func upTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}
