package test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableCatalogOutage: the catalog is down while the sink runs. A
// connection of the test's own holds the SQLite catalog's write lock
// (BEGIN EXCLUSIVE), so that every table commit waits out its busy
// timeout and fails, while records keep coming. During the outage the
// sink goes on consuming and uploading, its commits fail, and the gauge
// of the oldest uncommitted record (counted from the read) rises past
// many commit intervals; once the lock is
// released, the table catches up with a commit or two, not one per
// interval missed; every record is in the table once, and the gauge is
// back at 0.
func TestTableCatalogOutage(t *testing.T) {
	const partitions, perBatch = 3, 200
	const missed = 12 // commit intervals (1s) the outage lasts at least
	ctx := context.Background()
	env := newTableEnv(t, "outage")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "outage", "1s", 50) // a file every 50 records, or 500 ms
	// The events' Kafka timestamps are days old: count the ages from the
	// read, so that the gauge measures the outage.
	text = strings.Replace(text, "  commit_interval: 1s\n", "  commit_interval: 1s\n  freshness_from: read\n", 1)
	if !strings.Contains(text, "freshness_from: read") {
		t.Fatalf("no commit_interval line to put freshness_from after:\n%s", text)
	}
	produced := 0
	produce := func() {
		for p := range partitions {
			produceEventsTo(t, broker.Brokers, env.topic, p, produced, perBatch)
			produced += perBatch
		}
	}
	produce()

	sink, stop := startSink(t, text)
	addr, stopMetrics, err := connector.ServeMetrics("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMetrics)
	waitCommitted(t, env, addr, produced)
	snapshotsBefore := env.snapshotCount(t)
	before := sink.Stats().Snapshot()
	commitsBefore := before.TableCommits

	// The outage: the test holds the catalog's write lock.
	db, _ := env.openCatalog(t)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			conn.ExecContext(ctx, "ROLLBACK")
		}
	}()
	produce()
	// The sink uploads the new records, fails to commit them, and says
	// so: the oldest uncommitted record ages past the intervals missed.
	deadline := time.Now().Add(3 * time.Minute)
	var f freshness
	for {
		f = readFreshness(t, addr, "kafka."+env.topic)
		st := sink.Stats().Snapshot()
		if st.RecordsUploaded >= int64(produced) && f.uncommitted > missed && st.TableCommitErrors > before.TableCommitErrors {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("during the outage: %d of %d records uploaded, the oldest uncommitted %v s old, %d commits failed; want all, older than %d s, and a failure",
				st.RecordsUploaded, produced, f.uncommitted, st.TableCommitErrors-before.TableCommitErrors, missed)
		}
		time.Sleep(200 * time.Millisecond)
	}
	during := sink.Stats().Snapshot()
	if during.TableCommits != commitsBefore {
		t.Errorf("%d table commits succeeded while the catalog was locked", during.TableCommits-commitsBefore)
	}
	if during.TablePendingRecords != int64(produced/2) {
		t.Errorf("during the outage %d records wait for the table, want the %d produced since it began", during.TablePendingRecords, produced/2)
	}
	t.Logf("during the outage: oldest uncommitted %.1f s, %d commits failed, %d records waiting", f.uncommitted, during.TableCommitErrors-before.TableCommitErrors, during.TablePendingRecords)

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	locked = false
	after := waitCommitted(t, env, addr, produced)
	stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	st := sink.Stats().Snapshot()
	snapshots := env.snapshotCount(t) - snapshotsBefore
	t.Logf("after the outage: %d commits, %d new snapshots, gauge %v", st.TableCommits-commitsBefore, snapshots, after.uncommitted)
	// Every file was uploaded before the lock was released: a commit in
	// flight then may hold part of them, the next the rest.
	if snapshots < 1 || snapshots > 2 || st.TableCommits-commitsBefore > 2 {
		t.Errorf("the table caught up with %d snapshots (%d commits) after missing at least %d intervals, want 1 or 2", snapshots, st.TableCommits-commitsBefore, missed)
	}
}

// snapshotCount is how many snapshots the table's metadata holds.
func (e *tableEnv) snapshotCount(t *testing.T) int {
	t.Helper()
	return len(e.load(t).Metadata().Snapshots())
}
