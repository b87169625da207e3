package compact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

func TestPlan(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	file := func(folder string, i int, size int64, added time.Time) table.LiveFile {
		return table.LiveFile{Location: fmt.Sprintf("s3://b/w/t/data/%s/t+0+%020d.parquet", folder, i), Size: size, Records: size / 10, Added: added}
	}
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		files []table.LiveFile
		want  []int // files per bin, in order
	}{
		{"nothing", nil, nil},
		{"too few", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, mib, old)}, nil},
		{"one folder", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, mib, old), file("d=1", 2, mib, old)}, []int{3}},
		{"folders apart", []table.LiveFile{file("d=1", 0, mib, old), file("d=2", 1, mib, old), file("d=1", 2, mib, old), file("d=2", 3, mib, old), file("d=1", 4, mib, old)}, []int{3}},
		{"large and new left", []table.LiveFile{file("d=1", 0, mib, old), file("d=1", 1, 8*mib, old), file("d=1", 2, mib, now), file("d=1", 3, mib, old), file("d=1", 4, mib, old)}, []int{3}},
		{"compacted left", []table.LiveFile{{Location: "s3://b/w/t/data/d=1/compacted-1-ab-000-0.parquet", Size: mib, Added: old}, file("d=1", 1, mib, old), file("d=1", 2, mib, old)}, nil},
		{"bins at the target", []table.LiveFile{file("d=1", 0, 3*mib, old), file("d=1", 1, 3*mib, old), file("d=1", 2, 3*mib, old), file("d=1", 3, 3*mib, old), file("d=1", 4, 3*mib, old), file("d=1", 5, 3*mib, old), file("d=1", 6, 3*mib, old)}, []int{3, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bins := Plan(tc.files, Options{TargetFileSize: 10 * mib, MinInputFiles: 3, OlderThan: 10 * time.Minute, Now: func() time.Time { return now }})
			var got []int
			for _, b := range bins {
				got = append(got, len(b.Files))
				var bytes int64
				for i, f := range b.Files {
					bytes += f.Size
					if i > 0 && f.Location <= b.Files[i-1].Location {
						t.Errorf("bin files out of order: %s after %s", f.Location, b.Files[i-1].Location)
					}
				}
				if bytes != b.Bytes || bytes > 10*mib {
					t.Errorf("bin of %d bytes (says %d), target %d", bytes, b.Bytes, 10*mib)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("bins %v, want %v", got, tc.want)
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
	g := rowgroup.New(s)
	sh, err := rowgroup.NewJSONShredder(g)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
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
