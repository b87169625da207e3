package table

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestCommitStateOnly: a commit whose state moves without a file (records
// rejected only) makes a snapshot that adds no file and carries the state:
// the manifest list (read with goavro) names the same manifests and files,
// iceberg-go reads the same rows, State is the new one, and later commits,
// expiry and a commit of the same state again (nothing) go on as before;
// on a table without a snapshot too, and in format version 3.
func TestCommitStateOnly(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run("v"+string(rune('0'+version)), func(t *testing.T) {
			ctx := context.Background()
			e, c, h, loc := eventsTable(t, version)
			at := func(committed int64) State {
				return State{{"g", "events", 0}: {Committed: committed, Paths: map[string]int64{}}}
			}

			// No snapshot yet: the first state comes alone.
			res, err := h.Commit(ctx, "g", nil, at(5))
			if err != nil || res.SnapshotID == 0 || res.Appended != 0 {
				t.Fatalf("a state alone on an empty table: %+v (%v), want a snapshot", res, err)
			}
			if got, err := h.State(ctx); err != nil || !equalState(got, at(5)) {
				t.Errorf("state %v (%v), want committed 5", got, err)
			}
			if ids := scanIDs(t, e, h, 0); len(ids) != 0 {
				t.Errorf("the table reads ids %v, want none", ids)
			}

			f := writeFile(t, h, loc, "events", 0, 5, 14, sameDay)
			if _, err := h.Commit(ctx, "g", []File{f}, at(15)); err != nil {
				t.Fatal(err)
			}
			manifestsBefore, filesBefore := currentManifests(t, c, h)
			snapsBefore, _ := snapshotCount(t, c, h)

			// Offsets 15 to 24 rejected: the state moves, no file.
			res, err = h.Commit(ctx, "g", nil, at(25))
			if err != nil || res.SnapshotID == 0 || res.Appended != 0 {
				t.Fatalf("a state without files: %+v (%v), want a snapshot", res, err)
			}
			if got, err := h.State(ctx); err != nil || !equalState(got, at(25)) {
				t.Errorf("state %v (%v), want committed 25", got, err)
			}
			if n, _ := snapshotCount(t, c, h); n != snapsBefore+1 {
				t.Errorf("%d snapshots, want %d", n, snapsBefore+1)
			}
			if m, files := currentManifests(t, c, h); m != manifestsBefore || !slices.Equal(files, filesBefore) {
				t.Errorf("the state's snapshot lists %d manifests of %v, want %d of %v", m, files, manifestsBefore, filesBefore)
			}
			tbl, err := c.cat.LoadTable(ctx, h.ident)
			if err != nil {
				t.Fatal(err)
			}
			if s := tbl.CurrentSnapshot(); s.Summary.Properties["added-data-files"] != "0" || s.Summary.Properties["total-records"] != "10" || s.Summary.Operation != "append" {
				t.Errorf("the state's snapshot summary %v", s.Summary)
			}
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, []int64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}) {
				t.Errorf("the table reads ids %v, want 5..14", ids)
			}

			// The same state again: nothing.
			if res, err := h.Commit(ctx, "g", nil, at(25)); err != nil || res.SnapshotID != 0 {
				t.Errorf("the same state again: %+v (%v), want no snapshot", res, err)
			}
			// A file on top, then expiry down to the newest.
			f = writeFile(t, h, loc, "events", 0, 25, 34, sameDay)
			if _, err := h.Commit(ctx, "g", []File{f}, at(35)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if exp, err := h.ExpireSnapshots(ctx, 0, 1); err != nil || exp.Kept != 1 {
				t.Errorf("expiry: %+v (%v), want 1 kept", exp, err)
			}
			want := append(upTo(35)[5:15:15], upTo(35)[25:]...)
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, want) {
				t.Errorf("the table reads ids %v, want %v", ids, want)
			}
			if got, err := h.State(ctx); err != nil || !equalState(got, at(35)) {
				t.Errorf("state %v (%v), want committed 35", got, err)
			}
		})
	}
}

// TestCommitStateOnlyRetriesOnConflict: another member's commit between
// the read and the swap of a state-only snapshot makes it try again, and
// the table ends with both members' states.
func TestCommitStateOnlyRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	f := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	if _, err := h.Commit(ctx, "g", []File{f}, State{{"g", "events", 0}: {Committed: 10}}); err != nil {
		t.Fatal(err)
	}
	raceOnce(t, e, h, 1, 0, 9)
	res, err := h.Commit(ctx, "g", nil, State{{"g", "events", 0}: {Committed: 30}})
	if err != nil || res.Attempts != 2 || res.SnapshotID == 0 {
		t.Fatalf("state-only commit: %+v (%v), want a snapshot after 2 attempts", res, err)
	}
	got, err := h.State(ctx)
	if err != nil || got[Partition{"g", "events", 0}].Committed != 30 || got[Partition{"g", "events", 1}].Committed != 10 {
		t.Errorf("state %v (%v), want partition 0 at 30 and 1 at 10", got, err)
	}
	if ids := scanIDs(t, e, h, 0); len(ids) != 20 {
		t.Errorf("the table reads %d rows, want 20", len(ids))
	}
}
