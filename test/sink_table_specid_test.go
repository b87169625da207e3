package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkResumesBySpecIDWhenFoldersAlike: another engine replaces
// the table's bucket[16](id) field by bucket[8](id) under the same name
// (REPLACE PARTITION FIELD id_bucket WITH bucket(8, id) AS id_bucket)
// while a member writes to it, and the member is killed (SIGKILL) before
// its next commit, the table's state holding, beyond a partition's
// committed offset, paths of files uploaded by the old spec. Those paths'
// folders (id_bucket=3) are the new spec's too: only the spec id the
// state records tells them apart. The next run resumes each such
// partition by that spec, adopts what was uploaded, and moves to the new
// spec at its first clean point, where the records that come next are
// written by it. The table holds every record once, as
// iceberg-go scans it and as DuckDB reads the files its snapshot lists;
// every file lies in id_bucket folders of its spec's range.
func TestTableSinkResumesBySpecIDWhenFoldersAlike(t *testing.T) {
	const partitions, n = 3, 9000
	env := newTableEnv(t, "alikespec")
	broker := kafkatest.Start(t, partitions, env.topic)
	withSpec := env.config(t, broker.Brokers, "alikespec", "4s", 60)
	withSpec = strings.Replace(withSpec, `["day(_kafka.timestamp)"]`, `["bucket[16](id)"]`, 1)
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
	text := replaceLine(withSpec, `  partition_by: ["bucket[16](id)"]`, "")
	oldSpec := env.load(t).Spec()
	if oldSpec.NumFields() != 1 || oldSpec.Field(0).Name != "id_bucket" {
		t.Fatalf("the table's spec is %v, want one field named id_bucket", oldSpec)
	}

	producing := produceSlowly(t, broker.Brokers, env.topic, n, 30, 15*time.Second)
	first := startSinkProcess(t, "sink-first", text)
	// Wait for a snapshot whose state has paths beyond a committed offset,
	// then replace the field under its name and kill the member before
	// its next commit.
	deadline := time.Now().Add(time.Minute)
	var seenSnap int64
	var newSpec iceberg.PartitionSpec
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
		if err := tx.UpdateSpec(true).RemoveField("id_bucket").AddField("id", iceberg.BucketTransform{NumBuckets: 8}, "id_bucket").Commit(); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		first.kill(t)
		newSpec = tbl.Spec()
		break
	}
	if newSpec.ID() == oldSpec.ID() || newSpec.NumFields() != 1 || newSpec.Field(0).Name != "id_bucket" || newSpec.Field(0).Transform.String() != "bucket[8]" {
		t.Fatalf("the new spec is %v (id %d), want bucket[8](id) named id_bucket, another than %d", newSpec, newSpec.ID(), oldSpec.ID())
	}
	if strings.Contains(first.log.String(), "its partition spec changed") {
		t.Fatal("the first member noticed the new spec before it was killed; the test needs it not to")
	}
	producing.Wait()
	last := startSinkProcess(t, "sink-last", replaceLine(text, "  interval: 20s", "  interval: 500ms"))
	last.waitLog(t, "generation started", time.Minute)
	env.waitRows(t, n, 3*time.Minute)
	// The partitions moved to the new spec once clean; records produced
	// after that are in its files.
	last.waitLog(t, "partition follows the table's new partition spec", time.Minute)
	produceEvents(t, broker.Brokers, env.topic, n, 600)
	env.waitRows(t, n+600, 2*time.Minute)
	last.terminate(t, 30*time.Second)
	log := last.log.String()
	resumed := regexp.MustCompile(`msg="partition resumes by the partition spec of its uploaded files" .* spec=` + fmt.Sprint(oldSpec.ID()) + ` table_spec=` + fmt.Sprint(newSpec.ID()))
	if !resumed.MatchString(log) {
		t.Errorf("no partition resumed by spec %d, the one its state names: the window between the change and a commit was not exercised, or the state's spec id was not used", oldSpec.ID())
	}
	if !strings.Contains(log, "partition follows the table's new partition spec") {
		t.Error("no partition moved to the new spec")
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)

	// Each file lies in the folders of its spec; DuckDB over the
	// snapshot's files finds every record once.
	tasks, err := env.load(t).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warehouse := strings.TrimPrefix(env.warehouse, "file://")
	folder := regexp.MustCompile(`^kafka/alikespec/data/id_bucket=([0-9]+)/[^/]+$`)
	bySpec := map[int32]int{}
	var quoted []string
	for _, task := range tasks {
		f := task.File
		rel := strings.TrimPrefix(strings.TrimPrefix(f.FilePath(), "file://"), warehouse+"/")
		quoted = append(quoted, duckdb.Quote(warehouse+"/"+rel))
		bySpec[f.SpecID()]++
		m := folder.FindStringSubmatch(rel)
		if m == nil {
			t.Errorf("file %s is not in an id_bucket folder", rel)
			continue
		}
		if got := fmt.Sprint(f.Partition()); !strings.Contains(got, ":"+m[1]+" ") && !strings.Contains(got, ":"+m[1]+"]") {
			t.Errorf("file %s: partition %s, its folder says bucket %s", rel, got, m[1])
		}
		var b int
		fmt.Sscan(m[1], &b)
		switch f.SpecID() {
		case int32(oldSpec.ID()):
		case int32(newSpec.ID()):
			if b >= 8 {
				t.Errorf("file %s of spec %d (bucket[8]) is in bucket %d", rel, f.SpecID(), b)
			}
		default:
			t.Errorf("file %s has spec %d, neither the old one (%d) nor the new (%d)", rel, f.SpecID(), oldSpec.ID(), newSpec.ID())
		}
	}
	if bySpec[int32(oldSpec.ID())] == 0 || bySpec[int32(newSpec.ID())] == 0 {
		t.Errorf("files by spec: %v, want files of both %d and %d", bySpec, oldSpec.ID(), newSpec.ID())
	}
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
}
