package maintenance

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

func leaseStore(t *testing.T) objstore.Store {
	t.Helper()
	s, err := objstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func leaseKeys(t *testing.T, s objstore.Store) []string {
	t.Helper()
	var keys []string
	for info, err := range s.List(context.Background(), leasePrefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	return keys
}

// TestLease: one holder at a time; the holder renews, a lease runs out
// and is taken over, a lease given up is taken over at once, and the run
// time it carries goes to the next holder.
func TestLease(t *testing.T) {
	ctx := context.Background()
	s := leaseStore(t)
	a := &lease{store: s, prefix: leasePrefix + "kafka.events/", holder: "a"}
	b := &lease{store: s, prefix: leasePrefix + "kafka.events/", holder: "b"}
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	steps := []struct {
		what    string
		l       *lease
		at      time.Duration
		want    bool
		epoch   int64
		release bool
	}{
		{what: "a takes the new lease", l: a, at: 0, want: true, epoch: 1},
		{what: "b finds it held", l: b, at: time.Second, want: false, epoch: 1},
		{what: "a holds it, no renewal yet", l: a, at: 10 * time.Second, want: true, epoch: 1},
		{what: "a renews it", l: a, at: 30 * time.Second, want: true, epoch: 2},
		{what: "b still finds it held", l: b, at: 80 * time.Second, want: false, epoch: 2},
		{what: "a's renewal runs out: b takes over", l: b, at: 91 * time.Second, want: true, epoch: 3},
		{what: "a has lost it", l: a, at: 92 * time.Second, want: false, epoch: 3},
		{what: "b gives it up", l: b, at: 93 * time.Second, release: true},
		{what: "a takes it at once", l: a, at: 94 * time.Second, want: true, epoch: 5},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		if st.release {
			st.l.doc.Last = t0.Add(-time.Hour)
			if err := st.l.release(ctx, now); err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			continue
		}
		got, err := st.l.acquire(ctx, now)
		if err != nil || got != st.want || st.l.epoch != st.epoch {
			t.Fatalf("%s: held %v (%v), epoch %d; want %v, epoch %d", st.what, got, err, st.l.epoch, st.want, st.epoch)
		}
	}
	if !a.doc.Last.Equal(t0.Add(-time.Hour)) {
		t.Errorf("the run time given up with the lease is %v, want it carried to the next holder", a.doc.Last)
	}
	if keys := leaseKeys(t, s); len(keys) > 3 {
		t.Errorf("lease objects left: %v, want the old epochs deleted", keys)
	}
}

// TestLeaseRace: members that all find the lease expired at once try to
// take it over; exactly one holds it, round after round.
func TestLeaseRace(t *testing.T) {
	ctx := context.Background()
	s := leaseStore(t)
	t0 := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	const members = 8
	ls := make([]*lease, members)
	for i := range ls {
		ls[i] = &lease{store: s, prefix: leasePrefix + "kafka.events/", holder: fmt.Sprint("m", i)}
	}
	for round := range 5 {
		// Each round starts after the last holder's lease ran out.
		now := t0.Add(time.Duration(round) * 2 * leaseTTL)
		var wg sync.WaitGroup
		held := make([]bool, members)
		for i, l := range ls {
			wg.Go(func() {
				var err error
				if held[i], err = l.acquire(ctx, now); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		n := 0
		for _, h := range held {
			if h {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d members hold the lease, want 1", round, n)
		}
	}
}

// TestMaintenanceMetrics: the Scheduler's collector passes a pedantic
// registry and exports every task's series at 0 from the start.
func TestMaintenanceMetrics(t *testing.T) {
	m := New(Options{})
	m.runs[0].Add(2)
	m.orphansRemoved.Add(3)
	m.withDeletes.Store("kafka.orders", int64(4))
	got := gatherMaintenance(t, m)
	want := map[string]float64{
		"pqsink_table_maintenance_runs_total{task=compact}":                     2,
		"pqsink_table_maintenance_runs_total{task=orphans}":                     0,
		"pqsink_table_maintenance_errors_total{task=expire}":                    0,
		"pqsink_table_maintenance_orphans_removed_total":                        3,
		"pqsink_table_maintenance_leases_held":                                  0,
		"pqsink_table_maintenance_files_with_deletes{table=kafka.orders}":       4,
		"pqsink_table_maintenance_last_success_timestamp_seconds{task=compact}": 0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (exported %v), want %v", k, g, ok, v)
		}
	}
}

// compactionTable is an Iceberg table in a SQL catalog on SQLite that
// files are committed to as the sink commits them, and a connection of
// iceberg-go's own to the same catalog: another engine, which deletes
// rows.
type compactionTable struct {
	h     *table.Handle
	loc   string // the table's location
	url   string // the store's URL (the warehouse)
	store objstore.Store
	other catalog.Catalog
}

// newCompactionTable makes the table kafka.events: an id and the Kafka
// envelope.
func newCompactionTable(t *testing.T) *compactionTable {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	wh := "file://" + filepath.Join(dir, "warehouse")
	dbPath := filepath.Join(dir, "catalog.db")
	cfg := &config.Config{
		Store: config.Store{URL: wh},
		Table: &config.Table{
			Format:         "iceberg",
			Catalog:        config.Catalog{Type: "sql", URI: config.Secret("sqlite://" + dbPath), Name: "pqsink"},
			Namespace:      "kafka",
			Name:           "{topic}",
			CommitInterval: 30 * time.Second,
			FormatVersion:  2,
		},
	}
	c, err := table.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := schema.New("event",
		schema.Leaf("id", schema.Required, meta.TypeInt64, schema.Logical{}),
		rowgroup.EnvelopeNodeIn(schema.Micros))
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.Table(ctx, "events", s)
	if err != nil {
		t.Fatal(err)
	}
	e := &compactionTable{h: h, loc: c.Location("events"), url: wh}
	if e.store, err = objstore.Open(ctx, wh); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if e.other, err = sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": wh}); err != nil {
		t.Fatal(err)
	}
	return e
}

// commit writes the records of ids (offsets of partition 0) first..last
// into a file named and with a footer as the sink's, and commits it.
func (e *compactionTable) commit(t *testing.T, first, last int64) {
	t.Helper()
	ctx := context.Background()
	s := e.h.Schema()
	g, b := rowgrouptest.JSON(t, s)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for o := first; o <= last; o++ {
		env := &rowgroup.Envelope{Topic: "events", Partition: 0, Offset: o, Timestamp: t0.Add(time.Duration(o) * time.Second)}
		if err := b.Append(fmt.Appendf(nil, `{"id":%d}`, o), env); err != nil {
			t.Fatal(err)
		}
	}
	loc := fmt.Sprintf("%s/data/events+0+%020d.parquet", e.loc, first)
	p := strings.TrimPrefix(loc, "file://")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w, err := writer.New(out, s)
	if err != nil {
		t.Fatal(err)
	}
	archive.Range{Topic: "events", Partition: 0, First: first, Last: last, Records: last - first + 1}.Footer(w.SetKeyValue)
	if err := w.WriteRowGroup(g); err != nil {
		t.Fatal(err)
	}
	md, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	f := table.File{Location: loc, Size: w.Offset(), Footer: md, PathID: "p"}
	if _, err := e.h.Commit(ctx, "g", []table.File{f}, table.State{{Group: "g", Topic: "events", Partition: 0}: {Committed: last + 1}}); err != nil {
		t.Fatal(err)
	}
}

// delete deletes the row of id as another engine's DELETE FROM would,
// in the write.delete.mode mode.
func (e *compactionTable) delete(t *testing.T, mode string, id int64) {
	t.Helper()
	ctx := context.Background()
	tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: mode}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		t.Fatalf("deleting id %d (%s): %v", id, mode, err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("committing the delete of id %d (%s): %v", id, mode, err)
	}
}

// countingMemory is a Memory that counts what is held, and what was held
// at most.
type countingMemory struct {
	mu         sync.Mutex
	held, peak int64
}

func (m *countingMemory) Reserve(_ context.Context, n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held += n
	m.peak = max(m.peak, m.held)
	return nil
}

func (m *countingMemory) Release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.held -= n
}

// TestMaintenanceCompactionMetrics: a maintenance compaction of a table
// in which another engine deleted a row merge-on-read (a position delete
// file) and another copy-on-write (a data file rewritten without it)
// counts the deleted row it applied, the delete file it removed and the
// rewritten file it took back; a second run, with nothing left to do,
// counts nothing more. The compaction's memory comes from the budget
// given, an eighth of the memory limit, and goes back to it.
func TestMaintenanceCompactionMetrics(t *testing.T) {
	ctx := context.Background()
	e := newCompactionTable(t)
	for first := int64(0); first < 30; first += 3 {
		e.commit(t, first, first+2) // 10 files of 3 records
	}
	e.delete(t, itable.WriteModeMergeOnRead, 4)  // a position delete file on the file of 3..5
	e.delete(t, itable.WriteModeCopyOnWrite, 10) // the file of 9..11 rewritten without it

	live, _, err := e.h.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, f := range live {
		if !strings.Contains(path.Base(f.Location), "+") {
			rewritten++
		}
	}
	if len(live) != 10 || rewritten != 1 {
		t.Fatalf("after the deletes the table has %d data files, %d rewritten by the other engine; want 10 and 1", len(live), rewritten)
	}

	mem := &countingMemory{}
	m := New(Options{
		Settings:    config.Maintenance{CompactEvery: time.Nanosecond, TargetFileSize: 1 << 20, RemoveOrphansOlderThan: time.Hour},
		Store:       e.store,
		StoreURL:    e.url,
		Tables:      func() []*table.Handle { return []*table.Handle{e.h} },
		Memory:      mem,
		MemoryLimit: 1 << 30, // merge wants 64 MiB at least
	})
	want := map[string]float64{
		"pqsink_table_maintenance_deleted_rows_total":                     1,
		"pqsink_table_maintenance_delete_files_removed_total":             1,
		"pqsink_table_maintenance_rewritten_files_taken_back_total":       1,
		"pqsink_table_maintenance_files_rewritten_total":                  10,
		"pqsink_table_maintenance_files_written_total":                    1,
		"pqsink_table_maintenance_files_with_deletes{table=kafka.events}": 0,
	}
	for run := range 2 {
		if err := m.compact(ctx, e.h); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got := gatherMaintenance(t, m)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("after run %d: %s = %v (exported %v), want %v", run, k, g, ok, v)
			}
		}
	}
	if mem.peak != 128<<20 || mem.held != 0 {
		t.Errorf("the compactions held at most %d bytes of the budget and %d at the end; want %d and 0", mem.peak, mem.held, 128<<20)
	}
}

// gatherMaintenance is m's samples, by name and labels.
func gatherMaintenance(t *testing.T, m *Scheduler) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(m); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for _, l := range s.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			got[name] = s.GetCounter().GetValue() + s.GetGauge().GetValue()
		}
	}
	return got
}

// TestRound: a round takes the lease of each table listed (a table
// listed twice, as two topics' views of it, once), runs its four tasks
// and records the run in the lease; the next round finds it not due
// yet. Another member finds the lease held until the first gives it up,
// and then takes it at once, with the run time it carries.
func TestRound(t *testing.T) {
	ctx := context.Background()
	e := newCompactionTable(t)
	for first := int64(0); first < 6; first += 3 {
		e.commit(t, first, first+2)
	}
	opts := Options{
		Settings: config.Maintenance{CompactEvery: time.Hour, TargetFileSize: 1 << 20, RewriteManifestsAbove: 100,
			ExpireSnapshotsOlderThan: 7 * 24 * time.Hour, KeepSnapshots: 100, RemoveOrphansOlderThan: time.Hour},
		Store:       e.store,
		StoreURL:    e.url,
		Tables:      func() []*table.Handle { return []*table.Handle{e.h, e.h} },
		MemoryLimit: 1 << 30,
	}
	a, b := New(opts), New(opts)
	if a.holder == b.holder {
		t.Fatalf("two schedulers hold leases as %q both", a.holder)
	}
	check := func(what string, m *Scheduler, want map[string]float64) {
		t.Helper()
		got := gatherMaintenance(t, m)
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s = %v (exported %v), want %v", what, k, g, ok, v)
			}
		}
	}
	once := map[string]float64{"pqsink_table_maintenance_leases_held": 1}
	for _, task := range maintenanceTasks {
		once["pqsink_table_maintenance_runs_total{task="+task+"}"] = 1
		once["pqsink_table_maintenance_errors_total{task="+task+"}"] = 0
	}
	a.round(ctx)
	check("a's first round", a, once)
	for _, task := range maintenanceTasks {
		if got := gatherMaintenance(t, a)["pqsink_table_maintenance_last_success_timestamp_seconds{task="+task+"}"]; got == 0 {
			t.Errorf("a's first round: task %s never succeeded", task)
		}
	}
	a.round(ctx)
	check("a's second round, not due", a, once)

	b.round(ctx)
	check("b's round while a holds the lease", b, map[string]float64{
		"pqsink_table_maintenance_leases_held":              0,
		"pqsink_table_maintenance_runs_total{task=compact}": 0,
	})

	a.release()
	check("a after giving the lease up", a, map[string]float64{"pqsink_table_maintenance_leases_held": 0})
	b.round(ctx)
	check("b's round after a gave the lease up, the run not due", b, map[string]float64{
		"pqsink_table_maintenance_leases_held":              1,
		"pqsink_table_maintenance_runs_total{task=compact}": 0,
	})
	b.release()
}

// TestSmallFiles: between scheduled runs, a round that finds a folder of
// the table with more than small_files_above small files compacts it
// (files of any age), expires snapshots, and leaves the scheduled run due
// when it was; a folder within the bound is left alone, and a snapshot
// counted once is not read again.
func TestSmallFiles(t *testing.T) {
	ctx := context.Background()
	e := newCompactionTable(t)
	for first := int64(0); first < 12; first += 3 {
		e.commit(t, first, first+2) // 4 files
	}
	m := New(Options{
		Settings: config.Maintenance{CompactEvery: time.Hour, SmallFilesAbove: 5, TargetFileSize: 1 << 20, RewriteManifestsAbove: 100,
			ExpireSnapshotsOlderThan: 0, KeepSnapshots: 2, RemoveOrphansOlderThan: time.Hour},
		Store:       e.store,
		StoreURL:    e.url,
		Tables:      func() []*table.Handle { return []*table.Handle{e.h} },
		MemoryLimit: 1 << 30,
	})
	if m.tick != smallFilesTick {
		t.Errorf("tick %s, want %s", m.tick, smallFilesTick)
	}
	live := func() int {
		t.Helper()
		files, _, err := e.h.Live(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(files)
	}
	// The first round is the scheduled run: the files are too young for
	// it.
	m.round(ctx)
	last := m.leases["kafka.events"].doc.Last
	if n := live(); n != 4 || m.triggered.Load() != 0 {
		t.Fatalf("after the scheduled run: %d live files, %d triggered runs; want 4 and 0", n, m.triggered.Load())
	}
	// Within the bound: nothing.
	e.commit(t, 12, 14)
	m.round(ctx)
	if n := live(); n != 5 || m.triggered.Load() != 0 {
		t.Fatalf("5 files, bound 5: %d live files, %d triggered runs; want 5 and 0", n, m.triggered.Load())
	}
	if seen := m.seen["kafka.events"]; seen == 0 {
		t.Error("the snapshot counted is not remembered")
	}
	// Over it: compacted into one file, snapshots expired.
	e.commit(t, 15, 17)
	m.round(ctx)
	if n := live(); n != 1 || m.triggered.Load() != 1 {
		t.Fatalf("6 files, bound 5: %d live files, %d triggered runs; want 1 and 1", n, m.triggered.Load())
	}
	tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 3 {
		t.Errorf("%d snapshots after the expiry, keep_snapshots 2 (and the one with the state)", n)
	}
	if got := m.leases["kafka.events"].doc.Last; !got.Equal(last) {
		t.Errorf("the triggered run moved the scheduled run's time from %s to %s", last, got)
	}
	got := gatherMaintenance(t, m)
	for k, v := range map[string]float64{
		"pqsink_table_maintenance_small_files_runs_total":     1,
		"pqsink_table_maintenance_files_rewritten_total":      6,
		"pqsink_table_maintenance_runs_total{task=compact}":   2,
		"pqsink_table_maintenance_runs_total{task=orphans}":   1,
		"pqsink_table_maintenance_errors_total{task=compact}": 0,
		"pqsink_table_maintenance_errors_total{task=expire}":  0,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Every record once.
	tbl, err = e.other.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	arrow, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arrow.Release()
	if n := arrow.NumRows(); n != 18 {
		t.Errorf("%d rows after the compaction, want 18", n)
	}
	m.release()
}

// TestMaxSnapshots: between scheduled runs, a round that finds the table
// with more than max_snapshots snapshots, none old enough to expire and
// no folder over small_files_above, expires the oldest down to the bound
// and leaves the scheduled run due when it was; with no bound it leaves
// them.
func TestMaxSnapshots(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		most      int
		wantAfter int // snapshots after the round that follows 8 commits
	}{
		{name: "bound", most: 4, wantAfter: 4},
		{name: "no bound", most: 0, wantAfter: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newCompactionTable(t)
			e.commit(t, 0, 2)
			m := New(Options{
				Settings: config.Maintenance{CompactEvery: time.Hour, SmallFilesAbove: 100, TargetFileSize: 1 << 20, RewriteManifestsAbove: 100,
					ExpireSnapshotsOlderThan: 7 * 24 * time.Hour, KeepSnapshots: 2, MaxSnapshots: tc.most, RemoveOrphansOlderThan: time.Hour},
				Store:       e.store,
				StoreURL:    e.url,
				Tables:      func() []*table.Handle { return []*table.Handle{e.h} },
				MemoryLimit: 1 << 30,
			})
			snapshots := func() int {
				t.Helper()
				tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
				if err != nil {
					t.Fatal(err)
				}
				return len(tbl.Metadata().Snapshots())
			}
			m.round(ctx) // the scheduled run
			last := m.leases["kafka.events"].doc.Last
			for first := int64(3); first < 24; first += 3 {
				e.commit(t, first, first+2)
			}
			if n := snapshots(); n != 8 {
				t.Fatalf("%d snapshots before the round, want 8", n)
			}
			m.round(ctx)
			if n := snapshots(); n != tc.wantAfter {
				t.Errorf("%d snapshots after the round, max_snapshots %d: want %d", n, tc.most, tc.wantAfter)
			}
			if m.triggered.Load() != 0 {
				t.Errorf("%d small-file runs, want none", m.triggered.Load())
			}
			if got := m.leases["kafka.events"].doc.Last; !got.Equal(last) {
				t.Errorf("the expiry moved the scheduled run's time from %s to %s", last, got)
			}
			got := gatherMaintenance(t, m)
			wantRuns := 1.0
			if tc.most > 0 {
				wantRuns = 2
			}
			if got["pqsink_table_maintenance_runs_total{task=expire}"] != wantRuns || got["pqsink_table_maintenance_errors_total{task=expire}"] != 0 {
				t.Errorf("expiry runs %v (errors %v), want %v and none", got["pqsink_table_maintenance_runs_total{task=expire}"], got["pqsink_table_maintenance_errors_total{task=expire}"], wantRuns)
			}
			tbl, err := e.other.LoadTable(ctx, []string{"kafka", "events"})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tbl.Scan().ToArrowTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Release()
			if n := rows.NumRows(); n != 24 {
				t.Errorf("%d rows after the expiry, want 24", n)
			}
			m.release()
		})
	}
}

// TestSmallFilesLeaseCadence: with small_files_above a Scheduler looks at
// its tables every smallFilesTick but reads the leases only every
// leaseTick: a lease another member gives up is taken at the next lease
// check, not at the next look.
func TestSmallFilesLeaseCadence(t *testing.T) {
	ctx := context.Background()
	e := newCompactionTable(t)
	e.commit(t, 0, 2)
	opts := Options{
		Settings: config.Maintenance{CompactEvery: time.Hour, SmallFilesAbove: 5, TargetFileSize: 1 << 20, RewriteManifestsAbove: 100,
			ExpireSnapshotsOlderThan: 7 * 24 * time.Hour, KeepSnapshots: 100, RemoveOrphansOlderThan: time.Hour},
		Store:       e.store,
		StoreURL:    e.url,
		Tables:      func() []*table.Handle { return []*table.Handle{e.h} },
		MemoryLimit: 1 << 30,
	}
	a, b := New(opts), New(opts)
	if b.tick != smallFilesTick || b.leaseTick != 10*time.Second {
		t.Fatalf("ticks %s and %s, want %s and 10s", b.tick, b.leaseTick, smallFilesTick)
	}
	a.round(ctx)
	b.round(ctx)
	if a.held.Load() != 1 || b.held.Load() != 0 {
		t.Fatalf("leases held %d and %d, want 1 and 0", a.held.Load(), b.held.Load())
	}
	a.release()
	b.round(ctx) // a look, not a lease check
	if b.held.Load() != 0 {
		t.Errorf("b took the lease at a look between lease checks")
	}
	b.checked = b.checked.Add(-b.leaseTick) // the next lease check is due
	b.round(ctx)
	if b.held.Load() != 1 {
		t.Errorf("b did not take the lease given up at its lease check")
	}
	b.release()
}
