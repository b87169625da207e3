package table

import (
	"context"
	"strings"
	"testing"
)

// TestSmallFiles counts a table's small data files by folder from its
// manifests: every file under the size, none under a size smaller than
// all, and nothing read for a snapshot counted before.
func TestSmallFiles(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h.SmallFiles(ctx, 1<<30, 0); err != nil || res.Snapshot != 0 || len(res.ByFolder) != 0 {
		t.Fatalf("a table without a snapshot: %+v (%v), want nothing", res, err)
	}
	loc := c.Location("events")
	folders := map[string]int{}
	var smallest int64 = 1 << 62
	for i := range 5 {
		partition := int32(i % 2)
		f := writeFile(t, h, loc, "events", partition, int64(i*10), int64(i*10+9), sameDay)
		state := State{{"g", "events", partition}: {Committed: int64(i*10 + 10)}}
		if _, err := h.Commit(ctx, "g", []File{f}, state); err != nil {
			t.Fatal(err)
		}
		folders[f.Location[:strings.LastIndexByte(f.Location, '/')]]++
		smallest = min(smallest, f.Size)
	}
	res, err := h.SmallFiles(ctx, 1<<30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot == 0 || res.Manifests != 5 || len(res.ByFolder) != len(folders) {
		t.Fatalf("after 5 commits: %+v, want 5 manifests and the folders %v", res, folders)
	}
	for dir, n := range folders {
		if res.ByFolder[dir] != n {
			t.Errorf("folder %s: %d small files, want %d", dir, res.ByFolder[dir], n)
		}
	}
	if none, err := h.SmallFiles(ctx, smallest, 0); err != nil || len(none.ByFolder) != 0 || none.ByFolder == nil {
		t.Errorf("under %d bytes, the smallest file's size: %+v (%v), want an empty count", smallest, none, err)
	}
	if seen, err := h.SmallFiles(ctx, 1<<30, res.Snapshot); err != nil || seen.Snapshot != res.Snapshot || seen.ByFolder != nil || seen.Manifests != 0 {
		t.Errorf("the snapshot counted before: %+v (%v), want its id and nothing read", seen, err)
	}
}
