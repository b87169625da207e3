package table

import (
	"context"
	"slices"
	"testing"
	"time"
)

// currentManifests reads the current snapshot's manifest list and its
// manifests with goavro, not iceberg-go: how many manifests it lists, and
// the data files their live entries (status added or existing) name.
func currentManifests(t *testing.T, c *Catalog, h *Handle) (int, []string) {
	t.Helper()
	tbl, err := c.cat.LoadTable(context.Background(), h.ident)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		CurrentSnapshotID int64 `json:"current-snapshot-id"`
		Snapshots         []struct {
			SnapshotID   int64  `json:"snapshot-id"`
			ManifestList string `json:"manifest-list"`
		} `json:"snapshots"`
	}
	readJSON(t, tbl.MetadataLocation(), &md)
	var list string
	for _, s := range md.Snapshots {
		if s.SnapshotID == md.CurrentSnapshotID {
			list = s.ManifestList
		}
	}
	manifests := readOCF(t, list)
	var files []string
	for _, m := range manifests {
		for _, e := range readOCF(t, m["manifest_path"].(string)) {
			if e["status"].(int32) != 2 { // 2: deleted
				files = append(files, e["data_file"].(map[string]any)["file_path"].(string))
			}
		}
	}
	slices.Sort(files)
	return len(manifests), files
}

// TestRewriteManifests: after a dozen commits the current snapshot lists a
// manifest per commit; a rewrite with a threshold above that changes
// nothing, one below merges them into one manifest that lists every data
// file once (read with goavro), iceberg-go reads the same rows, the state
// in force is unchanged (in the parent of the rewrite's snapshot, which
// expiry keeps), and sinks commit on top as before.
func TestRewriteManifests(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	var n int64
	var state State
	var locations []string
	commit := func() {
		t.Helper()
		f := writeFile(t, h, loc, "events", 0, n, n+9, sameDay)
		n += 10
		state = State{{"g", "events", 0}: {Committed: n, Paths: map[string]int64{}}}
		if _, err := h.Commit(ctx, "g", []File{f}, state); err != nil {
			t.Fatal(err)
		}
		locations = append(locations, f.Location)
		slices.Sort(locations)
	}
	for range 12 {
		commit()
	}
	if m, files := currentManifests(t, c, h); m != 12 || !slices.Equal(files, locations) {
		t.Fatalf("after 12 commits: %d manifests listing %d files, want 12 listing the 12", m, len(files))
	}

	_, metaBefore := snapshotCount(t, c, h)
	res, err := h.RewriteManifests(ctx, 12)
	if err != nil {
		t.Fatal(err)
	}
	if _, meta := snapshotCount(t, c, h); res.Snapshot != 0 || res.Before != 12 || res.After != 12 || meta != metaBefore {
		t.Errorf("rewrite above 12 of 12 manifests: %+v, metadata %s (was %s); want nothing done", res, meta, metaBefore)
	}

	res, err = h.RewriteManifests(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	m, files := currentManifests(t, c, h)
	if res.Snapshot == 0 || res.Before != 12 || res.After != 1 || res.Rewritten != 12 || res.Added != 1 || m != 1 {
		t.Errorf("rewrite above 5: %+v, the snapshot lists %d manifests; want 12 merged into 1", res, m)
	}
	if !slices.Equal(files, locations) {
		t.Errorf("the merged manifest lists %v, want %v", files, locations)
	}
	if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(n)) {
		t.Errorf("after the rewrite iceberg-go reads ids %v, want 0..%d once each", ids, n-1)
	}
	if got, err := h.State(ctx); err != nil || !equalState(got, state) {
		t.Errorf("state after the rewrite = %v (%v), want %v", got, err, state)
	}

	// Expiry keeps the snapshot that carries the state, below the
	// rewrite's; a sink's commits go on on top; a file already committed
	// is still dropped.
	time.Sleep(5 * time.Millisecond)
	exp, err := h.ExpireSnapshots(ctx, 0, 1)
	if err != nil || exp.Kept != 2 {
		t.Errorf("expiry after the rewrite: %+v (%v), want 2 kept (the rewrite's and the state's)", exp, err)
	}
	again := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	if r, err := h.Commit(ctx, "g", []File{again}, state); err != nil || r.Dropped != 1 || r.Appended != 0 {
		t.Errorf("committing offsets 0-9 again: %+v (%v), want the file dropped", r, err)
	}
	commit()
	if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(n)) {
		t.Errorf("after a commit on top iceberg-go reads ids %v, want 0..%d once each", ids, n-1)
	}
	if m, files := currentManifests(t, c, h); m != 2 || !slices.Equal(files, locations) {
		t.Errorf("after a commit on top: %d manifests listing %d files, want 2 listing the %d", m, len(files), len(locations))
	}
}

// TestRewriteManifestsRetriesOnConflict: a sink's append between the
// rewrite's read and its swap makes the rewrite try again, and both land.
func TestRewriteManifestsRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	commitEach(t, h, loc, 4, sameDay)
	raceOnce(t, e, h, 0, 40, 49)
	res, err := h.RewriteManifests(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Before != 5 || res.After != 1 {
		t.Errorf("rewrite %+v, want 5 manifests merged into 1 after 2 attempts", res)
	}
	if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(50)) {
		t.Errorf("iceberg-go reads ids %v, want 0..49 once each", ids)
	}
	if got, err := h.State(ctx); err != nil || got[Partition{"g", "events", 0}].Committed != 50 {
		t.Errorf("state after the raced rewrite = %v (%v), want committed 50", got, err)
	}
}
