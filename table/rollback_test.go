package table

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
)

// TestCommitRolledBack: a committer that saw the table hold records of
// its partitions which a rollback (another engine's rollback_to_snapshot)
// took out of it gets a *RolledBackError naming what the table holds now,
// and the table is left as the rollback made it; without the rollback,
// or for partitions it did not see, the same commits go through.
func TestCommitRolledBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, config.PartitionField{Transform: "day", Column: "_kafka.timestamp"})
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	p0, p1 := Partition{"g", "events", 0}, Partition{"g", "events", 1}
	first := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	res, err := h.Commit(ctx, "g", []File{first}, State{p0: {Committed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	back := res.SnapshotID
	second := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
	other := writeFile(t, h, loc, "events", 1, 0, 4, func(int64) int { return 1 })
	seen := State{p0: {Committed: 20, Paths: map[string]int64{}}}
	if _, err := h.Commit(ctx, "g", []File{second, other}, State{p0: {Committed: 20}, p1: {Committed: 5}}, Seen(State{p0: {Committed: 10}})); err != nil {
		t.Fatal(err)
	}

	// Another engine rolls the table back to the first snapshot.
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(back); err != nil {
		t.Fatal(err)
	}
	rolled, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}

	third := writeFile(t, h, loc, "events", 0, 20, 29, sameDay)
	_, err = h.Commit(ctx, "g", []File{third}, State{p0: {Committed: 30}}, Seen(seen))
	var rb *RolledBackError
	if !errors.As(err, &rb) {
		t.Fatalf("commit after the rollback: err = %v, want a *RolledBackError", err)
	}
	if want := (State{p0: {Committed: 10, Paths: map[string]int64{}}}); !equalState(rb.Held, want) {
		t.Errorf("held = %v, want %v", rb.Held, want)
	}
	if !strings.Contains(err.Error(), "events[0] of group g from offset 10") {
		t.Errorf("error %q does not say where the partition starts again", err)
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tbl.CurrentSnapshot().SnapshotID; got != rolled.CurrentSnapshot().SnapshotID {
		t.Errorf("the refused commit moved the table to snapshot %d", got)
	}

	// Partition 1, which the rollback also took, has no state in the
	// table now: not compared (as when a table's state is gone
	// altogether), so the committer's file and state go in. And the
	// records of partition 0 read again from offset 10 go in.
	for _, tc := range []struct {
		name  string
		files []File
		state State
		seen  State
	}{
		{"no state", []File{other}, State{p1: {Committed: 5}}, State{p1: {Committed: 5}}},
		{"read again", []File{second, third}, State{p0: {Committed: 30}}, State{p0: {Committed: 10}}},
	} {
		if _, err := h.Commit(ctx, "g", tc.files, tc.state, Seen(tc.seen)); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	got, err := h.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{p0: {Committed: 30}, p1: {Committed: 5}}); !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	checkManifests(t, tbl.MetadataLocation(), []File{first, other, second, third})
}
