package test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkJSONSchemaRegistryPartitioned: format json_schema with a
// registry into a table partitioned by bucket[4](id), truncate[1](country)
// and day(ts), payload fields whose values the sink reads from each
// record's JSON after the wire header, converted as the record's own
// schema's columns hold them. Three schema ids: the second adds a column,
// evolving the table; the third makes country optional, and its records
// have none, so that they are in the null country partition.
// Every record is in the table once, each file in the folders of its
// tuple, and iceberg-go's scans filtered on the partition columns prune
// files and return exactly the matching rows.
func TestTableSinkJSONSchemaRegistryPartitioned(t *testing.T) {
	const partitions, n = 2, 900
	env := newTableEnv(t, "jsregparted")
	v1, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "convert", "testdata", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	schemaWith := func(edit func(doc, props map[string]any)) string {
		var doc map[string]any
		if err := json.Unmarshal(v1, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc, doc["properties"].(map[string]any))
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	v2 := schemaWith(func(_, p map[string]any) { p["channel"] = map[string]any{"type": "string"} })
	v3 := schemaWith(func(doc, p map[string]any) {
		p["channel"] = map[string]any{"type": "string"}
		doc["required"] = []string{"id", "ts", "user", "amount"}
	})
	reg := &testRegistry{schemas: map[int]string{61: string(v1), 62: v2, 63: v3}, types: map[int]string{61: "JSON", 62: "JSON", 63: "JSON"}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	// The reference events in the wire format: a third under each id.
	plainBroker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, plainBroker.Brokers, env.topic, 0, n)
	plain := readTopic(t, plainBroker.Brokers, env.topic, partitions)
	broker := kafkatest.Start(t, partitions, env.topic)
	var msgs []kafka.Message
	for i, k := range slices.Sorted(maps.Keys(plain)) {
		id := uint32(61 + 3*i/n)
		value := plain[k].Value
		if id == 63 {
			var doc map[string]any
			if err := json.Unmarshal(value, &doc); err != nil {
				t.Fatal(err)
			}
			delete(doc, "country")
			if value, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		msgs = append(msgs, kafka.Message{Key: plain[k].Key, Value: append(schemaregistry.AppendWire(nil, id), value...)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: testTransport(t)}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	text := env.config(t, broker.Brokers, "jsrp", "1s", 400)
	text = strings.Replace(text, `["day(_kafka.timestamp)"]`, `["bucket[4](id)", "truncate[1](country)", "day(ts)"]`, 1)
	i := strings.Index(text, "format:\n  type: json\n  schema_file: ")
	if i < 0 {
		t.Fatalf("the table config has no json format:\n%s", text)
	}
	j := i + strings.Index(text[i:], ".schema\n") + len(".schema\n")
	text = text[:i] + fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q}\n", srv.URL) + text[j:]
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.Rejected != 0 {
		t.Errorf("%d records rejected", st.Rejected)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	type event struct {
		ID      int64
		Country *string
		schema  uint32
	}
	events := map[string]event{}
	for id, p := range truth {
		var e event
		if err := json.Unmarshal(p.Value[5:], &e); err != nil {
			t.Fatal(err)
		}
		e.schema = uint32(p.Value[4])
		events[id] = e
		p.Value = p.Value[5:]
		truth[id] = p
	}
	env.check(t, truth)

	dir := strings.TrimPrefix(env.warehouse, "file://")
	files, err := filepath.Glob(filepath.Join(dir, "kafka", env.topic, "data", "*", "*", "*", "*.parquet"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in three partition folders (%v)", err)
	}
	folders := regexp.MustCompile(`/data/id_bucket=[0-3]/country_trunc=([A-Z]|__HIVE_DEFAULT_PARTITION__)/ts_day=2026-11-23/[^/]+$`)
	nullCountry := 0
	for _, f := range files {
		if !folders.MatchString(filepath.ToSlash(f)) {
			t.Errorf("file %s is not in its partition's folders", f)
		}
		if strings.Contains(f, "country_trunc=__HIVE_DEFAULT_PARTITION__") {
			nullCountry++
		}
	}
	if nullCountry == 0 {
		t.Error("no file in the null country partition: the third schema's records are not there")
	}
	for _, e := range events {
		if (e.Country == nil) != (e.schema == 63) {
			t.Fatalf("event %+v: a country exactly when not of schema 63 is what the test produced", e)
		}
	}

	// DuckDB reads the files the snapshot lists: every record once, and
	// each in the country folder of its own value.
	tbl := env.load(t)
	checkSnapshotFiles(t, env, tbl, truth)
	res := duckdb.Start(t).Query(t, `SELECT filename, country FROM read_parquet(`+
		duckdb.Quote(filepath.Join(dir, "kafka", env.topic, "data", "**", "*.parquet"))+`, filename = true, union_by_name = true, hive_partitioning = false)`)
	folder := regexp.MustCompile(`/country_trunc=([^/]+)/`)
	for i := range res.Rows {
		want := "__HIVE_DEFAULT_PARTITION__"
		if c := res.Value(i, "country"); c != nil {
			want = fmt.Sprint(c)[:1]
		}
		if m := folder.FindStringSubmatch(filepath.ToSlash(fmt.Sprint(res.Value(i, "filename")))); m == nil || m[1] != want {
			t.Errorf("a row of country %v is in %s", res.Value(i, "country"), res.Value(i, "filename"))
		}
	}
	if len(res.Rows) != n {
		t.Errorf("DuckDB reads %d rows in the data folder, want %d", len(res.Rows), n)
	}

	all, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(files) {
		t.Errorf("the table has %d files, the data folder %d", len(all), len(files))
	}
	country := func(e event) string {
		if e.Country == nil {
			return ""
		}
		return *e.Country
	}
	checkFilteredScans(t, tbl, len(all), events, []string{"id", "country"}, []scanCase[event]{
		{"id = 17", iceberg.EqualTo(iceberg.Reference("id"), int64(17)), func(e event) bool { return e.ID == 17 }},
		{"country = DE", iceberg.EqualTo(iceberg.Reference("country"), "DE"), func(e event) bool { return country(e) == "DE" }},
		{"country is null", iceberg.IsNull(iceberg.Reference("country")), func(e event) bool { return e.Country == nil }},
		{"country starts with C and id < 400", iceberg.NewAnd(iceberg.StartsWith(iceberg.Reference("country"), "C"), iceberg.LessThan(iceberg.Reference("id"), int64(400))),
			func(e event) bool { return strings.HasPrefix(country(e), "C") && e.ID < 400 }},
	})
}
