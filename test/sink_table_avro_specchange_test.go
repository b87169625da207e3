package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkAvroFollowsSpecChange: an Avro topic's sink, following its
// table's spec (day(ts), which a first run with partition_by created),
// goes on while another engine adds bucket[2](id), and while the writer
// schema changes (A, then B, then A): each schema's partition values are
// computed by the spec of the view the partition writes by. Every record
// is in the table once (iceberg-go), with its id, and the files of the
// new spec lie in its folders with its id in their manifest entries,
// each record's id in its bucket's (DuckDB).
func TestTableSinkAvroFollowsSpecChange(t *testing.T) {
	const partitions = 2
	env := newTableEnv(t, "avro-respec")
	broker := kafkatest.Start(t, partitions, env.topic)
	reg := &testRegistry{schemas: map[int]string{partIDA: partSchemaA, partIDB: partSchemaB}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	withSpec := strings.Replace(env.config(t, broker.Brokers, "avro-respec", "1s", 100), `["day(_kafka.timestamp)"]`, `["day(ts)"]`, 1)
	text := replaceLine(withSpec, `  partition_by: ["day(ts)"]`, "")

	start := time.Date(2026, 11, 23, 23, 50, 0, 0, time.UTC)
	events := map[string]partEvent{}
	next := 0
	produce := func(n, schema int) {
		var msgs []kafka.Message
		for range n {
			i := next
			next++
			e := partEvent{schema: schema, id: int64(i), ts: start.Add(time.Duration(i) * time.Second), level: 1}
			if schema == partIDA {
				e.region = "eu"
			}
			key := fmt.Sprintf("k%05d", i)
			events[key] = e
			msgs = append(msgs, kafka.Message{Key: []byte(key), Value: e.encode()})
		}
		w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
		defer w.Close()
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatal(err)
		}
	}

	// A first run with partition_by creates the table from schema A.
	produce(200, partIDA)
	_, stop := startSink(t, withSpec)
	env.waitRows(t, next, 2*time.Minute)
	stop()

	_, stop = startSink(t, text)
	produce(200, partIDB)
	env.waitRows(t, next, 2*time.Minute)
	tx := env.load(t).NewTransaction()
	if err := tx.UpdateSpec(true).AddField("id", iceberg.BucketTransform{NumBuckets: 2}, "id_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	newSpec := tbl.Spec()
	// Records until files of the new spec are in the table, of B and
	// then of A.
	for try, schema := 0, partIDB; ; try++ {
		if try == 20 {
			t.Fatalf("no file of spec %d after %d records", newSpec.ID(), next)
		}
		produce(100, schema)
		env.waitRows(t, next, 2*time.Minute)
		tasks, err := env.load(t).Scan().PlanFiles(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(tasks, func(task itable.FileScanTask) bool { return task.File.SpecID() == int32(newSpec.ID()) }) {
			if schema == partIDA {
				break
			}
			schema = partIDA
		}
	}
	stop()

	rows := env.scan(t)
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	if len(rows) != len(truth) || len(truth) != next {
		t.Errorf("the table holds %d rows, Kafka %d records, %d produced", len(rows), len(truth), next)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		id := fmt.Sprintf("%d/%d", r.partition, r.offset)
		p, ok := truth[id]
		if !ok || seen[id] {
			t.Errorf("row %s: in Kafka %v, seen before %v", id, ok, seen[id])
			continue
		}
		seen[id] = true
		if e := events[string(p.Key)]; e.id != r.id {
			t.Errorf("row %s: id %d, the record's %d", id, r.id, e.id)
		}
	}

	tasks, err := env.load(t).Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	folders := regexp.MustCompile(`/data/ts_day=2026-11-2[34]/id_bucket=([01])/[^/]+$`)
	var newFiles []string
	for _, task := range tasks {
		f := task.File
		if f.SpecID() != int32(newSpec.ID()) {
			if !regexp.MustCompile(`/data/ts_day=2026-11-2[34]/[^/]+$`).MatchString(f.FilePath()) {
				t.Errorf("file %s of spec %d is not in its day folder alone", f.FilePath(), f.SpecID())
			}
			continue
		}
		if !folders.MatchString(f.FilePath()) {
			t.Errorf("file %s of spec %d is not in day and bucket folders", f.FilePath(), f.SpecID())
		}
		newFiles = append(newFiles, duckdb.Quote(strings.TrimPrefix(f.FilePath(), "file://")))
	}
	// DuckDB: the ids of each file of the new spec are of its bucket.
	if len(newFiles) == 0 {
		t.Fatal("no file of the new spec")
	}
	db := duckdb.Start(t)
	res := db.Query(t, `SELECT filename, id FROM read_parquet([`+strings.Join(newFiles, ", ")+`], filename = true, union_by_name = true, hive_partitioning = false)`)
	for i := range res.Rows {
		m := folders.FindStringSubmatch(fmt.Sprint(res.Value(i, "filename")))
		id := toInt(t, res.Value(i, "id"))
		if want := fmt.Sprint(iceberg.BucketTransform{NumBuckets: 2}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(id), Valid: true}).Val.Any()); m == nil || m[1] != want {
			t.Errorf("id %d is in %v, its bucket is %s", id, res.Value(i, "filename"), want)
		}
	}
}
