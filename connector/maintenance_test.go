package connector

import (
	"context"
	"database/sql"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
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

// TestMaintenanceMetrics: the maintainer's collector passes a pedantic
// registry and exports every task's series at 0 from the start.
func TestMaintenanceMetrics(t *testing.T) {
	m := &maintainer{descs: maintenanceDescs()}
	m.runs[0].Add(2)
	m.orphansRemoved.Add(3)
	m.withDeletes.Store("kafka.orders", int64(4))
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

// TestMaintenanceCompactionMetrics: a maintenance compaction of a table
// in which another engine deleted a row merge-on-read (a position delete
// file) and another copy-on-write (a data file rewritten without it)
// counts the deleted row it applied, the delete file it removed and the
// rewritten file it took back; a second run, with nothing left to do,
// counts nothing more.
func TestMaintenanceCompactionMetrics(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := tableSink(t, dir)
	tc, err := s.tables.forTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var c commitLog
	p := newTablePartition(s, "t", 0, 0, skipSet{}, c.commit, tc)
	p.genCtx = ctx
	feed(t, p, 0, 30) // 5 files of 3 records in each of paths a (even n) and b (odd n)
	if err := tc.commit(ctx); err != nil {
		t.Fatal(err)
	}

	// The other engine: iceberg-go on the same catalog.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	other, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	for _, del := range []struct {
		mode string
		n    int64
	}{
		{itable.WriteModeMergeOnRead, 4}, // a position delete file in p=a
		// The file of n 1, 3 and 5 in p=b rewritten: no other file's n
		// range holds 5.
		{itable.WriteModeCopyOnWrite, 5},
	} {
		tbl, err := other.LoadTable(ctx, []string{"kafka", "t"})
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: del.mode}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Delete(ctx, iceberg.EqualTo(iceberg.Reference("n"), del.n), nil); err != nil {
			t.Fatalf("deleting n %d (%s): %v", del.n, del.mode, err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatalf("committing the delete of n %d (%s): %v", del.n, del.mode, err)
		}
	}

	live, _, err := tc.h.Live(ctx)
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

	m := &maintainer{t: s.tables, now: time.Now, descs: maintenanceDescs(),
		cfg: config.Maintenance{CompactEvery: time.Nanosecond, TargetFileSize: 1 << 20, RemoveOrphansOlderThan: time.Hour}}
	want := map[string]float64{
		"pqsink_table_maintenance_deleted_rows_total":               1,
		"pqsink_table_maintenance_delete_files_removed_total":       1,
		"pqsink_table_maintenance_rewritten_files_taken_back_total": 1,
		"pqsink_table_maintenance_files_rewritten_total":            10,
		"pqsink_table_maintenance_files_written_total":              2,
	}
	for run := range 2 {
		if err := m.compact(ctx, tc.h); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		got := gatherMaintenance(t, m)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("after run %d: %s = %v, want %v", run, k, got[k], v)
			}
		}
	}
}

// gatherMaintenance is m's samples, by name and labels.
func gatherMaintenance(t *testing.T, m *maintainer) map[string]float64 {
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
