package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkFollowsSpecChange: two `pqsink run` members follow the
// spec of their table (day(_kafka.timestamp); partition_by is not set)
// while another engine adds bucket[4](id) to it, as ALTER TABLE ... ADD
// PARTITION FIELD does, with records arriving. The files written by the
// old spec are committed with it; each partition then writes by the new
// one; one member is killed (SIGKILL) right after its first partition
// moved, and another takes its place. At the end the table holds every
// record once (iceberg-go, and DuckDB over the files its snapshot
// lists); the files of each spec lie in its folders, with its spec id in
// their manifest entries; every partition's last records are in files of
// the new spec; and scans filtered on id prune by its bucket.
func TestTableSinkFollowsSpecChange(t *testing.T) {
	const partitions, n = 4, 12000
	env := newTableEnv(t, "respec")
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.GroupMinSessionTimeout(500 * time.Millisecond)}, partitions, env.topic)
	withSpec := env.config(t, broker.Brokers, "respec", "1s", 300)
	withSpec = replaceLine(withSpec, "  session_timeout: 6s", "  session_timeout: 2s")
	withSpec = replaceLine(withSpec, "  heartbeat_interval: 500ms", "  heartbeat_interval: 300ms")
	// A sink with partition_by creates the table; the members follow it.
	cfg, err := config.Parse([]byte(withSpec), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	text := replaceLine(withSpec, `  partition_by: ["day(_kafka.timestamp)"]`, "")

	producing := produceSlowly(t, broker.Brokers, env.topic, n, 40, 24*time.Second)
	a := startSinkProcess(t, "sink-a", text)
	b := startSinkProcess(t, "sink-b", text)
	env.waitRows(t, 1, time.Minute)

	tbl := env.load(t)
	oldSpec := tbl.Spec()
	tx := tbl.NewTransaction()
	if err := tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	newSpec := tbl.Spec()
	changed := fmt.Sprintf("old_spec=%d new_spec=%d", oldSpec.ID(), newSpec.ID())
	b.waitLog(t, "partition follows the table's new partition spec", time.Minute)
	b.kill(t)
	c := startSinkProcess(t, "sink-c", text)
	producing.Wait()
	for _, p := range []*sinkProcess{a, c} {
		p.waitLog(t, "generation started", time.Minute)
	}
	env.waitRows(t, n, 3*time.Minute)
	a.terminate(t, 30*time.Second)
	c.terminate(t, 30*time.Second)
	for _, p := range []*sinkProcess{a, b} {
		log := p.log.String()
		if !regexp.MustCompile(`msg="table: its partition spec changed[^"]*" table=kafka.respec ` + changed).MatchString(log) {
			t.Errorf("%s did not log the change of spec (%s)", p.name, changed)
		}
		if !strings.Contains(log, "partition follows the table's new partition spec") {
			t.Errorf("%s moved no partition to the new spec", p.name)
		}
	}
	// A partition moves with its open files finished; one between two
	// batches of records has none (files rotate every 500ms), but not all
	// of them.
	if !strings.Contains(a.log.String()+b.log.String()+c.log.String(), "reason=spec") {
		t.Error("no member finished a file to move to the new spec")
	}

	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	tbl = env.load(t)
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warehouse := strings.TrimPrefix(env.warehouse, "file://")
	oldFolders := regexp.MustCompile(`^kafka/respec/data/_kafka_timestamp_day=2026-11-2[34]/[^/]+$`)
	newFolders := regexp.MustCompile(`^kafka/respec/data/_kafka_timestamp_day=2026-11-2[34]/id_bucket=([0-3])/[^/]+$`)
	bySpec := map[int32]int{}
	var quoted []string
	lastFile := map[int32]struct {
		last int64
		spec int32
	}{}
	for _, task := range tasks {
		f := task.File
		rel := strings.TrimPrefix(strings.TrimPrefix(f.FilePath(), "file://"), warehouse+"/")
		quoted = append(quoted, duckdb.Quote(warehouse+"/"+rel))
		bySpec[f.SpecID()]++
		switch f.SpecID() {
		case int32(oldSpec.ID()):
			if !oldFolders.MatchString(rel) {
				t.Errorf("file %s of spec %d is not in its day folder alone", rel, f.SpecID())
			}
		case int32(newSpec.ID()):
			m := newFolders.FindStringSubmatch(rel)
			if m == nil {
				t.Errorf("file %s of spec %d is not in day and bucket folders", rel, f.SpecID())
			} else if got := fmt.Sprint(f.Partition()); !strings.Contains(got, ":"+m[1]+" ") && !strings.Contains(got, ":"+m[1]+"]") {
				t.Errorf("file %s: partition %s, its folder says bucket %s", rel, got, m[1])
			}
		default:
			t.Errorf("file %s has spec %d, neither the old one (%d) nor the new (%d)", rel, f.SpecID(), oldSpec.ID(), newSpec.ID())
		}
		var p int32
		var first int64
		if _, err := fmt.Sscanf(filepath.Base(rel), env.topic+"+%d+%d.parquet", &p, &first); err != nil {
			t.Fatalf("file %s: %v", rel, err)
		}
		if first >= lastFile[p].last {
			lastFile[p] = struct {
				last int64
				spec int32
			}{first, f.SpecID()}
		}
	}
	t.Logf("files by spec: %v; resumed by an old spec: %v", bySpec, strings.Contains(c.log.String()+a.log.String(), "partition resumes by the partition spec of its uploaded files"))
	if bySpec[int32(oldSpec.ID())] == 0 || bySpec[int32(newSpec.ID())] == 0 {
		t.Errorf("files by spec: %v, want files of both %d and %d", bySpec, oldSpec.ID(), newSpec.ID())
	}
	for p := range int32(partitions) {
		if lastFile[p].spec != int32(newSpec.ID()) {
			t.Errorf("partition %d's last file (from offset %d) has spec %d, want the new one, %d", p, lastFile[p].last, lastFile[p].spec, newSpec.ID())
		}
	}

	// DuckDB over the snapshot's files: every record once.
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT "_kafka"."partition" AS p, "_kafka"."offset" AS o FROM read_parquet([`+strings.Join(quoted, ", ")+`])`)
	seen := map[string]bool{}
	for i := range res.Rows {
		id := fmt.Sprintf("%v/%v", res.Value(i, "p"), res.Value(i, "o"))
		if _, ok := truth[id]; !ok {
			t.Errorf("the snapshot's files hold %s, which Kafka does not", id)
		} else if seen[id] {
			t.Errorf("%s is in the snapshot's files twice", id)
		}
		seen[id] = true
	}
	if len(seen) != len(truth) {
		t.Errorf("the snapshot's files hold %d distinct records, Kafka %d", len(seen), len(truth))
	}

	// Scans filtered on id prune the new spec's files by their bucket.
	type event struct{ ID int64 }
	events := map[string]event{}
	for id, p := range truth {
		var e event
		if err := json.Unmarshal(p.Value, &e); err != nil {
			t.Fatal(err)
		}
		events[id] = e
	}
	bucket := func(id int64) string {
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 4}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(id), Valid: true}).Val.Any())
	}
	checkFilteredScans(t, tbl, len(tasks), events, []string{"id"}, []scanCase[event]{
		{"id = 17", iceberg.EqualTo(iceberg.Reference("id"), int64(17)), func(e event) bool { return e.ID == 17 }},
		{"id in 3, 150", iceberg.IsIn(iceberg.Reference("id"), int64(3), int64(150)), func(e event) bool { return e.ID == 3 || e.ID == 150 }},
	})
	planned, err := tbl.Scan(itable.WithRowFilter(iceberg.EqualTo(iceberg.Reference("id"), int64(17)))).PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range planned {
		if task.File.SpecID() != int32(newSpec.ID()) {
			continue
		}
		if m := newFolders.FindStringSubmatch(strings.TrimPrefix(strings.TrimPrefix(task.File.FilePath(), "file://"), warehouse+"/")); m == nil || m[1] != bucket(17) {
			t.Errorf("a scan for id 17 (bucket %s) kept %s", bucket(17), task.File.FilePath())
		}
	}
}

// TestTableSinkResumesBySpecOfItsFiles: a member is killed (SIGKILL)
// right after another engine changed the table's spec (bucket[2](id),
// then day(_kafka.timestamp) added), before its next commit, while the
// table's state holds, beyond a partition's committed offset, paths of
// files uploaded by the old spec. The next run finds the new spec the
// default, but resumes each such partition by the spec of its paths (the
// state's skip set names them: under the new spec's paths the records
// they hold would be written again) and moves it to the new spec at its
// first clean point. The table holds every record once.
func TestTableSinkResumesBySpecOfItsFiles(t *testing.T) {
	const partitions, n = 3, 9000
	env := newTableEnv(t, "resumespec")
	broker := kafkatest.Start(t, partitions, env.topic)
	withSpec := env.config(t, broker.Brokers, "resumespec", "4s", 60)
	withSpec = strings.Replace(withSpec, `["day(_kafka.timestamp)"]`, `["bucket[2](id)"]`, 1)
	withSpec = replaceLine(withSpec, "  interval: 500ms", "  interval: 20s")
	cfg, err := config.Parse([]byte(withSpec), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	text := replaceLine(withSpec, `  partition_by: ["bucket[2](id)"]`, "")

	producing := produceSlowly(t, broker.Brokers, env.topic, n, 30, 15*time.Second)
	first := startSinkProcess(t, "sink-first", text)
	// Wait for a snapshot whose state has paths beyond a committed
	// offset, then change the spec and kill the member before its next
	// commit.
	deadline := time.Now().Add(time.Minute)
	var seenSnap int64
	for {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot's state had paths beyond a committed offset within a minute")
		}
		time.Sleep(50 * time.Millisecond)
		tbl := env.load(t)
		snap := tbl.CurrentSnapshot()
		if snap == nil || snap.SnapshotID == seenSnap {
			continue
		}
		seenSnap = snap.SnapshotID
		doc, ok := strings.CutPrefix(snap.Summary.Properties["pqsink.state"], "pqsink1:")
		if !ok {
			continue
		}
		var state struct {
			Partitions []struct{ Paths map[string]int64 }
		}
		if err := json.Unmarshal([]byte(doc), &state); err != nil {
			t.Fatal(err)
		}
		paths := 0
		for _, p := range state.Partitions {
			paths += len(p.Paths)
		}
		if paths == 0 {
			continue
		}
		tx := tbl.NewTransaction()
		if err := tx.UpdateSpec(true).AddField("_kafka.timestamp", iceberg.DayTransform{}, "_kafka_timestamp_day").Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		first.kill(t)
		break
	}
	if strings.Contains(first.log.String(), "its partition spec changed") {
		t.Fatal("the first member noticed the new spec before it was killed; the test needs it not to")
	}
	producing.Wait()
	last := startSinkProcess(t, "sink-last", replaceLine(text, "  interval: 20s", "  interval: 500ms"))
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 3*time.Minute)
	last.terminate(t, 30*time.Second)
	log := last.log.String()
	if !strings.Contains(log, "partition resumes by the partition spec of its uploaded files") {
		t.Error("no partition resumed by the old spec: the window between the change and a commit was not exercised")
	}
	if !strings.Contains(log, "partition follows the table's new partition spec") {
		t.Error("no partition moved to the new spec")
	}
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// TestTableSinkKeepsSpecItCannotFollow: when another engine changes the
// spec of a table whose spec the sink does not follow, the sink keeps
// writing by the spec it writes by, which is still one of the table's,
// and /readyz says why: with table.partition_by set, the configured spec
// (a restart would refuse the table as it is); without it, a new spec
// whose field the sink cannot put in a path (identity(_kafka.offset)).
// Every record is in the table once, in files of the spec before.
func TestTableSinkKeepsSpecItCannotFollow(t *testing.T) {
	for _, c := range []struct {
		name, topic string
		follow      bool
		add         func(*itable.UpdateSpec) *itable.UpdateSpec
		ready       string
	}{
		{"partition_by", "keepcfg", false,
			func(u *itable.UpdateSpec) *itable.UpdateSpec {
				return u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket")
			},
			`table.partition_by says ["day(_kafka.timestamp)"] (spec 0): the sink keeps writing by partition_by`},
		{"unwritable", "keepunw", true,
			func(u *itable.UpdateSpec) *itable.UpdateSpec { return u.AddIdentity("_kafka.offset") },
			"which the sink cannot follow, and it keeps writing by spec 0: table kafka.keepunw is partitioned by"},
	} {
		t.Run(c.name, func(t *testing.T) {
			const partitions, n = 2, 600
			env := newTableEnv(t, c.topic)
			broker := kafkatest.Start(t, partitions, env.topic)
			text := env.config(t, broker.Brokers, c.topic, "1s", 200)
			if c.follow {
				cfg, err := config.Parse([]byte(text), os.LookupEnv)
				if err != nil {
					t.Fatal(err)
				}
				sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
				if err != nil {
					t.Fatal(err)
				}
				sink.Close()
				text = replaceLine(text, `  partition_by: ["day(_kafka.timestamp)"]`, "")
			}
			produceEvents(t, broker.Brokers, env.topic, 0, n)
			sink, stop := startSink(t, text)
			env.waitRows(t, n, 2*time.Minute)

			tx := env.load(t).NewTransaction()
			if err := c.add(tx.UpdateSpec(true)).Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			produceEvents(t, broker.Brokers, env.topic, n, n)
			env.waitRows(t, 2*n, 2*time.Minute)
			deadline := time.Now().Add(30 * time.Second)
			for err := sink.Ready(); err == nil || !strings.Contains(err.Error(), c.ready); err = sink.Ready() {
				if time.Now().After(deadline) {
					t.Fatalf("/readyz says %v, want an error with %q", err, c.ready)
				}
				time.Sleep(200 * time.Millisecond)
			}
			stop()
			env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
			tbl := env.load(t)
			tasks, err := tbl.Scan().PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				if task.File.SpecID() != 0 {
					t.Errorf("file %s has spec %d, want 0", task.File.FilePath(), task.File.SpecID())
				}
			}
			if spec := tbl.Spec(); spec.ID() == 0 {
				t.Error("the table's default spec is still 0")
			}
		})
	}
}

// TestTableSinkFollowsReplacedAndDroppedFields: a sink following its
// table's spec goes on through a REPLACE PARTITION FIELD (day of the
// record time for its hour) and then a DROP PARTITION FIELD (the table
// unpartitioned), each made by another engine while it runs: files of
// each stage's spec come (records go on by the spec before until the
// sink's next commit notices the change), each file lies in the folders
// of the spec its manifest entry names, and the table holds every record
// once.
func TestTableSinkFollowsReplacedAndDroppedFields(t *testing.T) {
	const partitions, n = 2, 200
	env := newTableEnv(t, "replaced")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "replaced", "1s", 100)
	cfg, err := config.Parse([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	text = replaceLine(text, `  partition_by: ["day(_kafka.timestamp)"]`, "")
	_, stop := startSink(t, text)

	stages := []struct {
		name    string
		change  func(*itable.UpdateSpec) *itable.UpdateSpec
		folders *regexp.Regexp
	}{
		{"day", nil, regexp.MustCompile(`^_kafka_timestamp_day=2026-11-2[34]$`)},
		{"hour", func(u *itable.UpdateSpec) *itable.UpdateSpec {
			return u.RemoveField("_kafka_timestamp_day").AddField("_kafka.timestamp", iceberg.HourTransform{}, "_kafka_timestamp_hour")
		}, regexp.MustCompile(`^_kafka_timestamp_hour=2026-11-2[34]-[0-2][0-9]$`)},
		{"none", func(u *itable.UpdateSpec) *itable.UpdateSpec { return u.RemoveField("_kafka_timestamp_hour") }, regexp.MustCompile(`^$`)},
	}
	specOf := map[int32]int{} // spec id → stage
	produced := 0
	for i, st := range stages {
		if st.change != nil {
			tx := env.load(t).NewTransaction()
			if err := st.change(tx.UpdateSpec(true)).Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		spec := env.load(t).Spec()
		specOf[int32(spec.ID())] = i
		// The sink notices the change at its next commit: records go on
		// in the spec before until then. Records arrive until a file of
		// the new spec is in the table.
		for try := 0; ; try++ {
			if try == 20 {
				t.Fatalf("no file of spec %d (%s) after %d records", spec.ID(), st.name, produced)
			}
			produceEvents(t, broker.Brokers, env.topic, produced, n)
			produced += n
			env.waitRows(t, produced, 2*time.Minute)
			tasks, err := env.load(t).Scan().PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(tasks, func(task itable.FileScanTask) bool { return task.File.SpecID() == int32(spec.ID()) }) {
				break
			}
		}
	}
	stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))

	tasks, err := env.load(t).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warehouse := strings.TrimPrefix(env.warehouse, "file://")
	byStage := make([]int, len(stages))
	for _, task := range tasks {
		rel := strings.TrimPrefix(strings.TrimPrefix(task.File.FilePath(), "file://"), warehouse+"/kafka/replaced/data/")
		i, ok := specOf[task.File.SpecID()]
		if !ok {
			t.Errorf("file %s has spec %d, none of the stages'", rel, task.File.SpecID())
			continue
		}
		byStage[i]++
		if dir := filepath.Dir(rel); !stages[i].folders.MatchString(strings.TrimPrefix(dir, ".")) {
			t.Errorf("file %s of spec %d (%s) is not in that spec's folders", rel, task.File.SpecID(), stages[i].name)
		}
	}
	for i, st := range stages {
		if byStage[i] == 0 {
			t.Errorf("no file of the %s stage's spec", st.name)
		}
	}
}
