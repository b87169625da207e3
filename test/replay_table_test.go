package test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestReplayTable archives a topic into a table in two runs (land, commit,
// land more, commit), then replays the table with `pqsink replay --from
// iceberg:kafka.TOPIC`: at the first run's snapshot the target gets
// exactly the records of the first run, at the current one all of them,
// each with the key, headers, timestamp and value bytes it was produced
// with, in order; on a file:// warehouse, on MinIO, on GCS
// (fake-gcs-server) and on Azure (Azurite). A rerun
// with the completed checkpoint produces nothing, and the checkpoint,
// which names its snapshot, refuses another one. A table, a snapshot or
// files that are not pqsink's are clear errors.
func TestReplayTable(t *testing.T) {
	for _, kind := range []string{"file", "s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) { testReplayTable(t, newStoreTarget(t, kind, "warehouse")) })
	}
}

func testReplayTable(t *testing.T, target storeTarget) {
	const partitions, n1, n2 = 3, 900, 600
	topic := "orders"
	broker := kafkatest.Start(t, partitions, topic, "at-first", "at-current", "errors")
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-replay-table", topic: topic, format: "json",
		envelope: true, records: 200, interval: "500ms", noPath: true}
	target.tableConfig(&cfg)
	props := maps.Clone(target.iceberg)
	props["warehouse"] = cfg.storeURL
	uri := "sqlite://" + filepath.Join(dir, "catalog.db")
	cfg.extra = fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: 1s
  partition_by: ["day(_kafka.timestamp)"]
`, uri)
	text := cfg.yaml(t)
	cfgFile := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// current reads the table's current snapshot id and row count with
	// iceberg-go, in a catalog connection of its own.
	current := func() (int64, int64) {
		t.Helper()
		db, err := sqlOpenSQLite(uri)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, props)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(context.Background(), itable.Identifier{"kafka", topic})
		if err != nil || tbl.CurrentSnapshot() == nil {
			return 0, 0
		}
		s := tbl.CurrentSnapshot()
		rows, _ := strconv.ParseInt(s.Summary.Properties["total-records"], 10, 64)
		return s.SnapshotID, rows
	}
	waitTable := func(want int64) int64 {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			id, rows := current()
			if rows >= want {
				return id
			}
			if time.Now().After(deadline) {
				t.Fatalf("the table holds %d rows, want %d", rows, want)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}

	produceReplayEvents(t, broker.Brokers, topic, n1, false)
	first := readTopic(t, broker.Brokers, topic, partitions)
	_, stop := startSink(t, text)
	waitTable(n1)
	stop()
	firstSnap, rows := current()
	if rows != n1 {
		t.Fatalf("after the first run the table holds %d rows, want %d", rows, n1)
	}
	produceReplayEvents(t, broker.Brokers, topic, n2, false)
	all := readTopic(t, broker.Brokers, topic, partitions)
	_, stop = startSink(t, text)
	lastSnap := waitTable(n1 + n2)
	stop()
	if id, _ := current(); id != lastSnap || id == firstSnap {
		t.Fatalf("snapshots: first %d, last %d, current %d", firstSnap, lastSnap, id)
	}

	replay := func(from, target string, extra ...string) (string, error) {
		args := append([]string{"replay", "--config", cfgFile, "--from", from, "--topic", target, "--progress", "log"}, extra...)
		out, err := exec.Command(pqsinkBinary(t), args...).CombinedOutput()
		return string(out), err
	}
	checkpoint := filepath.Join(dir, "replay.checkpoint")
	for _, tc := range []struct {
		from, target string
		want         map[string]produced
	}{
		{fmt.Sprintf("iceberg:kafka.%s@%d", topic, firstSnap), "at-first", first},
		{"iceberg:kafka." + topic, "at-current", all},
		// The same replay again, with the checkpoint of the one before: it
		// is complete, so nothing more is produced.
		{"iceberg:kafka." + topic, "at-current", all},
	} {
		out, err := replay(tc.from, tc.target, "--checkpoint", checkpoint+"."+tc.target)
		if err != nil {
			t.Fatalf("replay --from %s: %v\n%s", tc.from, err, out)
		}
		compareReplayedBytes(t, tc.from, tc.want, readTopic(t, broker.Brokers, tc.target, partitions))
	}
	// The checkpoint names the snapshot it replayed: another snapshot is
	// another replay.
	if out, err := replay(fmt.Sprintf("iceberg:kafka.%s@%d", topic, firstSnap), "at-current", "--checkpoint", checkpoint+".at-current"); err == nil ||
		!strings.Contains(out, fmt.Sprintf("belongs to another replay (from iceberg:kafka.%s@%d", topic, lastSnap)) {
		t.Errorf("replaying the first snapshot with the current one's checkpoint: %v, want a refusal naming snapshot %d:\n%s", err, lastSnap, out)
	}

	// Errors: each says what is wrong, and produces nothing.
	addForeignTable(t, props, uri, "foreign")
	unknown := int64(12345)
	for unknown == firstSnap || unknown == lastSnap {
		unknown++
	}
	for _, tc := range []struct {
		name, from, want string
	}{
		{"unknown table", "iceberg:kafka.nope", "kafka.nope: no such table"},
		{"unknown namespace", "iceberg:elsewhere." + topic, "no such table"},
		{"unknown snapshot", fmt.Sprintf("iceberg:kafka.%s@%d", topic, unknown), "no such snapshot"},
		{"bad snapshot id", "iceberg:kafka." + topic + "@latest", "snapshot id"},
		{"no table name", "iceberg:kafka", "iceberg:NAMESPACE.TABLE"},
		{"not pqsink's files", "iceberg:kafka.foreign", "not a pqsink file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := replay(tc.from, "errors")
			var exit *exec.ExitError
			t.Logf("replay --from %s: %s", tc.from, lastLine(out))
			if !errors.As(err, &exit) || !strings.Contains(out, tc.want) {
				t.Errorf("replay --from %s: %v, want a failure saying %q:\n%s", tc.from, err, tc.want, out)
			}
		})
	}
	if got := readTopic(t, broker.Brokers, "errors", partitions); len(got) != 0 {
		t.Errorf("the failed replays produced %d records", len(got))
	}
}

// compareReplayedBytes checks that dst holds exactly the records of src,
// partition by partition and in order, each with the same key (null and
// empty apart), headers, timestamp and value bytes.
func compareReplayedBytes(t *testing.T, what string, src, dst map[string]produced) {
	t.Helper()
	want, got := byPartition(src), byPartition(dst)
	if len(dst) != len(src) {
		t.Errorf("%s: the target holds %d records, want %d", what, len(dst), len(src))
	}
	bad := 0
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Errorf("%s: partition %d: %d records replayed, want %d", what, p, len(gs), len(ws))
			continue
		}
		for i, w := range ws {
			g := gs[i]
			if (w.Key == nil) != (g.Key == nil) || !bytes.Equal(w.Key, g.Key) || g.TimeMs != w.TimeMs ||
				!reflect.DeepEqual(g.Headers, w.Headers) || !bytes.Equal(g.Value, w.Value) {
				if bad++; bad <= 5 {
					t.Errorf("%s: partition %d, record %d (source offset %d): got key %q time %d headers %v value %s, want key %q time %d headers %v value %s",
						what, p, i, w.Offset, g.Key, g.TimeMs, g.Headers, g.Value, w.Key, w.TimeMs, w.Headers, w.Value)
				}
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d records differ in all", what, bad)
	}
}

// addForeignTable creates table kafka.NAME in the catalog with a data file
// that iceberg-go writes itself (no Kafka envelope, no pqsink footer).
func addForeignTable(t *testing.T, props iceberg.Properties, uri, name string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlOpenSQLite(uri)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, sqlcat.SQLite, props)
	if err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, itable.Identifier{"kafka", name}, sch,
		catalog.WithLocation(props["warehouse"]+"/kafka/"+name))
	if err != nil {
		t.Fatal(err)
	}
	as := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecord(as, []arrow.Array{col}, 3)
	defer rec.Release()
	at := array.NewTableFromRecords(as, []arrow.Record{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, 100, nil); err != nil {
		t.Fatal(err)
	}
}

// sqlOpenSQLite opens the SQLite database of a sqlite:// catalog URI.
func sqlOpenSQLite(uri string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+strings.TrimPrefix(uri, "sqlite://")+"?_pragma=busy_timeout(10000)")
}

// lastLine is the last line of a command's output.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
