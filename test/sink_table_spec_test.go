package test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkFollowsTableSpec: a sink whose configuration leaves
// table.partition_by out follows the spec of the table it adopts (here
// bucket[2](id) and day(ts), which another configuration created it with):
// its files go into that spec's folders and the table holds every record
// once (iceberg-go, and DuckDB over the files the snapshot lists);
// `pqsink run --check` says the same. A partition_by that is set and
// differs, even to none ([]), is still refused, and so is a table whose
// spec the sink cannot put in a path.
func TestTableSinkFollowsTableSpec(t *testing.T) {
	const partitions, n = 2, 600
	env := newTableEnv(t, "followed")
	broker := kafkatest.Start(t, partitions, env.topic)
	withSpec := strings.Replace(env.config(t, broker.Brokers, "fol", "1s", 200), `["day(_kafka.timestamp)"]`, `["bucket[2](id)", "day(ts)"]`, 1)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, withSpec)
	env.waitRows(t, n, 2*time.Minute)
	stop()

	without := replaceLine(withSpec, `  partition_by: ["bucket[2](id)", "day(ts)"]`, "")
	if strings.Contains(without, "partition_by") {
		t.Fatalf("partition_by still in the config:\n%s", without)
	}
	newSink := func(text string, opts ...connector.Option) error {
		t.Helper()
		cfg, err := config.Parse([]byte(text), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler), opts...)
		if err == nil {
			sink.Close()
		}
		return err
	}
	if err := newSink(without, connector.CheckOnly()); err != nil {
		t.Errorf("pqsink run --check without partition_by: %v", err)
	}
	for _, c := range []struct{ name, spec string }{
		{"none", "[]"},
		{"another", `["day(ts)"]`},
	} {
		text := strings.Replace(withSpec, `["bucket[2](id)", "day(ts)"]`, c.spec, 1)
		for _, opts := range [][]connector.Option{nil, {connector.CheckOnly()}} {
			if err := newSink(text, opts...); err == nil || !strings.Contains(err.Error(), "is partitioned by") {
				t.Errorf("partition_by %s against the table's spec (check only: %v): %v, want it refused", c.spec, opts != nil, err)
			}
		}
	}

	produceEvents(t, broker.Brokers, env.topic, n, n)
	_, stop = startSink(t, without)
	env.waitRows(t, 2*n, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	checkSnapshotFiles(t, env, env.load(t), truth)
	files := env.files(t)
	for _, f := range files {
		dirs := strings.Split(filepath.ToSlash(filepath.Dir(f)), "/")
		if len(dirs) < 2 || !strings.HasPrefix(dirs[len(dirs)-2], "id_bucket=") || !strings.HasPrefix(dirs[len(dirs)-1], "ts_day=") {
			t.Errorf("file %s is not in id_bucket=/ts_day= folders", f)
		}
	}

	// A spec the sink cannot write: identity of _kafka.offset, made by
	// another engine.
	other := newTableEnv(t, "unwritable")
	otherCfg := other.config(t, broker.Brokers, "unw", "1s", 200)
	if err := newSink(otherCfg); err != nil { // creates the table
		t.Fatal(err)
	}
	tx := other.load(t).NewTransaction()
	if err := tx.UpdateSpec(true).AddIdentity("_kafka.offset").Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := newSink(replaceLine(otherCfg, `  partition_by: ["day(_kafka.timestamp)"]`, "")); err == nil || !strings.Contains(err.Error(), "cannot put identity(_kafka.offset) in its files' paths") {
		t.Errorf("following a spec of identity(_kafka.offset): %v, want it refused", err)
	}
}
