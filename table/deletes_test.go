package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// posRow is one row of a position delete file.
type posRow struct {
	path string
	pos  int64
}

// writePosDeletes writes a position delete file (file_path, pos) with
// pqsink's writer and returns its path.
func writePosDeletes(t testing.TB, dir, name string, rows []posRow) string {
	t.Helper()
	msg, err := schema.Parse(`message delete { required binary file_path (STRING) = 2147483546; required int64 pos = 2147483545; }`)
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, msg)
	var out bytes.Buffer
	w, err := writer.New(&out, msg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := b.Append(fmt.Appendf(nil, `{"file_path":%q,"pos":%d}`, r.path, r.pos), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestApplyDeletes checks, on delete files written to a directory, the
// scan planning rules of the Iceberg specification that say which data
// files a delete applies to: a position delete file's rows apply to the
// files they name that are live, in the delete file's partition (spec and
// values), with a data sequence number at most the delete file's, and
// the one it references if it references one; a deletion vector applies
// to the file it references under the same rules; delete files of other
// formats are refused naming the file.
func TestApplyDeletes(t *testing.T) {
	dir := t.TempDir()
	fsys := icebergio.LocalFS{}
	spec0 := iceberg.NewPartitionSpecID(0, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "day", Transform: iceberg.IdentityTransform{}})
	spec1 := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1001, Name: "day", Transform: iceberg.IdentityTransform{}})
	file := func(spec iceberg.PartitionSpec, content iceberg.ManifestEntryContent, path string, format iceberg.FileFormat, part map[int]any, seq int64, edit func(*iceberg.DataFileBuilder)) snapFile {
		t.Helper()
		b, err := iceberg.NewDataFileBuilder(spec, content, path, format, part, nil, nil, 100, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(b)
		}
		return snapFile{df: b.Build(), seq: seq}
	}
	day := func(d int32) map[int]any { return map[int]any{1000: d} }
	data := func(name string, part map[int]any, seq int64) snapFile {
		return file(spec0, iceberg.EntryContentData, filepath.Join(dir, name), iceberg.ParquetFile, part, seq, nil)
	}
	a, b, c, d := data("a.parquet", day(5), 2), data("b.parquet", day(6), 2), data("c.parquet", day(5), 5), data("d.parquet", day(5), 1)
	other := file(spec1, iceberg.EntryContentData, filepath.Join(dir, "e.parquet"), iceberg.ParquetFile, map[int]any{1001: int32(5)}, 1, nil)
	live := []snapFile{a, b, c, d, other}
	path := func(f snapFile) string { return f.df.FilePath() }

	// Every data file of day 5 in spec 0 named, at positions 1 and 3, and
	// a file that is not live.
	var day5 []posRow
	for _, f := range []snapFile{a, c, d} {
		day5 = append(day5, posRow{path(f), 1}, posRow{path(f), 3})
	}
	day5 = append(day5, posRow{filepath.Join(dir, "gone.parquet"), 2})
	posFile := func(name string, spec iceberg.PartitionSpec, part map[int]any, seq int64, rows []posRow, edit func(*iceberg.DataFileBuilder)) snapFile {
		return file(spec, iceberg.EntryContentPosDeletes, writePosDeletes(t, dir, name, rows), iceberg.ParquetFile, part, seq, edit)
	}
	// dvFileIn writes a deletion vector of positions for data file f and
	// returns its entry, in partition part with data sequence number seq.
	dvFileIn := func(name string, f snapFile, part map[int]any, seq int64, positions ...int64) snapFile {
		t.Helper()
		w := dv.NewDVWriter(fsys, func(int32) *iceberg.PartitionSpec { return &spec0 })
		if err := w.Add(path(f), positions, f.df.SpecID(), f.df.Partition()); err != nil {
			t.Fatal(err)
		}
		files, err := w.Flush(context.Background(), filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 {
			t.Fatalf("the deletion vector writer made %d entries", len(files))
		}
		df := files[0]
		b, err := iceberg.NewDataFileBuilder(spec0, iceberg.EntryContentPosDeletes, df.FilePath(), iceberg.PuffinFile, part, nil, nil, df.Count(), df.FileSizeBytes())
		if err != nil {
			t.Fatal(err)
		}
		b.ReferencedDataFile(path(f)).ContentOffset(*df.ContentOffset()).ContentSizeInBytes(*df.ContentSizeInBytes())
		return snapFile{df: b.Build(), seq: seq}
	}
	dvFile := func(name string, f snapFile, seq int64, positions ...int64) snapFile {
		return dvFileIn(name, f, f.df.Partition(), seq, positions...)
	}

	tests := []struct {
		name    string
		deletes []snapFile
		want    map[string][]int64 // by data file name
		err     string
	}{
		{"position deletes of one partition", []snapFile{posFile("p1.parquet", spec0, day(5), 3, day5, nil)},
			// c: a later sequence number; gone: not live.
			map[string][]int64{"a.parquet": {1, 3}, "d.parquet": {1, 3}}, ""},
		{"the same sequence number applies", []snapFile{posFile("p2.parquet", spec0, day(5), 5, day5, nil)},
			map[string][]int64{"a.parquet": {1, 3}, "c.parquet": {1, 3}, "d.parquet": {1, 3}}, ""},
		{"a referenced data file", []snapFile{posFile("p3.parquet", spec0, day(5), 9, day5, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path(d)) })},
			map[string][]int64{"d.parquet": {1, 3}}, ""},
		{"a referenced data file that is not live", []snapFile{posFile("p4.parquet", spec0, day(5), 9, day5, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(filepath.Join(dir, "gone.parquet")) })},
			map[string][]int64{}, ""},
		{"a referenced data file added after the delete", []snapFile{posFile("p9.parquet", spec0, day(5), 4, day5, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path(c)) })},
			map[string][]int64{}, ""},
		{"another spec", []snapFile{posFile("p5.parquet", spec1, map[int]any{1001: int32(5)}, 9, []posRow{{path(other), 1}, {path(other), 3}}, nil)},
			map[string][]int64{"e.parquet": {1, 3}}, ""},
		{"files of one partition add up", []snapFile{
			posFile("p6.parquet", spec0, day(6), 2, []posRow{{path(b), 7}, {path(b), 9}}, nil),
			posFile("p7.parquet", spec0, day(6), 3, []posRow{{path(b), 0}, {path(b), 7}}, nil),
		}, map[string][]int64{"b.parquet": {0, 7, 9}}, ""},
		{"a row naming a file of another partition", []snapFile{posFile("p10.parquet", spec0, day(6), 3, []posRow{{path(b), 1}, {path(a), 1}}, nil)},
			nil, "position delete file " + filepath.Join(dir, "p10.parquet") + ": row group 0: row 1: it deletes rows of data file " + path(a) + ", which is in another partition"},
		{"a row naming a file of another spec", []snapFile{posFile("p11.parquet", spec0, day(5), 3, []posRow{{path(other), 1}}, nil)},
			nil, "which is in another partition (spec 1 map[1001:5], the delete's spec 0 map[1000:5])"},
		{"a referenced data file of another partition", []snapFile{posFile("p12.parquet", spec0, day(6), 3, nil, func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path(a)) })},
			nil, "position delete file " + filepath.Join(dir, "p12.parquet") + ": it deletes rows of data file " + path(a) + ", which is in another partition"},
		{"a row naming a file of another partition added after the delete", []snapFile{posFile("p13.parquet", spec0, day(6), 3, []posRow{{path(b), 1}, {path(c), 1}}, nil)},
			map[string][]int64{"b.parquet": {1}}, ""},
		{"a deletion vector of another partition", []snapFile{dvFileIn("v6.puffin", a, day(6), 3, 1)},
			nil, "deletion vector " + filepath.Join(dir, "v6.puffin") + ": it deletes rows of data file " + path(a) + ", which is in another partition"},
		{"a deletion vector", []snapFile{dvFile("v1.puffin", a, 3, 0, 9, 1<<33)},
			map[string][]int64{"a.parquet": {0, 9, 1 << 33}}, ""},
		{"a deletion vector older than its file", []snapFile{dvFile("v2.puffin", c, 4, 0, 9)},
			map[string][]int64{}, ""},
		{"a deletion vector beside position deletes", []snapFile{
			dvFile("v3.puffin", a, 4, 0, 9),
			posFile("p8.parquet", spec0, day(5), 3, []posRow{{path(a), 9}, {path(a), 10}, {path(d), 2}}, nil),
		}, map[string][]int64{"a.parquet": {0, 9, 10}, "d.parquet": {2}}, ""},
		{"two deletion vectors of one file", []snapFile{dvFile("v4.puffin", a, 3, 1), dvFile("v5.puffin", a, 4, 2)},
			nil, "has two deletion vectors"},
		{"equality deletes in Avro", []snapFile{file(spec0, iceberg.EntryContentEqDeletes, filepath.Join(dir, "eq.avro"), iceberg.AvroFile, day(5), 3,
			func(b *iceberg.DataFileBuilder) { b.EqualityFieldIDs([]int{1}) })},
			nil, "equality delete file " + filepath.Join(dir, "eq.avro") + ": the snapshot has delete files: it is AVRO"},
		{"position deletes in Avro", []snapFile{file(spec0, iceberg.EntryContentPosDeletes, filepath.Join(dir, "p.avro"), iceberg.AvroFile, day(5), 3, nil)},
			nil, "position delete file " + filepath.Join(dir, "p.avro") + " is AVRO"},
		{"not a position delete file", []snapFile{file(spec0, iceberg.EntryContentPosDeletes, writeNotDeletes(t, dir), iceberg.ParquetFile, day(5), 3, nil)},
			nil, "no file_path or pos column"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specs := func(id int32) *iceberg.PartitionSpec {
				return map[int32]*iceberg.PartitionSpec{0: &spec0, 1: &spec1}[id]
			}
			got, err := applyDeletes(context.Background(), fsys, specs, "kafka.t", 7, live, tc.deletes)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("applyDeletes: %v, want an error saying %q", err, tc.err)
				}
				if strings.Contains(tc.name, "Avro") && !errors.Is(err, ErrDeleteFiles) {
					t.Errorf("the error does not wrap ErrDeleteFiles: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotByName := map[string][]int64{}
			for p, set := range got {
				var rows []int64
				for pos := range set.b.Positions() {
					rows = append(rows, int64(pos))
				}
				gotByName[filepath.Base(p)] = rows
				for _, r := range rows {
					if !set.Contains(r) {
						t.Errorf("%s: Contains(%d) is false", p, r)
					}
				}
				if set.Contains(-1) || set.Contains(1<<40) || set.Len() != int64(len(rows)) {
					t.Errorf("%s: Contains or Len wrong", p)
				}
			}
			if len(gotByName) != len(tc.want) {
				t.Errorf("deletes apply to %v, want %v", gotByName, tc.want)
			}
			for name, want := range tc.want {
				if !slices.Equal(gotByName[name], want) {
					t.Errorf("%s: deleted %v, want %v", name, gotByName[name], want)
				}
			}
		})
	}
}

// writeNotDeletes writes a Parquet file that is not a position delete
// file and returns its path.
func writeNotDeletes(t *testing.T, dir string) string {
	t.Helper()
	msg, err := schema.Parse(`message other { required int64 id; }`)
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, msg)
	if err := b.Append([]byte(`{"id":1}`), nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := writer.New(&out, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "other.parquet")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPartitionValue: values of a partition tuple compare by value,
// whichever Go type holds them.
func TestPartitionValue(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		same bool
	}{
		{int32(5), int64(5), true},
		{iceberg.Date(19000), int32(19000), true},
		{iceberg.Timestamp(7), int64(7), true},
		{int32(5), int32(6), false},
		{float32(1.5), 1.5, true},
		{"x", []byte("x"), true},
		{"x", "y", false},
		{nil, nil, true},
		{nil, int32(0), false},
		{uint64(1 << 63), int64(-1 << 63), false},
		{true, true, true},
	} {
		if got := reflect.DeepEqual(partitionValue(tc.a), partitionValue(tc.b)); got != tc.same {
			t.Errorf("%T %v and %T %v: same %v, want %v", tc.a, tc.a, tc.b, tc.b, got, tc.same)
		}
	}
}
