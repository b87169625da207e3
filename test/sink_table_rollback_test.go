package test

import (
	"context"
	"strconv"
	"testing"
	"time"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkRollback rolls the table back to an early snapshot while
// the sink runs, as an operator does after a bad write
// (rollback_to_snapshot): the records of the snapshots rolled back are no
// longer in the table, and its state says so. The sink must land them
// again, not carry on past them: at the end the table holds every record
// exactly once, and the group's Kafka commits follow the table's state.
func TestTableSinkRollback(t *testing.T) {
	const partitions, n = 2, 1200
	env := newTableEnv(t, "rolled")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "rolled", "1s", 150)

	sink, stop := startSink(t, text)
	defer func() { stop() }()
	produceEvents(t, broker.Brokers, env.topic, 0, n/2)
	env.waitRows(t, n/2, 2*time.Minute)
	produceEvents(t, broker.Brokers, env.topic, n/2, n/2)
	env.waitRows(t, n, 2*time.Minute)

	// Back to the earliest snapshot holding at most half the records.
	tbl := env.load(t)
	var back int64
	var kept int64
	for _, s := range tbl.Metadata().Snapshots() {
		rows, _ := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		if rows > 0 && rows <= n/2 && (back == 0 || rows < kept) {
			back, kept = s.SnapshotID, rows
		}
	}
	if back == 0 {
		t.Fatalf("no snapshot holds at most %d records: %d snapshots", n/2, len(tbl.Metadata().Snapshots()))
	}
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(back); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("rolled back to snapshot %d, %d records", back, kept)
	if got := len(env.scan(t)); int64(got) != kept {
		t.Fatalf("after the rollback the table holds %d rows, want %d", got, kept)
	}

	// More records while the sink runs on.
	produceEvents(t, broker.Brokers, env.topic, n, n)
	env.waitRows(t, 2*n, 2*time.Minute)
	time.Sleep(3 * time.Second) // a few more commits: nothing may come twice
	stop()
	stop = func() {}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	if st := sink.Stats().Snapshot(); st.TableRollbacks == 0 || st.TableCommitErrors != 0 {
		t.Errorf("%d rollbacks found, %d commit errors; want at least one rollback and no error", st.TableRollbacks, st.TableCommitErrors)
	}
	env.checkKafkaFollows(t, broker.Brokers, "rolled", partitions)
}
