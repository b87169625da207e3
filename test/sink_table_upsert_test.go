package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// The upsert tests write a changelog (inserts, updates, deletes as
// tombstones, and with the Debezium envelope c/u/d events) of a few
// hundred keys into an upsert table, and compare the table, as
// iceberg-go scans it (and icebird for format version 2), with the fold
// of the changelog: one row per key whose last change is a value, with
// that value, and none for a deleted key.

// upsertRowSchema is the rows' schema: id is the key.
const upsertRowSchema = `message row {
  required int64 id;
  required binary name (STRING);
  required int64 version;
}`

// changelog makes the changes of keys keys, each key in the Kafka
// partition id % partitions, and keeps their fold. A minimal generator:
// seeded, with updates and deletes of keys seen before.
type changelog struct {
	rng        *rand.Rand
	keys       int
	partitions int
	debezium   bool
	seq        int64
	live       map[int64]int64 // key -> version of its row
}

func newChangelog(seed uint64, keys, partitions int, debezium bool) *changelog {
	return &changelog{rng: rand.New(rand.NewPCG(seed, 7)), keys: keys, partitions: partitions, debezium: debezium, live: map[int64]int64{}}
}

// next returns the next change as a Kafka message to its key's partition.
func (c *changelog) next() kafka.Message {
	c.seq++
	id := int64(c.rng.IntN(c.keys))
	key := []byte(fmt.Sprintf(`{"id":%d}`, id))
	msg := kafka.Message{Key: key, Partition: int(id) % c.partitions, Time: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC).Add(time.Duration(c.seq) * time.Second)}
	_, exists := c.live[id]
	row := func(v int64) map[string]any {
		return map[string]any{"id": id, "name": "n" + strconv.FormatInt(v, 10), "version": v}
	}
	del := exists && c.rng.IntN(5) == 0
	switch {
	case del && c.debezium && c.rng.IntN(2) == 0:
		// A Debezium delete event, by its before.
		msg.Value = mustJSON(map[string]any{"before": row(c.live[id]), "after": nil, "op": "d", "source": map[string]any{"ts_ms": c.seq}, "ts_ms": c.seq})
		delete(c.live, id)
	case del:
		msg.Value = nil // a tombstone
		delete(c.live, id)
	default:
		v := c.seq
		if c.debezium {
			op := "c"
			if exists {
				op = "u"
			}
			msg.Value = mustJSON(map[string]any{"before": nil, "after": row(v), "op": op, "source": map[string]any{"ts_ms": c.seq}, "ts_ms": c.seq})
		} else {
			msg.Value = mustJSON(row(v))
		}
		c.live[id] = v
	}
	return msg
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// produceChanges writes n changes of c to topic, each to its key's
// partition, in order.
func produceChanges(t *testing.T, brokers []string, topic string, c *changelog, n int) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic,
		Balancer:  kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
		BatchSize: 200, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr,
	}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = c.next()
	}
	for len(msgs) > 0 {
		k := min(len(msgs), 200)
		if err := w.WriteMessages(context.Background(), msgs[:k]...); err != nil {
			t.Fatalf("producing: %v", err)
		}
		msgs = msgs[k:]
	}
}

// upsertEnv is an upsert table in a file:// warehouse with a SQLite
// catalog.
type upsertEnv struct {
	*tableEnv
	version  int
	debezium bool
	schema   string
	letters  string // the dead letters' file:// URL
}

func newUpsertEnv(t *testing.T, topic string, version int, debezium bool) *upsertEnv {
	e := &upsertEnv{tableEnv: newTableEnv(t, topic), version: version, debezium: debezium, letters: "file://" + t.TempDir()}
	e.schema = filepath.Join(t.TempDir(), "row.schema")
	if err := os.WriteFile(e.schema, []byte(upsertRowSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *upsertEnv) config(brokers []string, group string, records int) string {
	envelope := ""
	if e.debezium {
		envelope = "  envelope: debezium\n"
	}
	return fmt.Sprintf(`kafka:
  brokers: [%s]
  group: %s
  topics: [%s]
  start: earliest
  session_timeout: 6s
  heartbeat_interval: 500ms
  rebalance_timeout: 10s
  fetch: {max_wait: 100ms}
store:
  url: %s
format:
  type: json
  schema_file: %s
%senvelope: true
rotate:
  records: %d
  interval: 500ms
memory:
  limit: 256MiB
shutdown_timeout: 20s
dead_letter: {url: %s}
table:
  format: iceberg
  catalog: {type: sql, uri: %s}
  namespace: kafka
  commit_interval: 1s
  format_version: %d
  mode: upsert
  key: [id]
`, strings.Join(brokers, ", "), group, e.topic, e.warehouse, e.schema, envelope, records, e.letters, e.uri, e.version)
}

// upsertRow is a row of the table: its key and version, and where its
// record is.
type upsertRow struct {
	id, version int64
	name        string
	offset      int64
	partition   int32
}

// scanRows reads the table's current snapshot with iceberg-go; nil when
// the table does not exist yet.
func (e *upsertEnv) scanRows(t *testing.T) []upsertRow {
	t.Helper()
	tbl, done, err := e.openTable(t)
	defer done()
	if err != nil {
		return nil
	}
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scanning the table: %v", err)
	}
	defer at.Release()
	col := func(name string) *arrow.Column {
		for i := 0; i < int(at.NumCols()); i++ {
			if at.Column(i).Name() == name {
				return at.Column(i)
			}
		}
		t.Fatalf("the table has no column %s: %v", name, at.Schema())
		return nil
	}
	ids, versions, names, env := col("id"), col("version"), col("name"), col("_kafka")
	var rows []upsertRow
	for ch := range ids.Data().Chunks() {
		ic, vc := ids.Data().Chunk(ch).(*array.Int64), versions.Data().Chunk(ch).(*array.Int64)
		nc := names.Data().Chunk(ch).(*array.String)
		st := env.Data().Chunk(ch).(*array.Struct)
		typ := st.DataType().(*arrow.StructType)
		pi, _ := typ.FieldIdx("partition")
		oi, _ := typ.FieldIdx("offset")
		parts, offs := st.Field(pi).(*array.Int32), st.Field(oi).(*array.Int64)
		for i := 0; i < ic.Len(); i++ {
			rows = append(rows, upsertRow{id: ic.Value(i), version: vc.Value(i), name: nc.Value(i), offset: offs.Value(i), partition: parts.Value(i)})
		}
	}
	return rows
}

// diff compares rows with the fold: "" when they are the same.
func foldDiff(rows []upsertRow, fold map[int64]int64) string {
	var problems []string
	seen := map[int64]int{}
	for _, r := range rows {
		seen[r.id]++
		want, ok := fold[r.id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("key %d has a row (version %d, %d[%d]) but is deleted", r.id, r.version, r.partition, r.offset))
		case r.version != want || r.name != "n"+strconv.FormatInt(want, 10):
			problems = append(problems, fmt.Sprintf("key %d has version %d (%s), want %d", r.id, r.version, r.name, want))
		}
	}
	for id, n := range seen {
		if n > 1 {
			problems = append(problems, fmt.Sprintf("key %d has %d rows", id, n))
		}
	}
	for id := range fold {
		if seen[id] == 0 {
			problems = append(problems, fmt.Sprintf("key %d has no row", id))
		}
	}
	if len(problems) > 10 {
		problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
	}
	return strings.Join(problems, "\n")
}

// waitFold waits until the table equals the fold, and fails with the
// difference when it does not within the time.
func (e *upsertEnv) waitFold(t *testing.T, fold map[int64]int64, within time.Duration) []upsertRow {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rows := e.scanRows(t)
		d := foldDiff(rows, fold)
		if d == "" {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v the table (%d rows) is not the fold of the changelog (%d keys):\n%s", within, len(rows), len(fold), d)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestTableUpsert: a changelog into 3 partitions of an upsert table, on
// format version 2 (position delete files) with values and tombstones,
// and on version 3 (deletion vectors) with Debezium events; the table
// equals the fold after a first run, and after a restart (the new sink
// loads the key index from the table's state) and more changes to the
// same keys. On version 2, icebird, an independent reader applying the
// position deletes, reads the same rows.
func TestTableUpsert(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  int
		debezium bool
	}{
		{"v2 values and tombstones", 2, false},
		{"v3 debezium", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions, keys, n = 3, 150, 1500
			topic := "up" + strconv.Itoa(tc.version)
			env := newUpsertEnv(t, topic, tc.version, tc.debezium)
			broker := kafkatest.Start(t, partitions, topic)
			text := env.config(broker.Brokers, "up", 300)
			log := newChangelog(uint64(tc.version), keys, partitions, tc.debezium)

			produceChanges(t, broker.Brokers, topic, log, n)
			// Bad input, each a dead letter with its reason: a value
			// without its key field, a tombstone whose Kafka key is not
			// one, and with Debezium a truncate and an unknown op.
			bad := []kafka.Message{
				{Key: []byte(`{"id":1}`), Value: []byte(`{"name":"x","version":1}`)},
				{Key: []byte(`not a key`)},
			}
			wantRejects := map[string]int64{"key": 2}
			if tc.debezium {
				bad[0].Value = mustJSON(map[string]any{"before": nil, "after": map[string]any{"name": "x", "version": 1}, "op": "c"})
				bad = append(bad, kafka.Message{Key: []byte(`{"id":1}`), Value: []byte(`{"before":null,"after":null,"op":"t"}`)},
					kafka.Message{Key: []byte(`{"id":1}`), Value: []byte(`{"before":null,"after":{"id":1,"name":"x","version":1},"op":"x"}`)})
				wantRejects["change"] = 2
			}
			produceTo(t, broker.Brokers, topic, 1, bad)
			sink, stop := startSink(t, text)
			env.waitFold(t, log.live, 2*time.Minute)
			stop()
			first := sink.Stats().Snapshot()
			if first.UpsertReplaced == 0 || first.UpsertDeleted == 0 || first.TableRowsDeleted == 0 || first.TableMissingRows != 0 {
				t.Errorf("first run: %d rows replaced, %d deleted, %d deleted by commits, %d missing", first.UpsertReplaced, first.UpsertDeleted, first.TableRowsDeleted, first.TableMissingRows)
			}
			for reason, want := range wantRejects {
				if got := first.Rejects[[2]string{reason, "dead_letter"}]; got != want {
					t.Errorf("%d records dead-lettered with reason %s, want %d", got, reason, want)
				}
			}
			if first.IndexKeys != 0 {
				t.Errorf("after the sink stopped, its indexes hold %d keys", first.IndexKeys)
			}
			if got := indexObjects(t, env.warehouse, topic); got == 0 {
				t.Error("no key index snapshot in the table's storage")
			}

			// Another sink: it loads the key index, so that the updates of
			// keys written by the first replace their rows.
			produceChanges(t, broker.Brokers, topic, log, n)
			_, stop = startSink(t, text)
			rows := env.waitFold(t, log.live, 2*time.Minute)
			stop()
			if len(rows) == 0 {
				t.Fatal("the fold is empty; the test needs live keys")
			}
			if tc.version == 2 {
				checkIcebirdFold(t, env, log.live)
			}
		})
	}
}

// indexObjects counts the key index snapshots under the table's
// location.
func indexObjects(t *testing.T, warehouse, topic string) int {
	t.Helper()
	root := filepath.Join(strings.TrimPrefix(warehouse, "file://"), "kafka", topic, "index")
	n := 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".pqkidx") {
			n++
		}
		return nil
	})
	return n
}

// TestTableUpsertCrashLoop kills `pqsink run` with SIGKILL at random
// moments while changes arrive and the table is committed every second:
// at any kill, files may be uploaded and not committed, an index
// snapshot written and not named, a commit made and its Kafka offsets
// not. After a last clean run the table equals the fold.
func TestTableUpsertCrashLoop(t *testing.T) {
	const partitions, keys, n, kills = 3, 200, 6000, 5
	const topic = "upcrash"
	env := newUpsertEnv(t, topic, 3, false)
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, topic)
	text := env.config(broker.Brokers, "loop", 400)
	text = replaceLine(text, "  session_timeout: 6s", "  session_timeout: 1s")
	text = replaceLine(text, "  heartbeat_interval: 500ms", "  heartbeat_interval: 200ms")
	text = replaceLine(text, "  rebalance_timeout: 10s", "  rebalance_timeout: 3s")
	log := newChangelog(11, keys, partitions, false)

	pqsinkBinary(t) // built before the changes start to arrive
	// The runs' key index spill folders go to a folder of this test: the
	// killed runs leave theirs, and the next run removes them.
	spill := t.TempDir()
	t.Setenv("TMPDIR", spill)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < 20; i++ {
			produceChanges(t, broker.Brokers, topic, log, n/20)
			time.Sleep(700 * time.Millisecond)
		}
	})
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	committed := 0
	for i := range kills {
		p := startSinkProcess(t, fmt.Sprintf("sink-%d", i), text)
		time.Sleep(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
		p.kill(t)
		if strings.Contains(p.log.String(), `msg="table commit"`) {
			committed++
		}
	}
	wg.Wait()
	// Killed between commits, not only before the first: a new owner
	// then loads an index that snapshots of earlier runs make up.
	if committed < 2 {
		t.Errorf("%d of the %d killed runs made a table commit; the test needs runs killed between commits", committed, kills)
	}
	last := startSinkProcess(t, "sink-last", text)
	last.waitLog(t, "generation started", time.Minute)
	env.waitFold(t, log.live, 3*time.Minute)
	last.terminate(t, 30*time.Second)
	if !strings.Contains(last.log.String(), "key index loaded") {
		t.Error("the last run logged no key index loaded")
	}
	env.waitFold(t, log.live, 10*time.Second)
	if left, _ := filepath.Glob(filepath.Join(spill, "keyindex-*")); len(left) > 0 {
		t.Errorf("after a clean run, the killed runs' key index spill folders are left: %v", left)
	}
}

// checkIcebirdFold reads the table with icebird, which applies position
// delete files by its own code, and compares its rows with the fold.
func checkIcebirdFold(t *testing.T, e *upsertEnv, fold map[int64]int64) {
	t.Helper()
	ctx := context.Background()
	tbl := e.load(t)
	dir := filepath.Join(testutil.RepoRoot(t), "test", "hyparquet")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("icebird harness: node is not installed (%v); install Node.js 20+, then %s", err, testutil.ProvisionHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "icebird", "package.json")); err != nil {
		t.Fatalf("icebird harness: test/hyparquet/node_modules/icebird is missing: %s", testutil.ProvisionHint)
	}
	column := func(name string) []int64 {
		cmd := exec.CommandContext(ctx, node, "icebird_table.mjs", tbl.MetadataLocation(), name)
		cmd.Dir = dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("icebird: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
		var out []int64
		for _, line := range strings.Fields(stdout.String()) {
			var s string
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("icebird: line %q: %v", line, err)
			}
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("icebird: line %q: %v", line, err)
			}
			out = append(out, v)
		}
		return out
	}
	ids, versions := column("id"), column("version")
	if len(ids) != len(versions) {
		t.Fatalf("icebird: %d ids, %d versions", len(ids), len(versions))
	}
	rows := make([]upsertRow, len(ids))
	for i := range ids {
		rows[i] = upsertRow{id: ids[i], version: versions[i], name: "n" + strconv.FormatInt(versions[i], 10)}
	}
	if d := foldDiff(rows, fold); d != "" {
		t.Errorf("icebird reads %d rows that are not the fold:\n%s", len(rows), d)
	}
}

// produceRows writes, for each id of ids, a value of version version to
// the id's partition.
func produceRows(t *testing.T, brokers []string, topic string, partitions int, ids []int64, version int64, c *changelog) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{
		Addr: kafka.TCP(brokers...), Topic: topic,
		Balancer:  kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
		BatchSize: 200, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr,
	}
	defer w.Close()
	var msgs []kafka.Message
	for _, id := range ids {
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf(`{"id":%d}`, id)), Partition: int(id) % partitions, Time: time.Now(),
			Value: mustJSON(map[string]any{"id": id, "name": "n" + strconv.FormatInt(version, 10), "version": version})})
		c.live[id] = version
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing: %v", err)
	}
}

// TestTableUpsertMissingRows: another engine deletes rows of an upsert
// table copy-on-write (the files are rewritten without them), and later
// records replace those keys: the key index names rows no file holds.
// With table.missing_rows: fail (the default) the partitions stop with an
// error that says what to do, nothing of them is committed and no key has
// two rows; with skip, the rows count as deleted already and the table
// is the fold again.
func TestTableUpsertMissingRows(t *testing.T) {
	const partitions, topic = 3, "upmissing"
	ctx := context.Background()
	env := newUpsertEnv(t, topic, 2, false)
	broker := kafkatest.Start(t, partitions, topic)
	text := env.config(broker.Brokers, "miss", 1000)
	log := newChangelog(1, 0, partitions, false)
	var ids []int64
	for id := range int64(60) {
		ids = append(ids, id)
	}
	produceRows(t, broker.Brokers, topic, partitions, ids, 1, log)
	_, stop := startSink(t, text)
	env.waitFold(t, log.live, 2*time.Minute)
	stop()

	// Another engine deletes keys 0 to 8 copy-on-write.
	gone := ids[:9]
	tx := env.load(t).NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: itable.WriteModeCopyOnWrite}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), gone...), nil); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	for _, id := range gone {
		delete(log.live, id)
	}
	env.waitFold(t, log.live, 10*time.Second)

	// Keys 0 to 29 change: those of 0 to 8 replace rows that are gone.
	produceRows(t, broker.Brokers, topic, partitions, ids[:30], 2, log)
	cfg, err := config.Parse([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	sink, err := connector.New(rctx, cfg, slog.New(slog.NewTextHandler(logTail(t, "stopping sink"), nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sink.Run(rctx) }()
	deadline := time.Now().Add(2 * time.Minute)
	for len(sink.Failed()) < partitions && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	failed := sink.Failed()
	cancel()
	if err := <-done; err == nil || !strings.Contains(err.Error(), "stopped by errors") {
		t.Errorf("the sink's run ended with %v, want the stopped partitions", err)
	}
	sink.Close()
	if len(failed) != partitions {
		t.Fatalf("%d partitions stopped (%v), want all %d: each has keys whose rows are gone", len(failed), failed, partitions)
	}
	for k, err := range failed {
		if !strings.Contains(err.Error(), "no data file of the table holds") || !strings.Contains(err.Error(), "table.missing_rows: skip") {
			t.Errorf("%s: %v; want the missing rows and what to do", k, err)
		}
	}
	if st := sink.Stats().Snapshot(); st.TableMissingRows < int64(len(gone)) {
		t.Errorf("%d missing rows counted, want at least %d", st.TableMissingRows, len(gone))
	}
	rows := env.scanRows(t)
	seen := map[int64]bool{}
	for _, r := range rows {
		if seen[r.id] {
			t.Errorf("key %d has two rows", r.id)
		}
		seen[r.id] = true
		if r.version != 1 {
			t.Errorf("key %d has version %d: a stopped partition committed", r.id, r.version)
		}
	}

	// Told to, the sink counts those rows as deleted already.
	_, stop = startSink(t, strings.Replace(text, "  key: [id]\n", "  key: [id]\n  missing_rows: skip\n", 1))
	env.waitFold(t, log.live, 2*time.Minute)
	stop()
}

// TestTableUpsertCheck: pqsink run --check reports a table.key the
// records' schema cannot give, naming the field, and accepts a good one.
func TestTableUpsertCheck(t *testing.T) {
	env := newUpsertEnv(t, "upcheck", 2, true)
	good := env.config([]string{"127.0.0.1:1"}, "check", 100)
	for _, c := range []struct {
		name, key, want string
	}{
		{"missing", "[nope]", "key field nope: not a field of the schema"},
		{"not required", "[id, note]", "key field note: optional"},
		{"good", "[id]", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(good, "  key: [id]\n", "  key: "+c.key+"\n", 1)
			schema := strings.Replace(upsertRowSchema, "required int64 version;", "required int64 version;\n  optional binary note (STRING);", 1)
			if err := os.WriteFile(env.schema, []byte(schema), 0o644); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "pqsink.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(pqsinkBinary(t), "run", "--check", "--offline", "--config", path).CombinedOutput()
			if c.want == "" {
				if err != nil {
					t.Fatalf("run --check: %v\n%s", err, out)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "table.mode upsert") {
				t.Errorf("run --check: %v\n%s\nwant an error with %q", err, out, c.want)
			}
		})
	}
}

// produceTo writes msgs to one partition of topic.
func produceTo(t *testing.T, brokers []string, topic string, partition int, msgs []kafka.Message) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Transport: tr, RequiredAcks: kafka.RequireAll,
		Balancer: kafka.BalancerFunc(func(kafka.Message, ...int) int { return partition })}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatalf("producing: %v", err)
	}
}
