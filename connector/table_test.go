package connector

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// TestTableSettings: what the sink can put in a table's file paths is
// rendered as a path segment, the partition field's name and its value's
// placeholder; the rest is refused at startup, naming the key.
func TestTableSettings(t *testing.T) {
	leaves, err := schema.Parse("message m { required int64 id; required binary user (STRING); required int64 ts (TIMESTAMP(MICROS,true)); optional group user2 { optional binary country (STRING); } }")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		format    string
		registry  bool
		path      string
		timeField string
		by        config.PartitionField
		field     string // the partition field's name in the spec
		segment   string // the partition field's segment; "" when refused
		err       string // part of the error when refused
	}{
		{name: "day", by: config.PartitionField{Transform: "day", Column: "_kafka.timestamp"}, field: "_kafka_timestamp_day", segment: "_kafka_timestamp_day={record_time:2006-01-02}"},
		{name: "hour", by: config.PartitionField{Transform: "hour", Column: "_kafka.timestamp"}, field: "_kafka_timestamp_hour", segment: "_kafka_timestamp_hour={record_time:2006-01-02-15}"},
		{name: "month", by: config.PartitionField{Transform: "month", Column: "_kafka.timestamp"}, field: "_kafka_timestamp_month", segment: "_kafka_timestamp_month={record_time:2006-01}"},
		{name: "year", by: config.PartitionField{Transform: "year", Column: "_kafka.timestamp"}, field: "_kafka_timestamp_year", segment: "_kafka_timestamp_year={record_time:2006}"},
		{name: "identity of a field", by: config.PartitionField{Transform: "identity", Column: "user2.country"}, field: "user2_country", segment: "user2_country={field:user2.country}"},
		{name: "identity of the partition", by: config.PartitionField{Transform: "identity", Column: "_kafka.partition"}, field: "_kafka_partition", segment: "_kafka_partition={partition}"},
		{name: "identity of the topic", by: config.PartitionField{Transform: "identity", Column: "_kafka.topic"}, field: "_kafka_topic", segment: "_kafka_topic={topic}"},
		{name: "bucket", by: config.PartitionField{Transform: "bucket", Param: 16, Column: "id"}, field: "id_bucket", segment: "id_bucket={field:id}"},
		{name: "truncate", by: config.PartitionField{Transform: "truncate", Param: 4, Column: "user"}, field: "user_trunc", segment: "user_trunc={field:user}"},
		{name: "day of a field", by: config.PartitionField{Transform: "day", Column: "ts"}, field: "ts_day", segment: "ts_day={field:ts}"},
		{name: "bucket of the record time", by: config.PartitionField{Transform: "bucket", Param: 4, Column: "_kafka.timestamp"}, err: "_kafka.timestamp takes year, month, day or hour"},
		{name: "identity of the offset", by: config.PartitionField{Transform: "identity", Column: "_kafka.offset"}, err: "only timestamp, topic and partition"},
		{name: "identity of a field in variant", format: "variant", by: config.PartitionField{Transform: "identity", Column: "user"}, err: "with format.type json, json_schema, avro or protobuf only (not variant)"},
		{name: "identity of a field in json_schema", format: "json_schema", by: config.PartitionField{Transform: "identity", Column: "user"}, field: "user", segment: "user={field:user}"},
		{name: "identity of a field in json_schema from a registry", format: "json_schema", registry: true, by: config.PartitionField{Transform: "identity", Column: "user"}, field: "user", segment: "user={field:user}"},
		{name: "identity of a field in protobuf", format: "protobuf", by: config.PartitionField{Transform: "identity", Column: "user"}, field: "user", segment: "user={field:user}"},
		{name: "bucket of a field in avro", format: "avro", by: config.PartitionField{Transform: "bucket", Param: 2, Column: "id"}, field: "id_bucket", segment: "id_bucket={field:id}"},
		{name: "day of a nested field in avro", format: "avro", by: config.PartitionField{Transform: "day", Column: "payload.ts"}, field: "payload_ts_day", segment: "payload_ts_day={field:payload.ts}"},
		{name: "a path", path: "{topic}/{partition}/{first_offset}.parquet", err: "path: not used with a table"},
		{name: "time_field", timeField: "ts", err: "time_field: not supported with a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Config{Path: archive.DefaultPath, TimeField: tc.timeField, Table: &config.Table{PartitionBy: []config.PartitionField{tc.by}}}
			c.Format.Type = "json"
			if tc.format != "" {
				c.Format.Type = tc.format
			}
			if tc.registry {
				c.Format.Registry = &config.Registry{URL: "http://127.0.0.1:1"}
			}
			if tc.path != "" {
				c.Path = tc.path
			}
			err := tablecommit.Settings(c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f := table.PathField{Name: tc.field, Transform: tc.by.Transform, Column: tc.by.Column}
			// With avro, or a registry, the columns are each writer
			// schema's: the fields have none.
			perSchema := c.Format.Type == "avro" || tc.registry
			if !strings.HasPrefix(f.Column, "_kafka.") && !perSchema {
				f.Leaf = leaves.Lookup(strings.Split(f.Column, ".")...)
			}
			text, computed, err := tablecommit.Path("kafka/t", []table.PathField{f}, perSchema)
			if want := "kafka/t/data/" + tc.segment + "/{topic}+{partition}+{first_offset}.parquet"; err != nil || text != want {
				t.Errorf("path = %q (%v), want %q", text, err, want)
			}
			if got, want := len(computed), strings.Count(tc.segment, "{field:"); got != want {
				t.Errorf("%d fields computed from the records, want %d", got, want)
			}
			// A file path of the table must be a valid template.
			if _, err := archive.Parse(text, true); err != nil {
				t.Error(err)
			}
		})
	}
}

// tableSink is a sink on a SQLite catalog and a file:// warehouse in dir,
// with topic t's table partitioned by identity of payload field p.
func tableSink(t *testing.T, dir string) *Sink {
	t.Helper()
	schemaPath := filepath.Join(t.TempDir(), "s.schema")
	if err := os.WriteFile(schemaPath, []byte("message m { required int64 n; optional binary p (STRING); }"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}
store: {url: "file://%s/warehouse"}
format: {type: json, schema_file: %s}
rotate: {records: 3, interval: 1h, bytes: 0}
table:
  format: iceberg
  catalog: {type: sql, uri: "sqlite://%s/catalog.db"}
  namespace: kafka
  partition_by: ["identity(p)"]
`, dir, schemaPath, dir)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTableCommitOrder: a partition's uploads commit nothing to Kafka by
// themselves; a table commit that fails keeps its files and commits no
// offset (and /readyz says not ready once commits have failed for two
// intervals); the next one appends them and only then commits the offset,
// with the state the table now holds.
func TestTableCommitOrder(t *testing.T) {
	ctx := context.Background()
	s := tableSink(t, t.TempDir())
	tc, err := s.tables.ForTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := "kafka/t/data/p={field:p}/{topic}+{partition}+{first_offset}.parquet"; tc.Template().String() != want {
		t.Errorf("files' path %q, want %q", tc.Template().String(), want)
	}
	var c commitLog
	p := newPartitionWithTable(s, "t", 0, 0, skipSet{}, c.commit, tc)
	p.genCtx = ctx
	feed(t, p, 0, 12) // paths a and b, a file of each every 6 records
	if len(c.offsets) != 0 {
		t.Fatalf("Kafka commits %v before any table commit", c.offsets)
	}
	st := s.stats.Snapshot()
	if st.TablePendingFiles != 4 || st.TablePendingRecords != 12 {
		t.Fatalf("%d files (%d records) pending, want 4 (12)", st.TablePendingFiles, st.TablePendingRecords)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if s.tables.CommitAll(cancelled) {
		t.Fatal("a table commit with a cancelled context succeeded")
	}
	st = s.stats.Snapshot()
	if len(c.offsets) != 0 || st.TableCommitErrors != 1 || st.TablePendingFiles != 4 {
		t.Fatalf("after a failed table commit: Kafka commits %v, %d errors, %d files pending", c.offsets, st.TableCommitErrors, st.TablePendingFiles)
	}
	s.joined.Store(true)
	if err := s.Ready(); err != nil {
		t.Errorf("one failed table commit: not ready: %v", err)
	}
	twice := 2 * s.cfg.Table.CommitInterval
	if err := s.tables.Failing(time.Now().Add(twice), twice); err == nil || !strings.Contains(err.Error(), "table kafka.t: commits have failed") || !strings.Contains(err.Error(), "context canceled") {
		t.Errorf("table commits failing for two intervals: %v", err)
	}

	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if err := s.Ready(); err != nil {
		t.Errorf("after a table commit that succeeded: not ready: %v", err)
	}
	st = s.stats.Snapshot()
	if st.TableFilesAppended != 4 || st.TablePendingFiles != 0 || st.TablePendingRecords != 0 {
		t.Errorf("after the table commit: %d files appended, %d (%d records) pending", st.TableFilesAppended, st.TablePendingFiles, st.TablePendingRecords)
	}
	if len(c.offsets) != 1 || c.offsets[0] != 12 {
		t.Errorf("Kafka commits %v, want one at 12", c.offsets)
	}
	tp, ok, err := tc.State(ctx, 0)
	if err != nil || !ok || tp.Committed != 12 || len(tp.Paths) != 0 {
		t.Errorf("table state: offset %d skip %v (%v, %v), want 12 and none", tp.Committed, tp.Paths, ok, err)
	}
	// Nothing new: a commit does nothing, and commits no offset again.
	if !s.tables.CommitAll(ctx) || len(c.offsets) != 1 {
		t.Errorf("an idle commit failed, or Kafka commits %v", c.offsets)
	}
}

// TestTableReadyLockedCatalog: with a SQLite catalog that another process
// holds locked, /readyz says not ready while a commit waits (from
// commitSlowFor on), and after it failed on the busy timeout, until a
// commit succeeds once the lock is gone: an outage shows within seconds,
// not after two commit intervals.
func TestTableReadyLockedCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := tableSink(t, dir)
	tc, err := s.tables.ForTopic(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var c commitLog
	p := newPartitionWithTable(s, "t", 0, 0, skipSet{}, c.commit, tc)
	p.genCtx = ctx
	feed(t, p, 0, 6)
	s.joined.Store(true)
	if err := s.Ready(); err != nil {
		t.Fatalf("before the lock: %v", err)
	}

	// Another process's writer holds the database.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool, 1)
	go func() { done <- s.tables.CommitAll(ctx) }()
	waitReady := func(what, want string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			err := s.Ready()
			if err != nil && strings.Contains(err.Error(), want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: ready says %v, want %q", what, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady("a commit waiting for the lock", "table kafka.t: a commit has been in progress for")
	if <-done {
		t.Fatal("a commit succeeded on a locked catalog")
	}
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "table kafka.t: the last commit failed") {
		t.Errorf("after the commit failed on the lock: ready says %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if !s.tables.CommitAll(ctx) {
		t.Fatal(err)
	}
	if err := s.Ready(); err != nil {
		t.Errorf("after a commit that succeeded: %v", err)
	}
	if len(c.offsets) != 1 || c.offsets[0] != 6 {
		t.Errorf("Kafka commits %v, want [6]", c.offsets)
	}
}
