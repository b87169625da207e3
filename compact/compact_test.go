package compact

import (
	"fmt"
	"testing"
	"time"

	"github.com/pqsink/pqsink/table"
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
