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

// TestRewriteRacesAppends: a sink's append that wins the swap during a
// rewrite makes the rewrite try again, and a rewrite that wins during an
// append makes the append try again; both commit, the table holds every
// file's records once and the state of both.
func TestRewriteRacesAppends(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	c2 := e.open(t)
	h2, err := c2.Table(ctx, "events", nil)
	if err != nil {
		t.Fatal(err)
	}
	loc := e.warehouse + "/kafka/events"
	a := writeFile(t, h, loc, "events", 0, 0, 9, sameDay)
	b := writeFile(t, h, loc, "events", 0, 10, 19, sameDay)
	if _, err := h.Commit(ctx, "g", []File{a, b}, State{{"g", "events", 0}: {Committed: 20}}); err != nil {
		t.Fatal(err)
	}

	// The rewrite loses to an append of partition 1, and tries again.
	p1 := writeFile(t, h, loc, "events", 1, 0, 4, sameDay)
	merged := writeFile(t, h, loc+"/m", "events", 0, 0, 19, sameDay)
	once := false
	h.beforeSwap = func() {
		if !once {
			once = true
			if _, err := h2.Commit(ctx, "g", []File{p1}, State{{"g", "events", 1}: {Committed: 5}}); err != nil {
				t.Errorf("the racing append: %v", err)
			}
		}
	}
	res, err := h.Rewrite(ctx, []string{a.Location, b.Location}, []File{merged})
	h.beforeSwap = nil
	if err != nil || res.Attempts != 2 {
		t.Fatalf("rewrite: %v after %d attempts, want success after 2", err, res.Attempts)
	}

	// An append loses to a rewrite of the partition-1 file, and tries again.
	p1b := writeFile(t, h, loc, "events", 1, 5, 9, sameDay)
	p1merged := writeFile(t, h, loc+"/n", "events", 1, 0, 4, sameDay)
	once = false
	h2.beforeSwap = func() {
		if !once {
			once = true
			if _, err := h.Rewrite(ctx, []string{p1.Location}, []File{p1merged}); err != nil {
				t.Errorf("the racing rewrite: %v", err)
			}
		}
	}
	cres, err := h2.Commit(ctx, "g", []File{p1b}, State{{"g", "events", 1}: {Committed: 10}})
	h2.beforeSwap = nil
	if err != nil || cres.Attempts != 2 || cres.Appended != 1 {
		t.Fatalf("append: %+v, %v; want 1 file appended after 2 attempts", cres, err)
	}

	live, _, err := h.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var records int64
	for _, f := range live {
		records += f.Records
	}
	if len(live) != 3 || records != 30 {
		t.Errorf("the table holds %d files of %d records, want 3 of 30: %+v", len(live), records, live)
	}
	want := State{{"g", "events", 0}: {Committed: 20}, {"g", "events", 1}: {Committed: 10}}
	if got, err := h.State(ctx); err != nil || !equalState(got, want) {
		t.Errorf("state %v (%v), want %v", got, err, want)
	}
}
