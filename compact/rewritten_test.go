package compact

import (
	"context"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// tableEventSchema is eventSchema with the envelope's timestamp in
// microseconds, as the sink writes a table's files.
func tableEventSchema(t *testing.T) *schema.Schema {
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

// TestCompactTakesBackRewritten commits small files of 10 records each,
// lets another engine delete rows copy-on-write (iceberg-go's
// Transaction.Delete: the files holding them are rewritten without them,
// with INTEGER(64,true) annotations and without the sink's footer), and
// compacts. The rewritten files are taken back: merged with the sink's
// files of their folder, or, in a folder of rewritten files only, with
// the schema of a sink's file of another folder. None of them is live
// after it, the table reads the same rows (iceberg-go's scan; DuckDB over
// the new files), and each new file has the sink's schema and Kafka
// ranges that say exactly the records it holds, the deleted ones gaps.
func TestCompactTakesBackRewritten(t *testing.T) {
	ctx := context.Background()
	r := func(first, last, n int64) archive.Range {
		return archive.Range{Topic: "events", Partition: 0, First: first, Last: last, Records: n}
	}
	for _, tc := range []struct {
		name    string
		byDay   bool
		days    []int
		deleted []int64
		// takenBack: the report's; ranges, the new files' footers', by
		// folder day.
		takenBack int
		ranges    map[int][]archive.Range
	}{
		{name: "beside the sink's files", days: []int{0, 0, 0, 0}, deleted: []int64{0, 15, 16, 19},
			takenBack: 2, ranges: map[int][]archive.Range{0: {r(1, 18, 16), r(20, 39, 20)}}},
		{name: "rewritten files only in their folder", byDay: true, days: []int{0, 0, 1}, deleted: []int64{3, 10},
			takenBack: 2, ranges: map[int][]archive.Range{0: {r(0, 9, 9), r(11, 19, 9)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newDeleteEnvOf(t, 2, tc.byDay, tableEventSchema(t))
			var files []string
			for i, day := range tc.days {
				files = append(files, e.commit(t, 10*int64(i), 10*int64(i)+9, day))
			}
			e.delete(t, itable.WriteModeCopyOnWrite, tc.deleted...)
			want := slices.DeleteFunc(upTo(10*int64(len(files))), func(id int64) bool { return slices.Contains(tc.deleted, id) })
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Fatalf("before the compaction the table reads %v, want %v", got, want)
			}
			var rewritten []string
			for loc := range e.live(t) {
				if !strings.Contains(path.Base(loc), "+") {
					rewritten = append(rewritten, loc)
				}
			}
			if len(rewritten) != tc.takenBack {
				t.Fatalf("the delete rewrote %d files, want %d", len(rewritten), tc.takenBack)
			}
			o := Options{TargetFileSize: 1 << 20, MinInputFiles: 2, OlderThan: 0}
			for _, dry := range []bool{true, false} {
				o.DryRun = dry
				rep, err := Table(ctx, e.h, e.store, "file://"+e.dir, o)
				if err != nil {
					t.Fatal(err)
				}
				if rep.TakenBack != tc.takenBack || rep.Foreign != 0 {
					t.Errorf("dry run %v: %d files taken back, %d left as foreign; want %d and 0", dry, rep.TakenBack, rep.Foreign, tc.takenBack)
				}
			}
			live := e.live(t)
			for _, loc := range rewritten {
				if _, ok := live[loc]; ok {
					t.Errorf("%s live after the compaction", path.Base(loc))
				}
			}
			if got := e.ids(t); !slices.Equal(got, want) {
				t.Errorf("after the compaction the table reads %v, want %v", got, want)
			}
			var all []string
			for loc := range live {
				all = append(all, loc)
			}
			if got := duckIDs(t, duckdb.Start(t), all); got != joinIDs(want) {
				t.Errorf("DuckDB reads ids %s, want %s", got, joinIDs(want))
			}
			sinkSchema := e.h.Schema().String()
			for day, ranges := range tc.ranges {
				var got []archive.Range
				for loc := range live {
					if !strings.HasPrefix(path.Base(loc), outputPrefix) || !strings.HasPrefix(loc, e.folder(day)+"/") {
						continue
					}
					f := openLive(t, e, loc)
					rs, err := archive.ReadRanges(f.Metadata().KeyValueMetadata)
					if err != nil {
						t.Fatalf("%s: %v", path.Base(loc), err)
					}
					got = append(got, rs...)
					if s := f.Schema().String(); s != sinkSchema {
						t.Errorf("%s has schema\n%s\nwant the sink's\n%s", path.Base(loc), s, sinkSchema)
					}
				}
				if !reflect.DeepEqual(got, ranges) {
					t.Errorf("the new files of day %d hold ranges %+v, want %+v", day, got, ranges)
				}
			}
		})
	}
}

// openLive opens the table's data file at loc.
func openLive(t *testing.T, e *deleteEnv, loc string) *reader.File {
	t.Helper()
	r, err := e.store.NewReaderAt(context.Background(), strings.TrimPrefix(loc, "file://"+e.dir+"/"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f, err := reader.Open(r, r.Size())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestWithoutOverlaps: a rewritten file that holds offsets another file
// of its bin holds is left out of the bin (the merge would refuse it),
// whichever kind the other file is; files that only follow one another,
// or hold other partitions, stay, as do two sink files (the merge names
// them).
func TestWithoutOverlaps(t *testing.T) {
	r := func(p int32, first, last int64) []archive.Range {
		return []archive.Range{{Topic: "events", Partition: p, First: first, Last: last, Records: last - first + 1}}
	}
	sink := func(rs []archive.Range) footer { return footer{sink: true, held: rs} }
	rewritten := func(rs []archive.Range) footer { return footer{envelope: rs, held: rs} }
	for _, tc := range []struct {
		name  string
		files map[string]footer
		kept  []string
	}{
		{"no overlap", map[string]footer{"a": sink(r(0, 0, 9)), "b": rewritten(r(0, 10, 19)), "c": rewritten(r(1, 0, 9))}, []string{"a", "b", "c"}},
		{"a rewritten file over a sink's", map[string]footer{"a": sink(r(0, 0, 9)), "b": rewritten(r(0, 5, 19)), "c": sink(r(0, 20, 29))}, []string{"a", "c"}},
		{"a rewritten file inside a long range", map[string]footer{"a": sink(r(0, 0, 99)), "b": sink(r(0, 100, 109)), "c": rewritten(r(0, 40, 41))}, []string{"a", "b"}},
		{"two rewritten files", map[string]footer{"a": rewritten(r(0, 0, 9)), "b": rewritten(r(0, 9, 19)), "c": rewritten(r(0, 20, 29))}, []string{"c"}},
		{"two sink files", map[string]footer{"a": sink(r(0, 0, 9)), "b": sink(r(0, 9, 19))}, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Bin
			for _, loc := range []string{"a", "b", "c"} {
				if _, ok := tc.files[loc]; ok {
					b.Files = append(b.Files, table.LiveFile{Location: loc, Size: 1, Records: 1})
					b.Bytes++
				}
			}
			got, left := withoutOverlaps(b, tc.files)
			var kept []string
			for _, f := range got.Files {
				kept = append(kept, f.Location)
			}
			if !slices.Equal(kept, tc.kept) || left != len(b.Files)-len(tc.kept) || got.Bytes != int64(len(kept)) {
				t.Errorf("kept %v (%d left, %d bytes), want %v", kept, left, got.Bytes, tc.kept)
			}
		})
	}
}
