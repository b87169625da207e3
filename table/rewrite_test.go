package table

import (
	"context"
	"errors"
	"testing"
)

// TestRewrite replaces two committed files by a third holding their rows:
// the replace snapshot keeps the exactly-once state, the table lists the
// new file only, and a second rewrite of the files already replaced gives
// up with ErrRewriteConflict, committing nothing.
func TestRewrite(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := e.warehouse + "/kafka/events"
	a := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	b := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
	state := State{{"g", "events", 0}: {Committed: 20}}
	if _, err := h.Commit(ctx, "g", []File{a, b}, state); err != nil {
		t.Fatal(err)
	}
	merged := writeFile(t, h, loc+"/m", "events", 0, 0, 19, sameDay)
	res, err := h.Rewrite(ctx, []string{a.Location, b.Location}, []File{merged})
	if err != nil {
		t.Fatal(err)
	}
	live, snap, err := h.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap != res.SnapshotID || len(live) != 1 || live[0].Location != merged.Location || live[0].Records != 20 {
		t.Errorf("after the rewrite: snapshot %d (rewrite's %d), live %+v", snap, res.SnapshotID, live)
	}
	got, err := h.State(ctx)
	if err != nil || !equalState(got, state) {
		t.Errorf("state after the rewrite = %v (%v), want %v", got, err, state)
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	if op := tbl.CurrentSnapshot().Summary.Operation; op != "replace" {
		t.Errorf("the rewrite's snapshot is a %s, want replace", op)
	}
	again := writeFile(t, h, loc+"/n", "events", 0, 0, 19, sameDay)
	if _, err := h.Rewrite(ctx, []string{a.Location}, []File{again}); !errors.Is(err, ErrRewriteConflict) {
		t.Errorf("rewriting a file no longer live: %v, want ErrRewriteConflict", err)
	}
	if _, snap2, _ := h.Live(ctx); snap2 != snap {
		t.Errorf("a refused rewrite made snapshot %d", snap2)
	}
}
