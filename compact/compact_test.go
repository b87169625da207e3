package compact

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

// TestPlan covers which files a plan takes and how it packs them: by
// folder, under three quarters of the target and old enough, the files of
// earlier compactions first (oldest first) and the sink's by name, in
// bins of at most the target.
func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	file := func(folder string, i int, size int64, added time.Time) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/%s/t+0+%020d.parquet", folder, i), Size: size, Records: size / 10, Added: added}
	}
	compacted := func(folder, name string, size int64, added time.Time) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/%s/compacted-%s-0.parquet", folder, name), Size: size, Records: size / 10, Added: added}
	}
	withDeletes := func(f table.LiveFile) table.LiveFile { f.Deletes = 1; return f }
	withEquality := func(f table.LiveFile) table.LiveFile { f.Deletes, f.EqualityDeletes = 2, 1; return f }
	named := func(f table.LiveFile, share float64) table.LiveFile {
		f.Deletes, f.NamedDeletes = 1, int64(share*float64(f.Records))
		return f
	}
	// The two sorts of names, as names of the files in a bin.
	short := func(f table.LiveFile) string {
		base := path.Base(f.Location)
		if n, ok := strings.CutPrefix(base, "compacted-"); ok {
			return "c" + strings.TrimSuffix(n, "-0.parquet")
		}
		var i int
		fmt.Sscanf(strings.TrimPrefix(base, "t+0+"), "%d", &i)
		return fmt.Sprint(i)
	}
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		files []table.LiveFile
		want  []string // the bins, each its files' short names
	}{
		{"nothing", nil, nil},
		{"too few", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, mib, old)}, nil},
		{"one folder", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, mib, old), file("d=1", 2, mib, old)}, []string{"0,1,2"}},
		{"folders apart", []table.LiveFile{file("d=1", 0, mib, old), file("d=2", 1, mib, old), file("d=1", 2, mib, old), file("d=2", 3, mib, old), file("d=1", 4, mib, old)}, []string{"0,2,4"}},
		// Deletes are applied: their files are taken, and a bin with one
		// is rewritten however few its files.
		{"position deletes taken", []table.LiveFile{file("d=1", 0, mib, old), withDeletes(file("d=1", 1, mib, old)), file("d=1", 2, mib, old), file("d=1", 3, mib, old)}, []string{"0,1,2,3"}},
		{"equality deletes taken", []table.LiveFile{file("d=1", 0, mib, old), withEquality(file("d=1", 1, mib, old)), file("d=1", 2, mib, old)}, []string{"0,1,2"}},
		{"deletes alone", []table.LiveFile{withDeletes(file("d=1", 0, mib, old)), file("d=2", 1, mib, old), file("d=2", 2, mib, old)}, []string{"0"}},
		{"deletes keep a compacted file", []table.LiveFile{withDeletes(compacted("d=1", "9-ab-000", 7*mib, old)), file("d=1", 1, 7*mib/2, old)}, []string{"c9-ab-000"}},
		{"large with deletes left", []table.LiveFile{withDeletes(file("d=1", 0, 8*mib, old)), file("d=1", 1, mib, old)}, nil},
		// A large file of which deletes that name it delete 30% or more
		// is rewritten alone.
		{"large with a third deleted, alone", []table.LiveFile{named(file("d=1", 0, 8*mib, old), 0.4), file("d=1", 1, mib, old), file("d=1", 2, mib, old), file("d=1", 3, mib, old),
			named(file("d=2", 4, 9*mib, old), 0.31)}, []string{"1,2,3", "0", "4"}},
		{"large with a tenth deleted left", []table.LiveFile{named(file("d=1", 0, 8*mib, old), 0.1), file("d=1", 1, mib, old)}, nil},
		{"large and new with a third deleted left", []table.LiveFile{named(file("d=1", 0, 8*mib, now), 0.5)}, nil},
		{"large and new left", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, 8*mib, old), file("d=1", 2, mib, now), file("d=1", 3, mib, old), file("d=1", 4, mib, old)}, []string{"0,3,4"}},
		{"compacted taken first", []table.LiveFile{file("d=1", 1, mib, old), file("d=1", 2, mib, old), compacted("d=1", "9-ab-000", mib, old)}, []string{"c9-ab-000,1,2"}},
		{"compacted oldest first, whatever their names", []table.LiveFile{
			file("d=1", 0, mib, old), compacted("d=1", "1-ab-000", mib, old), compacted("d=1", "9-cd-000", mib, old.Add(-time.Hour)),
			compacted("d=1", "5-ef-001", mib, old), file("d=1", 7, mib, old),
		}, []string{"c9-cd-000,c1-ab-000,c5-ef-001,0,7"}},
		{"compacted large or new left", []table.LiveFile{
			compacted("d=1", "1-ab-000", 8*mib, old), compacted("d=1", "2-ab-000", mib, now), file("d=1", 3, mib, old), file("d=1", 4, mib, old), file("d=1", 5, mib, old),
		}, []string{"3,4,5"}},
		{"compacted in each folder", []table.LiveFile{
			file("d=2", 1, mib, old), compacted("d=2", "3-ab-000", 2*mib, old), file("d=1", 2, mib, old), compacted("d=1", "3-ab-001", 2*mib, old),
			file("d=1", 4, mib, old), file("d=2", 5, mib, old),
		}, []string{"c3-ab-001,2,4", "c3-ab-000,1,5"}},
		{"compacted and sink files at the target", []table.LiveFile{
			file("d=1", 0, 3*mib, old), file("d=1", 1, 3*mib, old), compacted("d=1", "4-ab-000", 7*mib, old), file("d=1", 2, 3*mib, old),
			file("d=1", 3, 3*mib, old), file("d=1", 4, 3*mib, old), file("d=1", 5, 3*mib, old),
		}, []string{"0,1,2", "3,4,5"}},
		{"bins at the target", []table.LiveFile{file("d=1", 0, 3*mib, old), file("d=1", 1, 3*mib, old), file("d=1", 2, 3*mib, old), file("d=1", 3, 3*mib, old), file("d=1", 4, 3*mib, old), file("d=1", 5, 3*mib, old), file("d=1", 6, 3*mib, old)}, []string{"0,1,2", "3,4,5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bins := Plan(tc.files, Options{TargetFileSize: 10 * mib, MinInputFiles: 3, OlderThan: 10 * time.Minute, Now: func() time.Time { return now }})
			var got []string
			for _, b := range bins {
				var names []string
				var bytes, records int64
				for _, f := range b.Files {
					names = append(names, short(f))
					bytes += f.Size
					records += f.Records
					if dir := f.Location[:strings.LastIndexByte(f.Location, '/')]; dir != b.Folder {
						t.Errorf("%s in the bin of folder %s", f.Location, b.Folder)
					}
				}
				got = append(got, strings.Join(names, ","))
				if bytes != b.Bytes || records != b.Records || bytes > 10*mib {
					t.Errorf("bin of %d bytes and %d records (says %d and %d), target %d", bytes, records, b.Bytes, b.Records, 10*mib)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("bins %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBySchema splits a bin of files of two schemas (a table whose schema
// evolved) into a bin of each, in order, leaving out a part too small.
func TestBySchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := objstore.Open(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	v1 := "message m { required int64 id; }"
	v2 := "message m { required int64 id; optional binary channel (STRING); }"
	var files []table.LiveFile
	for i, text := range []string{v1, v1, v2, v1, v2, v2, v2} {
		key := fmt.Sprintf("data/d=1/t+0+%020d.parquet", i)
		writeParquet(t, filepath.Join(dir, key), text)
		files = append(files, table.LiveFile{Location: "file://" + dir + "/" + key, Size: 100, Records: 1})
	}
	keyOf := func(loc string) (string, error) { return strings.TrimPrefix(loc, "file://"+dir+"/"), nil }
	bins, err := bySchema(ctx, store, keyOf, []Bin{{Folder: "file://" + dir + "/data/d=1", Files: files}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range bins {
		var names []string
		for _, f := range b.Files {
			names = append(names, f.Location[len(f.Location)-10:len(f.Location)-8])
		}
		got = append(got, strings.Join(names, ","))
		if b.Bytes != int64(100*len(b.Files)) || b.Records != int64(len(b.Files)) {
			t.Errorf("bin totals %d bytes %d records for %d files", b.Bytes, b.Records, len(b.Files))
		}
	}
	if want := []string{"00,01,03", "02,04,05,06"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bins %v, want %v", got, want)
	}
	// A file that is not Parquet is an error naming it.
	bad := filepath.Join(dir, "data", "d=1", "bad.parquet")
	if err := os.WriteFile(bad, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, table.LiveFile{Location: "file://" + bad})
	if _, err := bySchema(ctx, store, keyOf, []Bin{{Files: files}}, 3); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
		t.Errorf("a file that is not Parquet: %v", err)
	}
}

// writeParquet writes a one-row file of the schema text at path.
func writeParquet(t *testing.T, path, text string) {
	t.Helper()
	s, err := schema.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, s)
	if err := b.Append([]byte(`{"id":1}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := writer.New(out, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTooYoung: the count of files too young to compact is the count of
// those Plan leaves out for their age, at the boundary too.
func TestTooYoung(t *testing.T) {
	const mib = 1 << 20
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	file := func(i int, age time.Duration) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/d=1/t+0+%020d.parquet", i), Size: mib, Records: 10, Added: now.Add(-age)}
	}
	for _, tc := range []struct {
		name  string
		ages  []time.Duration
		older time.Duration
		want  int
	}{
		{"all young", []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}, 10 * time.Minute, 3},
		{"all old", []time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour}, 10 * time.Minute, 0},
		{"mixed, one at the cutoff", []time.Duration{time.Minute, 10 * time.Minute, time.Hour, 2 * time.Hour}, 10 * time.Minute, 1},
		{"older-than 0", []time.Duration{0, time.Minute, time.Hour}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var files []table.LiveFile
			for i, a := range tc.ages {
				files = append(files, file(i, a))
			}
			if got := tooYoung(files, now.Add(-tc.older)); got != tc.want {
				t.Errorf("tooYoung = %d, want %d", got, tc.want)
			}
			bins := Plan(files, Options{TargetFileSize: 100 * mib, MinInputFiles: 2, OlderThan: tc.older, Now: func() time.Time { return now }})
			planned := 0
			for _, b := range bins {
				planned += len(b.Files)
			}
			if old := len(files) - tc.want; old >= 2 && planned != old || old < 2 && planned != 0 {
				t.Errorf("Plan took %d files; %d are old enough", planned, old)
			}
		})
	}
}

// TestPlanTiered: a triggered plan (Options.Tiered, Options.Folders)
// takes only the folders named, and a compacted file only while it is no
// larger than the files it joins, smallest first.
func TestPlanTiered(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	const kib = 1 << 10
	file := func(folder string, i int, size int64) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/%s/t+0+%020d.parquet", folder, i), Size: size, Records: size / 10, Added: now}
	}
	compacted := func(folder, name string, size int64) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/%s/compacted-%s-0.parquet", folder, name), Size: size, Records: size / 10, Added: now.Add(-time.Duration(size))}
	}
	names := func(bins []Bin) string {
		var out []string
		for _, b := range bins {
			var n []string
			for _, f := range b.Files {
				n = append(n, strings.TrimSuffix(path.Base(f.Location), ".parquet"))
			}
			out = append(out, strings.Join(n, ","))
		}
		return strings.Join(out, " | ")
	}
	for _, tc := range []struct {
		name    string
		files   []table.LiveFile
		folders []string
		want    string
	}{
		{"sink files only", []table.LiveFile{file("d=1", 0, kib), file("d=1", 1, kib), file("d=1", 2, kib)}, nil,
			"t+0+00000000000000000000,t+0+00000000000000000001,t+0+00000000000000000002"},
		// 3 KiB of sink files take the 2 KiB compacted file (5 KiB then),
		// then the 4 KiB one, not the 64 KiB one.
		{"compacted while no larger", []table.LiveFile{
			compacted("d=1", "big", 64*kib), compacted("d=1", "mid", 4*kib), compacted("d=1", "low", 2*kib),
			file("d=1", 0, kib), file("d=1", 1, kib), file("d=1", 2, kib)}, nil,
			"compacted-mid-0,compacted-low-0,t+0+00000000000000000000,t+0+00000000000000000001,t+0+00000000000000000002"},
		// Three compacted files of 8 KiB, each larger than the sink
		// files, and at most two kept: the smallest is taken, then the
		// others, no larger than what they join.
		{"compacted beyond those kept", []table.LiveFile{
			compacted("d=1", "a", 8*kib), compacted("d=1", "b", 8*kib+1), compacted("d=1", "c", 8*kib+2), compacted("d=1", "big", 64*kib),
			file("d=1", 0, kib), file("d=1", 1, kib)}, nil,
			"compacted-c-0,compacted-b-0,compacted-a-0,t+0+00000000000000000000,t+0+00000000000000000001"},
		{"a compacted file with deletes taken", []table.LiveFile{
			func() table.LiveFile { f := compacted("d=1", "big", 64*kib); f.Deletes = 1; return f }(),
			file("d=1", 0, kib)}, nil,
			"compacted-big-0,t+0+00000000000000000000"},
		{"only the folders named", []table.LiveFile{
			file("d=1", 0, kib), file("d=1", 1, kib), file("d=1", 2, kib),
			file("d=2", 3, kib), file("d=2", 4, kib), file("d=2", 5, kib)}, []string{"s3://b/w/t/data/d=2"},
			"t+0+00000000000000000003,t+0+00000000000000000004,t+0+00000000000000000005"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{TargetFileSize: 1 << 20, MinInputFiles: 2, Tiered: true, KeepCompacted: 2, Now: func() time.Time { return now }}
			if tc.folders != nil {
				o.Folders = map[string]bool{}
				for _, f := range tc.folders {
					o.Folders[f] = true
				}
			}
			if got := names(Plan(tc.files, o)); got != tc.want {
				t.Errorf("bins %q, want %q", got, tc.want)
			}
		})
	}
}
