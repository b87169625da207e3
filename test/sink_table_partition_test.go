package test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/testutil"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkPartitionTransforms partitions the events by bucket[4] of
// their id, truncate[1] of their country and day of their timestamp, all
// payload fields whose values the sink computes per record, and reads the
// table back with iceberg-go: every record once, each file in the folder
// of its partition tuple, and scans filtered on the partitioned columns
// (which iceberg-go prunes by the partition values and column bounds
// committed) return exactly the matching rows. The same with format.type
// json_schema and a schema_file, whose records are the same JSON.
func TestTableSinkPartitionTransforms(t *testing.T) {
	t.Run("json", func(t *testing.T) { testPartitionTransforms(t, "parted", "") })
	schemaFile := filepath.Join(testutil.RepoRoot(t), "convert", "testdata", "events.schema.json")
	t.Run("json_schema", func(t *testing.T) { testPartitionTransforms(t, "partedjs", schemaFile) })
}

// testPartitionTransforms is TestTableSinkPartitionTransforms on topic
// name, with format.type json_schema of jsonSchema when it is set.
func testPartitionTransforms(t *testing.T, name, jsonSchema string) {
	const partitions, n = 2, 1200
	env := newTableEnv(t, name)
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, name, "1s", 400)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["bucket[4](id)", "truncate[1](country)", "day(ts)"]`, 1)
	if jsonSchema != "" {
		i := strings.Index(text, "format:\n  type: json\n  schema_file: ")
		if i < 0 {
			t.Fatalf("the table config has no json format:\n%s", text)
		}
		j := i + strings.Index(text[i:], ".schema\n") + len(".schema\n")
		text = text[:i] + fmt.Sprintf("format:\n  type: json_schema\n  schema_file: %s\n", jsonSchema) + text[j:]
	}

	produceEvents(t, broker.Brokers, env.topic, 0, n)
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)

	type event struct {
		ID      int64
		Country string
	}
	events := map[string]event{}
	for id, p := range truth {
		var e event
		if err := json.Unmarshal(p.Value, &e); err != nil {
			t.Fatal(err)
		}
		events[id] = e
	}

	// Every file lies in the folders of its tuple: a bucket from 0 to 3,
	// a country's first letter, the one day of the records.
	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in three partition folders (%v)", err)
	}
	folders := regexp.MustCompile(`/data/id_bucket=[0-3]/country_trunc=[A-Z]/ts_day=2026-11-23/[^/]+$`)
	for _, f := range files {
		if !folders.MatchString(filepath.ToSlash(f)) {
			t.Errorf("file %s is not in its partition's folders", f)
		}
	}

	tbl := env.load(t)
	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(files) {
		t.Errorf("the table has %d files, the data folder %d", len(all), len(files))
	}
	checkFilteredScans(t, tbl, len(all), events, []string{"id", "country"}, []scanCase[event]{
		{"id = 17", iceberg.EqualTo(iceberg.Reference("id"), int64(17)), func(e event) bool { return e.ID == 17 }},
		{"id in 3, 500, 1001", iceberg.IsIn(iceberg.Reference("id"), int64(3), int64(500), int64(1001)), func(e event) bool { return e.ID == 3 || e.ID == 500 || e.ID == 1001 }},
		{"country = DE", iceberg.EqualTo(iceberg.Reference("country"), "DE"), func(e event) bool { return e.Country == "DE" }},
		{"country starts with C", iceberg.StartsWith(iceberg.Reference("country"), "C"), func(e event) bool { return strings.HasPrefix(e.Country, "C") }},
		{"country = IT and id < 600", iceberg.NewAnd(iceberg.EqualTo(iceberg.Reference("country"), "IT"), iceberg.LessThan(iceberg.Reference("id"), int64(600))),
			func(e event) bool { return e.Country == "IT" && e.ID < 600 }},
	})
}

// waitRejected waits up to a minute for the sink to have rejected n
// records (dead letters counted as they are sent), and stops it.
func waitRejected(t *testing.T, sink *connector.Sink, stop func(), n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for sink.Stats().Snapshot().Rejected < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	stop()
}

// byOffset maps the records of truth (by "partition/offset") whose key
// names one of events to that event.
func byOffset[E any](truth map[string]produced, events map[string]E) map[string]E {
	out := map[string]E{}
	for id, p := range truth {
		if e, ok := events[string(p.Key)]; ok {
			out[id] = e
		}
	}
	return out
}

// scanCase is one filtered scan of checkFilteredScans: its name, its
// filter, and which records of type E match it.
type scanCase[E any] struct {
	name   string
	filter iceberg.BooleanExpression
	match  func(E) bool
}

// checkFilteredScans scans tbl, which has all files, with the filter of
// each case, selecting _kafka.partition, _kafka.offset and fields, in a
// subtest each: the plan must keep fewer files than all (the partition
// values and column bounds committed prune some), and the rows must be
// exactly the records (by "partition/offset") that the case matches,
// none missing, none more.
func checkFilteredScans[E any](t *testing.T, tbl *itable.Table, all int, records map[string]E, fields []string, cases []scanCase[E]) {
	t.Helper()
	selected := append([]string{"_kafka.partition", "_kafka.offset"}, fields...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]bool{}
			for id, e := range records {
				if tc.match(e) {
					want[id] = true
				}
			}
			scan := tbl.Scan(itable.WithRowFilter(tc.filter), itable.WithSelectedFields(selected...))
			planned, err := scan.PlanFiles(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(planned) >= all {
				t.Errorf("the filter kept %d of %d files: the partition values pruned nothing", len(planned), all)
			}
			got := scanRowIDs(t, scan)
			if len(got) != len(want) {
				t.Errorf("the filtered scan returned %d rows, want %d", len(got), len(want))
			}
			for id := range want {
				if !got[id] {
					t.Errorf("record %s (%+v) is missing from the filtered scan", id, records[id])
				}
			}
			for id := range got {
				if !want[id] {
					t.Errorf("record %s (%+v) does not match the filter", id, records[id])
				}
			}
		})
	}
}

// scanRowIDs runs scan and returns the (partition, offset) of its rows.
func scanRowIDs(t *testing.T, scan *itable.Scan) map[string]bool {
	t.Helper()
	at, err := scan.ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scanning: %v", err)
	}
	defer at.Release()
	kidx := at.Schema().FieldIndices("_kafka")
	if len(kidx) != 1 {
		t.Fatalf("scan: schema %v", at.Schema())
	}
	out := map[string]bool{}
	for _, chunk := range at.Column(kidx[0]).Data().Chunks() {
		st := chunk.(*array.Struct)
		typ := st.DataType().(*arrow.StructType)
		pi, ok1 := typ.FieldIdx("partition")
		oi, ok2 := typ.FieldIdx("offset")
		if !ok1 || !ok2 {
			t.Fatalf("scan: _kafka is %v", typ)
		}
		parts, offs := st.Field(pi).(*array.Int32), st.Field(oi).(*array.Int64)
		for j := 0; j < st.Len(); j++ {
			out[fmt.Sprintf("%d/%d", parts.Value(j), offs.Value(j))] = true
		}
	}
	return out
}
