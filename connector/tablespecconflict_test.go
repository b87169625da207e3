package connector

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/table"
)

// TestTableCommitSpecConflict: the table's state holds, beyond partition
// 0's committed offset, a path of spec 1 (bucket[4](n), which another
// engine made the table's), as a member that moved to it would have left
// while this one, fenced off without knowing it, goes on writing by spec
// 0. This member's commit is refused for partition 0 alone: its files and
// progress are dropped, nothing is committed to Kafka for it, the table
// keeps its state, and pqsink_table_spec_conflicts_total counts it;
// partition 1's files go with the next commit. Partition 0 then reads
// again from the table's state, by the spec that state records, and
// commits.
func TestTableCommitSpecConflict(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := tableSink(t, dir)
	tc, err := s.tables.ForTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}

	// Another engine changes the spec.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + dir + "/warehouse"})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", "t"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).RemoveField("p").AddField("n", iceberg.BucketTransform{NumBuckets: 4}, "n_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	spec := tbl.Spec()
	newSpec := spec.ID()
	v1, err := tc.View(ctx, newSpec)
	if err != nil {
		t.Fatal(err)
	}
	// What the member that moved to it committed: a path of the new spec
	// beyond offset 0.
	path := string(v1.Template().AppendIdentity(nil, "t", 0, time.Time{}, []string{"2"}))
	k0 := table.Partition{Group: "g", Topic: "t", Partition: 0}
	theirs := table.Progress{Committed: 0, Paths: map[string]int64{path: 100}, SpecID: &newSpec}
	if _, err := tc.Table().Commit(ctx, "g", nil, table.State{k0: theirs}); err != nil {
		t.Fatal(err)
	}

	var c0, c1 commitLog
	p0 := newPartitionWithTable(s, "t", 0, 0, skipSet{}, c0.commit, tc)
	p1 := newPartitionWithTable(s, "t", 1, 0, skipSet{}, c1.commit, tc)
	p0.genCtx, p1.genCtx = ctx, ctx
	feed(t, p0, 0, 12)
	feed(t, p1, 0, 12)
	if !s.tables.CommitAll(ctx) {
		t.Fatalf("a commit refused for a spec conflict: %v, want it handled", err)
	}
	st := s.stats.Snapshot()
	if st.TableSpecConflicts != 1 || st.TableCommitErrors != 0 || st.TableFilesAppended != 0 {
		t.Errorf("%d spec conflicts, %d errors, %d files appended; want 1, 0, 0", st.TableSpecConflicts, st.TableCommitErrors, st.TableFilesAppended)
	}
	if len(c0.offsets) != 0 || len(c1.offsets) != 0 {
		t.Errorf("Kafka commits %v and %v after a refused table commit", c0.offsets, c1.offsets)
	}
	held, err := tc.Table().State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := held[k0]; got.Committed != 0 || got.Paths[path] != 100 || got.SpecID == nil || *got.SpecID != newSpec {
		t.Errorf("the table's state of partition 0: %+v, want the other member's", got)
	}

	// Partition 1's files go with the next commit; partition 0's do not.
	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if len(c1.offsets) != 1 || c1.offsets[0] != 12 || len(c0.offsets) != 0 {
		t.Errorf("Kafka commits %v (partition 0) and %v (partition 1), want none and 12", c0.offsets, c1.offsets)
	}
	if st := s.stats.Snapshot(); st.TableFilesAppended != 4 {
		t.Errorf("%d files appended, want partition 1's 4", st.TableFilesAppended)
	}

	// Partition 0 reads again from the table's state, by its spec.
	if err := p0.tick(ctx, time.Now()); !errors.Is(err, errRestart) {
		t.Fatalf("partition 0's tick: %v, want a restart", err)
	}
	if p0.table.SpecID() != newSpec || p0.committed != 0 || p0.skip[path] != 100 {
		t.Fatalf("partition 0 restarts at %d with %v by spec %d, want 0, the table's path, spec %d", p0.committed, p0.skip, p0.table.SpecID(), newSpec)
	}
	feed(t, p0, 0, 200)
	if err := p0.finishAll(ctx, reasonRebalance); err != nil {
		t.Fatal(err)
	}
	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if st := s.stats.Snapshot(); st.TableSpecConflicts != 1 {
		t.Errorf("%d spec conflicts after partition 0 read again by the table's spec, want still 1", st.TableSpecConflicts)
	}
	if held, err = tc.Table().State(ctx); err != nil {
		t.Fatal(err)
	}
	if got := held[k0]; got.Committed != 200 {
		t.Errorf("the table's state of partition 0: %+v, want committed 200", got)
	}
}
