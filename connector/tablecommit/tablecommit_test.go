package tablecommit

import (
	"maps"
	"testing"

	"github.com/pqsink/pqsink/table"
)

// TestMergeProgress: the committer's union of two progress reports of a
// partition keeps the later committed offset and the later end of each
// path beyond it.
func TestMergeProgress(t *testing.T) {
	for _, tc := range []struct {
		name string
		p, q table.Progress
		want table.Progress
	}{
		{"later wins", table.Progress{Committed: 5, Paths: map[string]int64{"a": 9}}, table.Progress{Committed: 7, Paths: map[string]int64{"a": 12, "b": 8}},
			table.Progress{Committed: 7, Paths: map[string]int64{"a": 12, "b": 8}}},
		{"an older report does not go back", table.Progress{Committed: 7, Paths: map[string]int64{"a": 12}}, table.Progress{Committed: 3, Paths: map[string]int64{"a": 9, "c": 4}},
			table.Progress{Committed: 7, Paths: map[string]int64{"a": 12}}},
		{"paths below the offset go", table.Progress{Committed: 2, Paths: map[string]int64{"a": 4}}, table.Progress{Committed: 10, Paths: nil},
			table.Progress{Committed: 10, Paths: map[string]int64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mergeProgress(tc.p, tc.q)
			if got.Committed != tc.want.Committed || !maps.Equal(got.Paths, tc.want.Paths) {
				t.Errorf("merge = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestBatchAppend: a batch keeps each file with its records' times, in
// the order the partition uploaded or adopted them.
func TestBatchAppend(t *testing.T) {
	var b Batch
	for i, loc := range []string{"a", "b", "c"} {
		b.Append(table.File{Location: loc}, RecordTimes{Oldest: int64(i + 1), Newest: int64(i + 10), Adopted: i == 1})
	}
	if len(b.Files) != 3 || len(b.Times) != 3 {
		t.Fatalf("%d files and %d times, want 3 and 3", len(b.Files), len(b.Times))
	}
	for i, loc := range []string{"a", "b", "c"} {
		if b.Files[i].Location != loc || b.Times[i].Oldest != int64(i+1) || b.Times[i].Newest != int64(i+10) || b.Times[i].Adopted != (i == 1) {
			t.Errorf("entry %d: %s %+v", i, b.Files[i].Location, b.Times[i])
		}
	}
}
