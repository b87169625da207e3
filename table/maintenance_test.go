package table

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/objstore"
)

// scanIDs reads the ids of the table's rows with iceberg-go, in a
// catalog connection of its own, at snapshot (the current one when 0).
func scanIDs(t *testing.T, e *env, h *Handle, snapshot int64) []int64 {
	t.Helper()
	ctx := context.Background()
	c := e.open(t)
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	var opts []itable.ScanOption
	if snapshot != 0 {
		opts = append(opts, itable.WithSnapshotID(snapshot))
	}
	at, err := tbl.Scan(opts...).ToArrowTable(ctx)
	if err != nil {
		t.Fatalf("scanning snapshot %d: %v", snapshot, err)
	}
	defer at.Release()
	var ids []int64
	for i := 0; i < int(at.NumCols()); i++ {
		if at.Column(i).Name() != "id" {
			continue
		}
		for _, ch := range at.Column(i).Data().Chunks() {
			ids = append(ids, ch.(*array.Int64).Int64Values()...)
		}
	}
	slices.Sort(ids)
	return ids
}

// upTo is 0..n-1.
func upTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// otherEngineAppend appends f in a snapshot without pqsink's state, as
// another engine's append would.
func otherEngineAppend(t *testing.T, c *Catalog, h *Handle, f File) {
	t.Helper()
	ctx := context.Background()
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	df, err := dataFile(tbl, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, []iceberg.DataFile{df}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func snapshotCount(t *testing.T, c *Catalog, h *Handle) (int, string) {
	t.Helper()
	tbl, err := c.cat.LoadTable(context.Background(), h.ident)
	if err != nil {
		t.Fatal(err)
	}
	return len(tbl.Metadata().Snapshots()), tbl.MetadataLocation()
}

// TestExpireSnapshots: expiry keeps the newest N, and the snapshot carrying
// the state in force even when it lies deeper; the table reads the same
// rows, each once, and the state is unchanged.
func TestExpireSnapshots(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// commits are pqsink's commits of 10 records each; others the
		// appends of another engine on top, without state.
		commits, others int
		olderThan       time.Duration
		keep            int
		wantKept        int
	}{
		{name: "keep 3 of 6", commits: 6, keep: 3, wantKept: 3},
		{name: "keep more than there are", commits: 4, keep: 10, wantKept: 4},
		{name: "none old enough", commits: 5, olderThan: time.Hour, keep: 1, wantKept: 5},
		{name: "state below the kept", commits: 4, others: 3, keep: 2, wantKept: 4},
		{name: "state kept as the newest", commits: 5, others: 0, keep: 1, wantKept: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.open(t)
			h, err := c.Table(ctx, "events", eventSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			loc := c.Location("events")
			var n int64
			var state State
			for range tc.commits {
				f := writeFile(t, h, loc, "events", 0, n, n+9, sameDay)
				n += 10
				state = State{{"g", "events", 0}: {Committed: n, Paths: map[string]int64{}}}
				if _, err := h.Commit(ctx, "g", []File{f}, state); err != nil {
					t.Fatal(err)
				}
			}
			for range tc.others {
				otherEngineAppend(t, c, h, writeFile(t, h, loc, "events", 0, n, n+9, sameDay))
				n += 10
			}
			before, metaBefore := snapshotCount(t, c, h)
			time.Sleep(5 * time.Millisecond) // every snapshot older than 0
			res, err := h.ExpireSnapshots(ctx, tc.olderThan, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			after, metaAfter := snapshotCount(t, c, h)
			if after != tc.wantKept || res.Kept != tc.wantKept || res.Expired != before-tc.wantKept {
				t.Errorf("expiry %+v: %d snapshots of %d left, want %d", res, after, before, tc.wantKept)
			}
			if res.Expired == 0 && metaAfter != metaBefore {
				t.Errorf("an expiry of nothing committed new metadata %s", metaAfter)
			}
			got, err := h.State(ctx)
			if err != nil || !equalState(got, state) {
				t.Errorf("state after expiry = %v (%v), want %v", got, err, state)
			}
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(n)) {
				t.Errorf("after expiry iceberg-go reads ids %v, want 0..%d once each", ids, n-1)
			}
		})
	}
}

// TestExpireSnapshotsAtMost: with a bound on the count, expiry keeps the
// newest snapshots up to the bound although none is old enough; never
// fewer than keep, nor than reach the snapshot with the state in force;
// without a bound, or under it, it expires nothing.
func TestExpireSnapshotsAtMost(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name            string
		commits, others int // as in TestExpireSnapshots
		keep, most      int
		wantKept        int
	}{
		{name: "over the bound", commits: 8, keep: 2, most: 5, wantKept: 5},
		{name: "no bound", commits: 8, keep: 2, most: 0, wantKept: 8},
		{name: "under the bound", commits: 4, keep: 2, most: 5, wantKept: 4},
		{name: "at the bound", commits: 5, keep: 1, most: 5, wantKept: 5},
		{name: "bound below keep", commits: 6, keep: 3, most: 1, wantKept: 3},
		{name: "state below the bound", commits: 4, others: 4, keep: 1, most: 2, wantKept: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.open(t)
			h, err := c.Table(ctx, "events", eventSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			loc := c.Location("events")
			var n int64
			var state State
			for range tc.commits {
				f := writeFile(t, h, loc, "events", 0, n, n+9, sameDay)
				n += 10
				state = State{{"g", "events", 0}: {Committed: n, Paths: map[string]int64{}}}
				if _, err := h.Commit(ctx, "g", []File{f}, state); err != nil {
					t.Fatal(err)
				}
			}
			for range tc.others {
				otherEngineAppend(t, c, h, writeFile(t, h, loc, "events", 0, n, n+9, sameDay))
				n += 10
			}
			before, metaBefore := snapshotCount(t, c, h)
			time.Sleep(5 * time.Millisecond) // every snapshot older than 0
			// None is an hour old: only the bound expires any.
			res, err := h.ExpireSnapshotsAtMost(ctx, time.Hour, tc.keep, tc.most)
			if err != nil {
				t.Fatal(err)
			}
			after, metaAfter := snapshotCount(t, c, h)
			if after != tc.wantKept || res.Kept != tc.wantKept || res.Expired != before-tc.wantKept {
				t.Errorf("expiry %+v: %d snapshots of %d left, want %d", res, after, before, tc.wantKept)
			}
			if res.Expired == 0 && metaAfter != metaBefore {
				t.Errorf("an expiry of nothing committed new metadata %s", metaAfter)
			}
			got, err := h.State(ctx)
			if err != nil || !equalState(got, state) {
				t.Errorf("state after expiry = %v (%v), want %v", got, err, state)
			}
			if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(n)) {
				t.Errorf("after expiry iceberg-go reads ids %v, want 0..%d once each", ids, n-1)
			}
		})
	}
}

// raceOnce makes a second member of e commit, the first time h is about
// to swap its metadata, a file of records first..last of partition with
// the state at last+1: h's swap then loses the compare-and-swap.
func raceOnce(t *testing.T, e *env, h *Handle, partition int32, first, last int64) {
	t.Helper()
	ctx := context.Background()
	c2 := e.open(t)
	h2, err := c2.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	racer := writeFile(t, h2, c2.Location("events"), "events", partition, first, last, sameDay)
	raced := false
	h.beforeSwap = func() {
		if raced {
			return
		}
		raced = true
		if _, err := h2.Commit(ctx, "g", []File{racer}, State{{"g", "events", partition}: {Committed: last + 1}}); err != nil {
			t.Error(err)
		}
	}
}

// TestExpireRetriesOnConflict: a sink's append between the expiry's read
// and its swap makes the expiry try again, and both land.
func TestExpireRetriesOnConflict(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	commitEach(t, h, loc, 3, sameDay)
	// A second member's handle appends while the first expires: the
	// first's swap asserts the main branch it read and loses.
	raceOnce(t, e, h, 0, 30, 39)
	time.Sleep(5 * time.Millisecond)
	res, err := h.ExpireSnapshots(ctx, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != 1 || res.Attempts != 2 {
		t.Errorf("expiry %+v, want 1 kept after 2 attempts", res)
	}
	if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(40)) {
		t.Errorf("iceberg-go reads ids %v, want 0..39 once each", ids)
	}
}

// listKeys lists every key of the store with its modification time.
func listKeys(t *testing.T, s objstore.Store) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for info, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = info.Modified
	}
	return out
}

// TestRemoveOrphans: after a rewrite and an expiry, with an upload never
// committed, orphan removal deletes the old unreferenced files (the
// replaced data files, the expired snapshots' manifest lists and
// manifests, the old upload) and nothing referenced, younger, or pqsink's
// own: every remaining snapshot reads back exactly.
func TestRemoveOrphans(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	small := commitEach(t, h, loc, 4, sameDay)
	merged := writeFile(t, h, loc+"/m", "events", 0, 0, 39, sameDay)
	var remove []string
	for _, f := range small {
		remove = append(remove, f.Location)
	}
	if _, err := h.Rewrite(ctx, remove, []File{merged}); err != nil {
		t.Fatal(err)
	}
	// One more append after the rewrite, then expire all but the last two.
	last := writeFile(t, h, loc, "events", 0, 40, 49, sameDay)
	if _, err := h.Commit(ctx, "g", []File{last}, State{{"g", "events", 0}: {Committed: 50}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := h.ExpireSnapshots(ctx, 0, 2); err != nil {
		t.Fatal(err)
	}
	// An upload no commit took and none will (a member that died, whose
	// successor cut the files otherwise), whose records the table holds
	// through other files; one a sink is about to commit (young); and one
	// a commit may still append, however old (its records are past the
	// state: a commit failing for a while).
	lost := writeFile(t, h, loc, "events", 0, 5, 14, sameDay)
	pending := writeFile(t, h, loc, "events", 0, 50, 59, sameDay)
	stuck := writeFile(t, h, loc, "events", 1, 0, 9, sameDay)
	// The output of a compaction that died before its commit.
	gaveUp := writeFile(t, h, loc+"/c", "events", 0, 0, 49, sameDay)
	gaveUpPath := filepath.Join(strings.TrimPrefix(loc, "file://"), "data", "compacted-7-abc-000-0.parquet")
	if err := os.Rename(strings.TrimPrefix(gaveUp.Location, "file://"), gaveUpPath); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(e.dir, "warehouse")
	hint := filepath.Join(root, "kafka", "events", "metadata", "version-hint.text")
	own := filepath.Join(root, "kafka", "events", "data", "_pqsink", "note.json")
	for _, p := range []string{hint, own} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Everything is two hours old but the pending upload.
	old := time.Now().Add(-2 * time.Hour)
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || "file://"+p == pending.Location {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}

	store, err := objstore.Open(ctx, e.warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	key := func(loc string) string { return strings.TrimPrefix(loc, e.warehouse+"/") }
	before := listKeys(t, store)

	dry, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Removed != 0 || len(listKeys(t, store)) != len(before) {
		t.Errorf("a dry run removed something: %+v", dry)
	}
	res, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != len(dry.Orphans) || !slices.Equal(res.Orphans, dry.Orphans) || res.Young != 1 || res.Pending != 1 {
		t.Errorf("removal %+v, dry run %+v", res, dry)
	}
	after := listKeys(t, store)
	gone := map[string]bool{}
	for k := range before {
		if _, ok := after[k]; !ok {
			gone[k] = true
		}
	}
	for _, k := range res.Orphans {
		if !gone[k] {
			t.Errorf("orphan %s reported removed is still there", k)
		}
	}
	if len(gone) != res.Removed {
		t.Errorf("%d objects gone, %d reported", len(gone), res.Removed)
	}
	// Gone: the lost upload and the replaced small files (the snapshots
	// that listed them as live are expired); some manifests and lists.
	wantGone := []string{key(lost.Location), key("file://" + gaveUpPath)}
	for _, f := range small {
		wantGone = append(wantGone, key(f.Location))
	}
	for _, k := range wantGone {
		if !gone[k] {
			t.Errorf("%s should be removed", k)
		}
	}
	var manifests int
	for k := range gone {
		if strings.Contains(k, "/metadata/") {
			manifests++
		}
	}
	if manifests == 0 {
		t.Errorf("no manifest or manifest list of the expired snapshots removed: %v", gone)
	}
	// Kept: the young upload, the one past the state, pqsink's own and the
	// hint, the live files.
	for _, k := range []string{key(pending.Location), key(stuck.Location), key(merged.Location), key(last.Location), key("file://" + hint), key("file://" + own)} {
		if gone[k] {
			t.Errorf("%s was removed", k)
		}
	}
	// Every snapshot left reads back, and the current one exactly.
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		scanIDs(t, e, h, s.SnapshotID)
	}
	if ids := scanIDs(t, e, h, 0); !slices.Equal(ids, upTo(50)) {
		t.Errorf("after orphan removal iceberg-go reads ids %v, want 0..49 once each", ids)
	}
	if got, err := h.State(ctx); err != nil || !equalState(got, State{{"g", "events", 0}: {Committed: 50}}) {
		t.Errorf("state after orphan removal = %v (%v)", got, err)
	}
	// Again: nothing left to remove.
	again, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
	if err != nil || again.Removed != 0 {
		t.Errorf("a second removal: %+v, %v", again, err)
	}
}

func TestSinkFileName(t *testing.T) {
	for _, tc := range []struct {
		key       string
		topic     string
		partition int32
		first     int64
		ok        bool
	}{
		{"kafka/events/data/d=1/events+3+00000000000000000042.parquet", "events", 3, 42, true},
		{"kafka/events/data/orders.v1+0+00000000000000000000.parquet", "orders.v1", 0, 0, true},
		{"kafka/events/data/d=1/compacted-17-a1b2c3-000-0.parquet", "", 0, 0, false},
		{"kafka/events/metadata/events+3+00000000000000000042.parquet", "", 0, 0, false},
		{"kafka/events/data/events+x+1.parquet", "", 0, 0, false},
		{"kafka/events/data/events+1+-1.parquet", "", 0, 0, false},
		{"kafka/events/data/+1+1.parquet", "", 0, 0, false},
		{"kafka/events/data/events+1+1.avro", "", 0, 0, false},
	} {
		topic, partition, first, ok := sinkFileName(tc.key)
		if ok != tc.ok || topic != tc.topic || partition != tc.partition || first != tc.first {
			t.Errorf("sinkFileName(%q) = %q, %d, %d, %v", tc.key, topic, partition, first, ok)
		}
	}
}

// TestRemoveOrphanStates: state objects (states too large for the summary)
// that no snapshot names any more are orphans too, once old enough; those
// of the snapshots kept, and a young one (a commit's in flight), stay, and
// the state reads back.
func TestRemoveOrphanStates(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	// Many groups' partitions make a state of more than maxInlineState
	// bytes: every commit writes a state object of its own.
	big := func(committed int64) State {
		s := State{}
		for g := range 60 {
			s[Partition{Group: "group-" + strings.Repeat("x", 20) + string(rune('a'+g%26)) + string(rune('a'+g/26)), Topic: "other", Partition: int32(g)}] = Progress{Committed: committed}
		}
		s[Partition{"g", "events", 0}] = Progress{Committed: committed}
		return s
	}
	for i := range int64(5) {
		f := writeFile(t, h, loc, "events", 0, 10*i, 10*i+9, sameDay)
		if _, err := h.Commit(ctx, "g", []File{f}, big(10*i+10)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := h.ExpireSnapshots(ctx, 0, 2); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		if v, ok := strings.CutPrefix(s.Summary.Properties[SummaryState], "pqsink1@"); ok {
			kept[strings.TrimPrefix(v, e.warehouse+"/")] = true
		}
	}
	if len(kept) != 2 {
		t.Fatalf("the two snapshots kept name %d state objects, want 2 (is the state inline?)", len(kept))
	}
	root := filepath.Join(e.dir, "warehouse")
	old := time.Now().Add(-2 * time.Hour)
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A commit in flight has written its state object, not yet named.
	stateDir := filepath.Join(root, "_pqsink", "state", "tables", "kafka", "events")
	inFlight := filepath.Join(stateDir, "in-flight.json")
	if err := os.WriteFile(inFlight, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(stateDir, "*"))
	if len(before) != 6 {
		t.Fatalf("%d state objects before the removal, want 5 and the one in flight: %v", len(before), before)
	}

	store, err := objstore.Open(ctx, e.warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	res, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var states int
	for _, k := range res.Orphans {
		if strings.HasPrefix(k, "_pqsink/state/") {
			states++
			if kept[k] {
				t.Errorf("the state object %s of a kept snapshot was removed", k)
			}
		}
	}
	if states != 3 {
		t.Errorf("%d state objects removed, want the 3 of the expired snapshots (orphans %v)", states, res.Orphans)
	}
	left, _ := filepath.Glob(filepath.Join(stateDir, "*"))
	if len(left) != 3 || !slices.Contains(left, inFlight) {
		t.Errorf("state objects left %v, want the 2 named and the one in flight", left)
	}
	if got, err := h.State(ctx); err != nil || !equalState(got, big(50)) {
		t.Errorf("state after orphan removal: %v", err)
	}
}
