package test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/uptrace/bun/driver/pgdriver"
	_ "modernc.org/sqlite"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/events"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/postgres"
	"github.com/pqsink/pqsink/meta"
)

// tableEnv is a warehouse in a temporary folder and the table
// section over it: a SQLite catalog beside it (or a PostgreSQL one), one
// table per topic in namespace kafka, partitioned by day of the record
// time.
type tableEnv struct {
	warehouse string // file:// URL
	uri       string // the catalog's: sqlite://FILE or postgres://...
	topic     string
	variant   bool   // format.type variant (shred: none) into a format version 3 table
	shred     string // format.shred of a variant format, when not none
	// avroRegistry, when set, makes the format avro with this registry.
	avroRegistry string
}

func newTableEnv(t *testing.T, topic string) *tableEnv {
	dir := t.TempDir()
	return &tableEnv{warehouse: "file://" + filepath.Join(dir, "warehouse"), uri: "sqlite://" + filepath.Join(dir, "state", "catalog.db"), topic: topic}
}

// openCatalog opens the catalog's database.
func (e *tableEnv) openCatalog(t *testing.T) (*sql.DB, sqlcat.SupportedDialect) {
	t.Helper()
	if file, ok := strings.CutPrefix(e.uri, "sqlite://"); ok {
		db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		return db, sqlcat.SQLite
	}
	return sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(e.uri))), sqlcat.Postgres
}

// config renders the sink's configuration with the table section.
func (e *tableEnv) config(t *testing.T, brokers []string, group, commitInterval string, records int) string {
	format, shred, version := "json", "", 2
	if e.variant {
		format, shred, version = "variant", "none", 3
		if e.shred != "" {
			shred = e.shred
		}
	}
	if e.avroRegistry != "" {
		format = "avro"
	}
	c := sinkConfig{
		brokers: brokers, group: group, topic: e.topic, storeURL: e.warehouse,
		format: format, shred: shred, envelope: true, records: records, interval: "500ms", noPath: true,
		extra: fmt.Sprintf(`table:
  format: iceberg
  catalog:
    type: sql
    uri: %s
  namespace: kafka
  name: "{topic}"
  commit_interval: %s
  partition_by: ["day(_kafka.timestamp)"]
  format_version: %d
`, e.uri, commitInterval, version),
	}
	text := c.yaml(t)
	if e.avroRegistry != "" {
		text = strings.Replace(text, "format:\n  type: avro\n", fmt.Sprintf("format:\n  type: avro\n  registry: {url: %q, timeout: 2s}\n", e.avroRegistry), 1)
	}
	return text
}

// tableRow is one row of the table, as iceberg-go scans it.
type tableRow struct {
	partition int32
	offset    int64
	key       []byte
	id        int64 // -1 for a variant payload
	timeMs    int64 // _kafka.timestamp, in Kafka's milliseconds
}

// openTable loads the table with iceberg-go through a catalog connection
// of its own, which done closes; err is the catalog's when the table does
// not exist yet.
func (e *tableEnv) openTable(t *testing.T) (tbl *itable.Table, done func(), err error) {
	t.Helper()
	db, dialect := e.openCatalog(t)
	done = func() { db.Close() }
	cat, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{"warehouse": e.warehouse})
	if err != nil {
		done()
		t.Fatal(err)
	}
	tbl, err = cat.LoadTable(context.Background(), itable.Identifier{"kafka", e.topic})
	return tbl, done, err
}

// scan reads the table's current snapshot with iceberg-go, through a
// catalog connection of its own; nil when the table does not exist yet.
func (e *tableEnv) scan(t *testing.T) []tableRow {
	t.Helper()
	tbl, done, err := e.openTable(t)
	defer done()
	if err != nil {
		return nil
	}
	return e.rows(t, tbl)
}

// rows reads the current snapshot of tbl, loaded from any catalog, with
// iceberg-go.
func (e *tableEnv) rows(t *testing.T, tbl *itable.Table) []tableRow {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scanning the table: %v", err)
	}
	defer at.Release()
	var rows []tableRow
	col := func(name string) *arrow.Column {
		for i := 0; i < int(at.NumCols()); i++ {
			if at.Column(i).Name() == name {
				return at.Column(i)
			}
		}
		t.Fatalf("the table has no column %s: %v", name, at.Schema())
		return nil
	}
	kc := col("_kafka")
	var ic *arrow.Column
	if !e.variant {
		ic = col("id")
	}
	for ch, chunk := range kc.Data().Chunks() {
		st := chunk.(*array.Struct)
		typ := st.DataType().(*arrow.StructType)
		field := func(name string) arrow.Array {
			i, ok := typ.FieldIdx(name)
			if !ok {
				t.Fatalf("_kafka has no field %s", name)
			}
			return st.Field(i)
		}
		parts, offs, keys := field("partition").(*array.Int32), field("offset").(*array.Int64), field("key").(*array.Binary)
		// The table's timestamptz is in microseconds (the files write
		// Kafka's milliseconds times 1000).
		times, ok := field("timestamp").(*array.Timestamp)
		if !ok || times.DataType().(*arrow.TimestampType).Unit != arrow.Microsecond {
			t.Fatalf("_kafka.timestamp reads as %s, want a timestamp in microseconds", field("timestamp").DataType())
		}
		var ids *array.Int64
		if ic != nil {
			ids = ic.Data().Chunk(ch).(*array.Int64)
		}
		for i := 0; i < st.Len(); i++ {
			r := tableRow{partition: parts.Value(i), offset: offs.Value(i), id: -1, timeMs: int64(times.Value(i)) / 1000}
			if ids != nil {
				r.id = ids.Value(i)
			}
			if !keys.IsNull(i) {
				r.key = append([]byte{}, keys.Value(i)...)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// waitRows waits until the table holds want rows.
func (e *tableEnv) waitRows(t *testing.T, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		n := len(e.scan(t))
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table holds %d rows after %v, want %d", n, within, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// check compares the table with what Kafka holds: every record exactly
// once by (partition, offset), with its key and payload id.
func (e *tableEnv) check(t *testing.T, truth map[string]produced) {
	t.Helper()
	checkTableRows(t, e.scan(t), truth)
}

// checkTableRows compares rows, read from a table, with what Kafka holds:
// every record exactly once by (partition, offset), with its key and
// payload id.
func checkTableRows(t *testing.T, rows []tableRow, truth map[string]produced) {
	t.Helper()
	if len(rows) != len(truth) {
		t.Errorf("the table holds %d rows, Kafka %d records", len(rows), len(truth))
	}
	seen := map[string]int{}
	bad := 0
	for _, r := range rows {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		seen[id]++
		p, ok := truth[id]
		var v struct{ ID int64 }
		switch {
		case !ok:
			t.Errorf("the table holds %s, which Kafka does not", id)
		case seen[id] > 1:
			t.Errorf("%s is in the table %d times", id, seen[id])
		case json.Unmarshal(p.Value, &v) != nil || (r.id != -1 && v.ID != r.id) || string(r.key) != string(p.Key) || (r.key == nil) != (p.Key == nil) || r.timeMs != p.TimeMs:
			t.Errorf("%s: table has id %d key %q time %d, Kafka id %d key %q time %d", id, r.id, r.key, r.timeMs, v.ID, p.Key, p.TimeMs)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.FailNow()
		}
	}
	missing := 0
	for id := range truth {
		if seen[id] == 0 {
			if missing < 5 {
				t.Errorf("%s is not in the table", id)
			}
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d records are not in the table", missing)
	}
}

// files lists the table's Parquet objects under its data folder, at any
// depth of partition folders, by key.
func (e *tableEnv) files(t *testing.T) []string {
	t.Helper()
	var keys []string
	dir := strings.TrimPrefix(e.warehouse, "file://")
	data := filepath.Join(dir, "kafka", e.topic, "data")
	err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".parquet") {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		keys = append(keys, rel)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestTableSink archives a topic into an Iceberg table on a SQLite
// catalog with the configuration, across a restart, and reads it
// back with iceberg-go: every record once, the files under the table's
// data folder, one day each.
func TestTableSink(t *testing.T) {
	const partitions, n = 3, 1500
	env := newTableEnv(t, "orders")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "tbl", "1s", 400)

	produceEvents(t, broker.Brokers, env.topic, 0, n)
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	first := sink.Stats().Snapshot()

	// Another day's records, to a sink started again.
	produceEvents(t, broker.Brokers, env.topic, 15000, n) // a day later
	sink, stop = startSink(t, text)
	env.waitRows(t, 2*n, 2*time.Minute)
	stop()
	second := sink.Stats().Snapshot()
	for i, st := range []connector.Snapshot{first, second} {
		if st.TableCommits == 0 || st.Commits == 0 || st.TablePendingFiles != 0 || st.TablePendingRecords != 0 || st.TableCommitErrors != 0 || st.TableFilesDropped != 0 {
			t.Errorf("run %d: table commits %d, offset commits %d, %d files (%d records) still pending, %d commit errors, %d files dropped",
				i+1, st.TableCommits, st.Commits, st.TablePendingFiles, st.TablePendingRecords, st.TableCommitErrors, st.TableFilesDropped)
		}
	}
	if got, want := first.TableFilesAppended+second.TableFilesAppended, int64(len(env.files(t))); got != want {
		t.Errorf("the runs appended %d files, the table's data folder holds %d", got, want)
	}

	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
	days := map[string]bool{}
	for _, k := range env.files(t) {
		days[strings.Split(k, "/")[3]] = true
	}
	env.checkKafkaFollows(t, broker.Brokers, "tbl", partitions)

	// The table exists, partitioned by day: a sink configured otherwise
	// would put two of its partition tuples in one file, and stops at
	// startup.
	hourly := strings.Replace(text, `["day(_kafka.timestamp)"]`, `["hour(_kafka.timestamp)"]`, 1)
	cfg, err := config.Parse([]byte(hourly), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	if sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "is partitioned by") {
		if sink != nil {
			sink.Close()
		}
		t.Errorf("a sink with another partition_by than the table's: err = %v", err)
	}
	checkFieldIDs(t, filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), env.files(t)[0]))
	if !days["_kafka_timestamp_day=2026-11-23"] || !days["_kafka_timestamp_day=2026-11-24"] || len(days) != 2 {
		t.Errorf("the files' day folders are %v, want 2026-11-23 and 24", days)
	}
}

// checkKafkaFollows checks, after a clean shutdown, that the group's
// Kafka commits carry the table's state: the same committed offset of
// every partition, the end of the partition, and the same skip set.
func (e *tableEnv) checkKafkaFollows(t *testing.T, brokers []string, group string, partitions int) {
	t.Helper()
	ctx := context.Background()
	db, dialect := e.openCatalog(t)
	defer db.Close()
	cat, err := sqlcat.NewCatalog("pqsink", db, dialect, iceberg.Properties{"warehouse": e.warehouse})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, itable.Identifier{"kafka", e.topic})
	if err != nil {
		t.Fatal(err)
	}
	e.checkKafkaFollowsTable(t, tbl, brokers, group, partitions)
}

// checkKafkaFollowsTable is checkKafkaFollows on tbl, loaded from any
// catalog.
func (e *tableEnv) checkKafkaFollowsTable(t *testing.T, tbl *itable.Table, brokers []string, group string, partitions int) {
	t.Helper()
	ctx := context.Background()
	summary := tbl.CurrentSnapshot().Summary.Properties["pqsink.state"]
	doc, ok := strings.CutPrefix(summary, archive.CommitInline)
	if !ok {
		t.Fatalf("the snapshot's pqsink.state is %q", summary)
	}
	var state struct {
		Partitions []struct {
			Group     string
			Topic     string
			Partition int
			Committed int64
			Paths     map[string]int64
		}
	}
	if err := json.Unmarshal([]byte(doc), &state); err != nil {
		t.Fatal(err)
	}
	ids := make([]int, partitions)
	for i := range ids {
		ids[i] = i
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: testTransport(t)}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{e.topic: ids}})
	if err != nil {
		t.Fatal(err)
	}
	kafkaAt := map[int]kafka.OffsetFetchPartition{}
	for _, p := range resp.Topics[e.topic] {
		kafkaAt[p.Partition] = p
	}
	ends := map[int]int64{}
	for _, p := range readTopic(t, brokers, e.topic, partitions) {
		ends[p.Partition] = max(ends[p.Partition], p.Offset+1)
	}
	if len(state.Partitions) != partitions {
		t.Errorf("the table's state has %d partitions, want %d", len(state.Partitions), partitions)
	}
	for _, p := range state.Partitions {
		k := kafkaAt[p.Partition]
		skips, _, err := archive.DecodeCommit(k.Metadata)
		if p.Group != group || p.Topic != e.topic || p.Committed != ends[p.Partition] || k.CommittedOffset != p.Committed ||
			err != nil || len(skips) != len(p.Paths) {
			t.Errorf("partition %d: table state %+v, Kafka commit %d %q (%v), end of the partition %d", p.Partition, p, k.CommittedOffset, k.Metadata, err, ends[p.Partition])
		}
	}
}

// checkFieldIDs checks that every column of a table's data file carries
// a Parquet field_id: readers resolve a table's columns by id.
func checkFieldIDs(t *testing.T, path string) {
	t.Helper()
	r := openParquet(t, path)
	els := r.Metadata().Schema
	for _, e := range els[1:] {
		// The repeated group of a LIST or MAP has no id in Iceberg: its
		// element, key and value do.
		wrapper := e.NumChildren != nil && e.RepetitionType != nil && *e.RepetitionType == meta.Repeated
		if e.FieldID == nil && !wrapper {
			t.Errorf("%s: column %s has no field_id", path, e.Name)
		}
	}
	if len(els) < 10 {
		t.Errorf("%s: %d schema elements, want the event's and the envelope's", path, len(els))
	}
	// Iceberg's timestamptz is in microseconds: so is the envelope's
	// timestamp in a table's files.
	for _, e := range els {
		if e.Name == "timestamp" && e.FieldID != nil && (e.LogicalType == nil || e.LogicalType.Timestamp == nil || e.LogicalType.Timestamp.Unit.Micros == nil) {
			t.Errorf("%s: _kafka.timestamp is not TIMESTAMP(MICROS): %+v", path, e.LogicalType)
		}
	}
}

// TestTableSinkKilledBeforeTableCommit kills `pqsink run` after it
// uploaded files and before its table commit (commit_interval is long),
// then runs it again: the next run finds the uploaded objects, adopts
// them and commits them to the table, every record once.
func TestTableSinkKilledBeforeTableCommit(t *testing.T) {
	const partitions, n = 3, 3000
	env := newTableEnv(t, "killed")
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)

	p := startSinkProcess(t, "sink-uncommitted", env.config(t, broker.Brokers, "kill", "10m", 500))
	p.waitLog(t, "msg=uploaded", time.Minute)
	time.Sleep(2 * time.Second) // more uploads, no table commit
	if strings.Contains(p.log.String(), "msg=\"table commit\"") {
		t.Fatal("the table was committed before the kill; the test needs it not to be")
	}
	p.kill(t)
	if rows := env.scan(t); len(rows) != 0 {
		t.Fatalf("the table holds %d rows before any commit", len(rows))
	}

	last := startSinkProcess(t, "sink-after", env.config(t, broker.Brokers, "kill", "1s", 500))
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 2*time.Minute)
	last.terminate(t, 30*time.Second)
	if !strings.Contains(last.log.String(), "adopted existing object") {
		t.Error("the second run adopted no object: the crash window between upload and table commit was not exercised")
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// TestTableSinkCrashLoop kills `pqsink run` with SIGKILL at random
// moments while records arrive, files rotate and the table is committed
// every second; after a last clean run the table holds every record once.
func TestTableSinkCrashLoop(t *testing.T) {
	const partitions, n, kills = 4, 12000, 8
	env := newTableEnv(t, "crashloop")
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, env.topic)
	text := env.config(t, broker.Brokers, "loop", "1s", 1500)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 1s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text = replaceLine(text, "  rebalance_timeout: 10s", "  rebalance_timeout: 3s")

	producing := produceSlowly(t, broker.Brokers, env.topic, n, 24, 10*time.Second)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for i := range kills {
		p := startSinkProcess(t, fmt.Sprintf("sink-%d", i), text)
		time.Sleep(time.Duration(800+rng.IntN(2500)) * time.Millisecond)
		p.kill(t)
	}
	producing.Wait()
	last := startSinkProcess(t, "sink-last", text)
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 3*time.Minute)
	last.terminate(t, 30*time.Second)
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// TestTableSinkMembers runs `pqsink run` processes in one group on a
// PostgreSQL catalog while records arrive: two members, a third joining,
// one leaving cleanly and one killed, so that partitions move between
// members that all commit to one table; at the end the table holds every
// record once.
func TestTableSinkMembers(t *testing.T) {
	const partitions, n = 6, 18000
	env := newTableEnv(t, "members")
	env.uri = postgres.Start(t).CreateDatabase(t, "lake")
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, env.topic)
	text := env.config(t, broker.Brokers, "members", "1s", 1500)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 2s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 300ms")

	producing := produceSlowly(t, broker.Brokers, env.topic, n, 30, 15*time.Second)
	a := startSinkProcess(t, "sink-a", text)
	b := startSinkProcess(t, "sink-b", text)
	time.Sleep(4 * time.Second)
	c := startSinkProcess(t, "sink-c", text)
	time.Sleep(4 * time.Second)
	a.waitLog(t, "generation started", time.Minute)
	a.terminate(t, 30*time.Second)
	time.Sleep(2 * time.Second)
	b.kill(t)
	d := startSinkProcess(t, "sink-d", text)
	producing.Wait()
	for _, p := range []*sinkProcess{c, d} {
		p.waitLog(t, "generation started", time.Minute)
	}
	env.waitRows(t, n, 3*time.Minute)
	c.terminate(t, 30*time.Second)
	d.terminate(t, 30*time.Second)
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// TestTableSinkVariant: format.type variant lands in a format version 3
// table with a variant column, which iceberg-go scans: every record once.
func TestTableSinkVariant(t *testing.T) {
	for _, shred := range []string{"none", "auto"} {
		t.Run(shred, func(t *testing.T) {
			const partitions, n = 2, 1200
			env := newTableEnv(t, "docs-"+shred)
			env.variant, env.shred = true, shred
			broker := kafkatest.Start(t, partitions, env.topic)
			produceEvents(t, broker.Brokers, env.topic, 0, n)
			_, stop := startSink(t, env.config(t, broker.Brokers, "var", "1s", 500))
			env.waitRows(t, n, 2*time.Minute)
			stop()
			env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
			// Shredded or not, every file's columns carry the table's ids:
			// the variant column's, the envelope's.
			files := env.files(t)
			shredded := 0
			for _, key := range files {
				path := filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), key)
				for _, e := range parquetElements(t, path) {
					if e.name == "typed_value" {
						shredded++
						break
					}
				}
			}
			if want := map[string]int{"none": 0, "auto": len(files)}[shred]; shredded != want || len(files) == 0 {
				t.Errorf("%d of %d files have shredded columns, want %d", shredded, len(files), want)
			}
		})
	}
}

// TestTableCheckChangesNothing: `pqsink run --check` with a table section
// looks at the catalog and changes nothing: a table that does not exist is
// not created, one whose schema the records would evolve is not evolved,
// and one partitioned otherwise fails the check.
func TestTableCheckChangesNothing(t *testing.T) {
	env := newTableEnv(t, "checked")
	broker := kafkatest.Start(t, 1, env.topic)
	text := env.config(t, broker.Brokers, "chk", "1s", 100)
	check := func(text string) error {
		t.Helper()
		cfg, err := config.Parse([]byte(text), os.LookupEnv)
		if err != nil {
			t.Fatal(err)
		}
		sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler), connector.CheckOnly())
		if err == nil {
			sink.Close()
		}
		return err
	}
	if err := check(text); err != nil {
		t.Fatalf("check of a new table: %v", err)
	}
	if _, err := os.Stat(strings.TrimPrefix(env.warehouse, "file://") + "/kafka/" + env.topic); !os.IsNotExist(err) {
		t.Errorf("the check created the table's folder (%v)", err)
	}

	// The table exists once a sink ran; a schema file with a new field
	// checks fine and does not evolve it.
	produceEvents(t, broker.Brokers, env.topic, 0, 10)
	_, stop := startSink(t, text)
	env.waitRows(t, 10, time.Minute)
	stop()
	before := env.load(t).Schema()
	dir := t.TempDir()
	wider := strings.TrimSuffix(strings.TrimSpace(events.Schema), "}") + "  optional binary channel (STRING);\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "events.schema"), []byte(wider), 0o644); err != nil {
		t.Fatal(err)
	}
	i := strings.Index(text, "  schema_file: ")
	j := i + strings.Index(text[i:], "\n") + 1
	if err := check(text[:i] + "  schema_file: " + filepath.Join(dir, "events.schema") + "\n" + text[j:]); err != nil {
		t.Errorf("check of a schema the table can evolve to: %v", err)
	}
	if after := env.load(t).Schema(); !after.Equals(before) {
		t.Errorf("the check evolved the table: %v", after)
	}
	hourly := strings.Replace(text, `["day(_kafka.timestamp)"]`, `["hour(_kafka.timestamp)"]`, 1)
	if err := check(hourly); err == nil || !strings.Contains(err.Error(), "is partitioned by") {
		t.Errorf("check with another partition_by than the table's: %v", err)
	}
}
