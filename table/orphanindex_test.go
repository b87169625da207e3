package table

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/objstore"
)

// TestRemoveOrphanIndexes: the key index snapshots under index/ that the
// state of no snapshot kept names in a chain are orphans once old enough
// and once the state's chain of their partition has reached their
// sequence number; every object of the chains of the snapshots kept
// stays, and so do a young one (an upload not committed yet) and an old
// one beyond the chain (a commit may still name it). After an expiry, the
// chains only the expired snapshots named go. The states are in the
// snapshots' summaries or, too large for them, in state objects.
func TestRemoveOrphanIndexes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other int // partitions of other groups in the state
	}{{"inline", 0}, {"object", 60}} {
		t.Run(tc.name, func(t *testing.T) { testRemoveOrphanIndexes(t, tc.other) })
	}
}

func testRemoveOrphanIndexes(t *testing.T, other int) {
	ctx := context.Background()
	e := newEnv(t)
	c := e.open(t)
	h, err := c.Table(ctx, "events", eventSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	loc := c.Location("events")
	tableKey, ok := strings.CutPrefix(loc, e.warehouse+"/")
	if !ok {
		t.Fatalf("table location %s is not under the warehouse %s", loc, e.warehouse)
	}
	root := filepath.Join(e.dir, "warehouse")
	key := func(partition, name string) string { return tableKey + "/index/events/" + partition + "/" + name }
	put := func(k string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("pqkidx "+k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var (
		a1 = key("0", "1-0000a001.pqkidx") // full
		a2 = key("0", "2-0000a002.pqkidx") // delta on a1
		b3 = key("0", "3-0000b003.pqkidx") // full
		b4 = key("0", "4-0000b004.pqkidx") // delta on b3
		p1 = key("1", "1-0000c001.pqkidx") // partition 1's only snapshot
		// Not named by any state.
		stale = key("0", "2-0000dead.pqkidx") // an upload whose commit failed, passed since
		ahead = key("0", "5-0000abcd.pqkidx") // beyond the chain: a commit may name it yet
		young = key("0", "4-0000beef.pqkidx") // uploaded just now
		noIdx = key("9", "1-00000009.pqkidx") // a partition the state has no chain of
	)
	chains := [][]string{{a1}, {a1, a2}, {b3}, {b3, b4}}
	stateAt := func(i int) State {
		s := State{
			{"g", "events", 0}: {Committed: 10*int64(i) + 10, Index: chains[i]},
			{"g", "events", 1}: {Committed: 0, Index: []string{p1}},
		}
		for g := range other {
			s[Partition{Group: "group-" + strings.Repeat("x", 20) + string(rune('a'+g%26)) + string(rune('a'+g/26)), Topic: "other", Partition: int32(g)}] = Progress{Committed: 1}
		}
		return s
	}
	for i := range chains {
		for _, k := range chains[i] {
			put(k)
		}
		if i == 0 {
			put(p1)
		}
		f := writeFile(t, h, loc, "events", 0, 10*int64(i), 10*int64(i)+9, sameDay)
		if _, err := h.Commit(ctx, "g", []File{f}, stateAt(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{stale, ahead, noIdx} {
		put(k)
	}
	tbl, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range tbl.Metadata().Snapshots() {
		if v := snap.Summary.Properties[SummaryState]; strings.HasPrefix(v, "pqsink1@") != (other > 0) {
			t.Fatalf("snapshot %d's state %.40s...: want it in a state object %v", snap.SnapshotID, v, other > 0)
		}
	}
	age := func() {
		t.Helper()
		old := time.Now().Add(-2 * time.Hour)
		err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			return os.Chtimes(p, old, old)
		})
		if err != nil {
			t.Fatal(err)
		}
		put(young)
	}
	left := func() []string {
		t.Helper()
		var keys []string
		err := filepath.Walk(filepath.Join(root, filepath.FromSlash(tableKey), "index"), func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			keys = append(keys, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		return keys
	}
	store, err := objstore.Open(ctx, e.warehouse)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sorted := func(keys ...string) []string { return slices.Sorted(slices.Values(keys)) }

	// Every snapshot kept: of the index objects, only the stale one goes.
	age()
	res, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Orphans, []string{stale}) {
		t.Errorf("orphans with every snapshot kept: %v, want only %s", res.Orphans, stale)
	}
	if res.Pending != 2 || res.Young != 1 {
		t.Errorf("pending %d, young %d: want 2 (%s, %s) and 1 (%s)", res.Pending, res.Young, ahead, noIdx, young)
	}
	if got, want := left(), sorted(a1, a2, b3, b4, p1, ahead, young, noIdx); !slices.Equal(got, want) {
		t.Errorf("index objects left %v, want %v", got, want)
	}

	// A dry run after the expiry of the first two snapshots finds their
	// chain and deletes nothing.
	time.Sleep(5 * time.Millisecond)
	if _, err := h.ExpireSnapshots(ctx, 0, 2); err != nil {
		t.Fatal(err)
	}
	age()
	dry, err := h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var dryIndex []string
	for _, k := range dry.Orphans {
		if strings.HasPrefix(k, tableKey+"/index/") {
			dryIndex = append(dryIndex, k)
		}
	}
	if want := sorted(a1, a2); !slices.Equal(sorted(dryIndex...), want) {
		t.Errorf("index orphans after the expiry (dry run): %v, want %v", dryIndex, want)
	}
	if got, want := left(), sorted(a1, a2, b3, b4, p1, ahead, young, noIdx); !slices.Equal(got, want) {
		t.Errorf("index objects left by a dry run %v, want %v", got, want)
	}

	res, err = h.RemoveOrphans(ctx, store, OrphanOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != len(dry.Orphans) {
		t.Errorf("removed %d, the dry run found %d", res.Removed, len(dry.Orphans))
	}
	if got, want := left(), sorted(b3, b4, p1, ahead, young, noIdx); !slices.Equal(got, want) {
		t.Errorf("index objects left after the expiry %v, want the chains of the kept snapshots and the spared ones %v", got, want)
	}
	got, err := h.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equalState(got, stateAt(3)) {
		t.Errorf("state after orphan removal %v, want %v", got, stateAt(3))
	}
}

func TestIndexFileName(t *testing.T) {
	const dir = "kafka.db/events/index/"
	state := State{
		{"g", "events", 0}: {Committed: 40, Index: []string{dir + "events/0/3-0000b003.pqkidx", dir + "events/0/4-0000b004.pqkidx"}},
		{"h", "events", 1}: {Committed: 9},
	}
	for _, tc := range []struct {
		key     string
		ok      bool
		removed bool // the state's chain of its partition reached it
	}{
		{dir + "events/0/4-0000beef.pqkidx", true, true},
		{dir + "events/0/1-00000001.pqkidx", true, true},
		{dir + "events/0/5-00000005.pqkidx", true, false},
		{dir + "events/1/1-00000001.pqkidx", true, false}, // no chain
		{dir + "other/0/1-00000001.pqkidx", true, false},
		{dir + "events/0/x-00000001.pqkidx", false, false},
		{dir + "events/0/1.pqkidx", false, false},
		{dir + "events/0/1-00000001.parquet", false, false},
		{dir + "events/-1/1-00000001.pqkidx", false, false},
		{dir + "events/0/sub/1-00000001.pqkidx", false, false},
		{"kafka.db/events/data/events/0/1-00000001.pqkidx", false, false},
	} {
		topic, partition, seq, ok := indexFileName(tc.key, dir)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.key, ok, tc.ok)
			continue
		}
		if ok && indexedPast(state, topic, partition, seq) != tc.removed {
			t.Errorf("%s (%s[%d] %d): reached by the chain %v, want %v", tc.key, topic, partition, seq, !tc.removed, tc.removed)
		}
	}
}
