package test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector/metrics"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/internal/testutil/icebergrest"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableCatalogOutage: the catalog is down while the sink runs, and
// records keep coming: a SQLite catalog locked by another connection
// (each commit waits out its busy timeout and fails), and a REST catalog
// answering 503 (each commit fails at once). During the outage the sink
// goes on consuming and uploading, no commit succeeds, and the gauge of
// the oldest uncommitted record (counted from the read) rises past many
// commit intervals; once the catalog is back, the table catches up with
// a commit or two, not one per interval missed; every record is in the
// table once, and the gauge is back at 0. The commits back off while they
// fail: the failed attempts during the outage are as few as a wait that
// doubles from commit_interval allows, not one per interval.
func TestTableCatalogOutage(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start sets the env's catalog up, and returns the sink's
		// configuration and what takes the catalog down and up again.
		start func(t *testing.T, env *tableEnv, brokers []string) (text string, down, up func())
	}{
		{name: "sqlite locked", start: lockedSQLite},
		{name: "rest unavailable", start: unavailableREST},
	} {
		t.Run(tc.name, func(t *testing.T) { catalogOutage(t, tc.start) })
	}
}

// lockedSQLite: a connection of the test's own holds the SQLite
// catalog's write lock (BEGIN EXCLUSIVE), so that every table commit
// waits out its busy timeout and fails.
func lockedSQLite(t *testing.T, env *tableEnv, brokers []string) (string, func(), func()) {
	ctx := context.Background()
	text := env.config(t, brokers, "outage", "1s", 50) // a file every 50 records, or 500 ms
	var conn *sql.Conn
	down := func() {
		db, _ := env.openCatalog(t)
		t.Cleanup(func() { db.Close() })
		var err error
		if conn, err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
			t.Fatal(err)
		}
	}
	up := func() {
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
	}
	return text, down, up
}

// unavailableREST: the sink's REST catalog answers every request with a
// 503 while it is down, as a catalog behind a load balancer without
// healthy backends does.
func unavailableREST(t *testing.T, env *tableEnv, brokers []string) (string, func(), func()) {
	srv := env.restCatalog(t, icebergrest.Options{})
	target, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var isDown atomic.Bool
	var refused atomic.Int64
	pass := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isDown.Load() {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"message": "no healthy backend", "type": "ServiceUnavailableException", "code": 503}}`)
			return
		}
		pass.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	text := env.restConfig(t, brokers, "outage", "type: rest\n    uri: "+proxy.URL+"\n    token: "+icebergrest.Token)
	up := func() {
		isDown.Store(false)
		t.Logf("the REST catalog refused %d requests while down", refused.Load())
	}
	return text, func() { isDown.Store(true) }, up
}

// catalogOutage runs the sink through an outage of the catalog that
// start sets up.
func catalogOutage(t *testing.T, start func(t *testing.T, env *tableEnv, brokers []string) (string, func(), func())) {
	const partitions, perBatch = 3, 200
	const missed = 12 // commit intervals (1s) the outage lasts at least
	env := newTableEnv(t, "outage")
	broker := kafkatest.Start(t, partitions, env.topic)
	text, down, up := start(t, env, broker.Brokers)
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
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stopMetrics)
	waitCommitted(t, env, addr, produced)
	snapshotsBefore := env.snapshotCount(t)
	before := sink.Stats().Snapshot()
	commitsBefore := before.TableCommits

	// The outage.
	downAt := time.Now()
	down()
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
	outage := time.Since(downAt)
	// Backoff: the k-th failure in a row waits at least half of
	// commit_interval·2^(k-1) (at least 15 s once capped); one more for a
	// commit in flight when the catalog went down. A slower machine only
	// makes the bound looser: the failures are counted, not timed.
	attempts := during.TableCommitErrors - before.TableCommitErrors
	if limit := backoffAttempts(outage, time.Second) + 1; attempts > limit {
		t.Errorf("%d commits failed in %s of outage at commit_interval 1s; a backoff allows at most %d", attempts, outage.Round(time.Millisecond), limit)
	}
	if during.TableCommits != commitsBefore {
		t.Errorf("%d table commits succeeded while the catalog was down", during.TableCommits-commitsBefore)
	}
	if during.TablePendingRecords != int64(produced/2) {
		t.Errorf("during the outage %d records wait for the table, want the %d produced since it began", during.TablePendingRecords, produced/2)
	}
	t.Logf("during the outage: oldest uncommitted %.1f s, %d commits failed, %d records waiting", f.uncommitted, during.TableCommitErrors-before.TableCommitErrors, during.TablePendingRecords)

	up()
	after := waitCommitted(t, env, addr, produced)
	stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	st := sink.Stats().Snapshot()
	snapshots := env.snapshotCount(t) - snapshotsBefore
	t.Logf("after the outage: %d commits, %d new snapshots, gauge %v", st.TableCommits-commitsBefore, snapshots, after.uncommitted)
	// Every file was uploaded before the catalog came back: a commit in
	// flight then may hold part of them, the next the rest.
	if snapshots < 1 || snapshots > 2 || st.TableCommits-commitsBefore > 2 {
		t.Errorf("the table caught up with %d snapshots (%d commits) after missing at least %d intervals, want 1 or 2", snapshots, st.TableCommits-commitsBefore, missed)
	}
}

// backoffAttempts is the most commits that a backoff doubling from
// interval (tablecommit's retryDelay, jitter included) tries in span: the
// k-th failure waits at least interval·2^(k-1)/2, up to the cap's half.
func backoffAttempts(span, interval time.Duration) int64 {
	var n int64
	for at, wait := time.Duration(0), interval/2; at <= span; n++ {
		at += wait
		wait = min(2*wait, tablecommit.MaxRetryDelay/2)
	}
	return n
}

// snapshotCount is how many snapshots the table's metadata holds.
func (e *tableEnv) snapshotCount(t *testing.T) int {
	t.Helper()
	return len(e.load(t).Metadata().Snapshots())
}
