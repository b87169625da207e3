package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

// The JSON Schemas of the registry case: v1 is the event schema with its
// user in another subject (a reference), v2 adds an optional channel, v3
// turns count into a string (incompatible).
const (
	jsIDv1 = 21
	jsIDv2 = 22
	jsIDv3 = 23
)

// jsRegistrySchemas returns v1, v2, v3 and the referenced user schema.
func jsRegistrySchemas(t *testing.T) (v1, v2, v3, user string) {
	t.Helper()
	text, err := os.ReadFile(jsEventSchemaPath(t))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	v1 = strings.Replace(s, `"user": {"$ref": "#/$defs/user"}`, `"user": {"$ref": "user.schema.json"}`, 1)
	v2 = strings.Replace(v1, `"ok": {"type": "boolean"},`, `"ok": {"type": "boolean"}, "channel": {"type": "string"},`, 1)
	v3 = strings.Replace(v1, `"count": {"type": "integer"}`, `"count": {"type": "string"}`, 1)
	user = `{"type": "object", "additionalProperties": false, "required": ["name"], "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}`
	if v1 == s || v2 == v1 || v3 == v1 {
		t.Fatal("the event schema changed: the test's replacements do not apply")
	}
	return v1, v2, v3, user
}

// jsSent is what the test produced under one key.
type jsSent struct {
	version int    // schema: 1, 2; 0 for a record to reject
	row     string // jsEvent's row, for a record that lands
	reason  string // the dead letter's reason, for a record to reject
}

// TestSinkJSONSchema consumes JSON Schema topics into MinIO: plain JSON
// values of a schema_file, and values in Confluent's JSON Schema wire
// format whose schemas (with a reference) come from the in-test registry,
// which is down when v2 first appears. The schema evolves mid-stream (v1,
// then blocks of v2, which adds an optional field, and v1 again): files
// rotate with reason schema at each change; v3's incompatible change and
// values that fail their schema are dead-lettered with reason schema,
// bytes that are not the wire format or not JSON with reason decode.
// Every other record lands exactly once, read back by DuckDB and arrow-go.
func TestSinkJSONSchema(t *testing.T) {
	db := duckdb.Start(t)
	srv := minio.Start(t)
	for _, registry := range []bool{false, true} {
		name := map[bool]string{false: "schema_file", true: "registry"}[registry]
		t.Run(name, func(t *testing.T) {
			const partitions = 2
			topic, dlq := "js-"+strings.ReplaceAll(name, "_", ""), "js-dlq-"+strings.ReplaceAll(name, "_", "")
			broker := kafkatest.Start(t, partitions, topic, dlq)
			v1, v2, v3, user := jsRegistrySchemas(t)
			reg := &testRegistry{schemas: map[int]string{jsIDv1: v1, jsIDv2: v2, jsIDv3: v3}, gets: map[int]int{},
				types:    map[int]string{jsIDv1: "JSON", jsIDv2: "JSON", jsIDv3: "JSON"},
				refs:     map[int][]map[string]any{},
				versions: map[string]string{"user/1": user},
				failID:   jsIDv2, failures: 8}
			for _, id := range []int{jsIDv1, jsIDv2, jsIDv3} {
				reg.refs[id] = []map[string]any{{"name": "user.schema.json", "subject": "user", "version": 1}}
			}
			rs := httptestServer(t, reg)

			sent := map[string]jsSent{}
			var msgs []kafka.Message
			add := func(s jsSent, value []byte) {
				key := fmt.Sprintf("k%04d", len(msgs))
				sent[key] = s
				msgs = append(msgs, kafka.Message{Key: []byte(key), Value: value})
			}
			wire := func(id int, v string) []byte { return append(schemaregistry.AppendWire(nil, uint32(id)), v...) }
			event := func(version int) {
				v, r := jsEvent(len(msgs))
				if !registry {
					add(jsSent{version: 1, row: r}, []byte(v))
					return
				}
				id := jsIDv1
				if version == 2 {
					id = jsIDv2
					v = strings.TrimSuffix(v, "}") + `,"channel":"app"}`
				}
				add(jsSent{version: version, row: r}, wire(id, v))
			}
			for range 200 {
				event(1)
			}
			for block := range 3 {
				for range 50 {
					event(2 - block%2)
				}
			}
			for i, bad := range jsInvalid {
				if registry {
					add(jsSent{reason: "schema"}, wire([]int{jsIDv1, jsIDv2}[i%2], bad))
				} else {
					add(jsSent{reason: "schema"}, []byte(bad))
				}
			}
			if registry {
				for range 40 {
					v, _ := jsEvent(len(msgs))
					add(jsSent{reason: "schema"}, wire(jsIDv3, v))
				}
				add(jsSent{reason: "decode"}, wire(999, `{}`))
				add(jsSent{reason: "decode"}, []byte(`{"id":"no magic byte"}`))
				add(jsSent{reason: "decode"}, wire(jsIDv1, `{"id":`))
			} else {
				add(jsSent{reason: "decode"}, []byte(`{"id":`))
			}
			w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
			if err := w.WriteMessages(context.Background(), msgs...); err != nil {
				t.Fatal(err)
			}
			w.Close()
			truth := readTopic(t, broker.Brokers, topic, partitions)

			bucket := srv.NewBucket(t)
			cfg := sinkConfig{brokers: broker.Brokers, group: "js-" + name, topic: topic, storeURL: fmt.Sprintf("s3://%s/archive", bucket),
				s3:     &s3Target{endpoint: srv.Endpoint, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey},
				format: "json_schema", envelope: true, records: 100000, interval: "10m",
				path: "{topic}/{topic}+{partition}+{first_offset}.parquet", extra: "dead_letter:\n  topic: " + dlq + "\n"}
			formatYAML := fmt.Sprintf("format:\n  type: json_schema\n  schema_file: %s\n", jsEventSchemaPath(t))
			if registry {
				formatYAML = fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q, timeout: 2s}\n", rs)
			}
			text := strings.Replace(cfg.yaml(t), "format:\n  type: json_schema\n", formatYAML, 1)
			sink, stop := startSink(t, text)
			waitConsumed(t, sink, int64(len(truth)))
			stop()

			st := sink.Stats().Snapshot()
			wantRotations := int64(0)
			if registry {
				wantRotations = 3 * partitions // v1 → v2 → v1 → v2 in each partition
			}
			if got := st.Files["schema"]; got != wantRotations {
				t.Errorf("files rotated for reason schema: %d, want %d (files %v)", got, wantRotations, st.Files)
			}
			reasons := map[string]int64{}
			for _, s := range sent {
				if s.reason != "" {
					reasons[s.reason]++
				}
			}
			for reason, n := range reasons {
				if got := st.Rejects[[2]string{reason, "dead_letter"}]; got != n {
					t.Errorf("rejects %v, want %d %s", st.Rejects, n, reason)
				}
			}
			if registry {
				reg.mu.Lock()
				for id, n := range reg.gets {
					// Cached: one lookup per id, and for v2 the failed ones
					// with the client's retries.
					if id == jsIDv2 && n > 8+2*partitions || id != jsIDv2 && n > 2 {
						t.Errorf("registry asked %d times for schema %d", n, id)
					}
				}
				if reg.gets[jsIDv2] < 8 {
					t.Errorf("registry asked %d times for v2: the outage did not happen", reg.gets[jsIDv2])
				}
				reg.mu.Unlock()
			}

			letters := readTopic(t, broker.Brokers, dlq, partitions)
			if int64(len(letters)) != reasons["schema"]+reasons["decode"] {
				t.Errorf("%d dead letters, want %d", len(letters), reasons["schema"]+reasons["decode"])
			}
			for _, l := range letters {
				h := decodeHeaders(t, l.Headers)
				orig := findByKey(truth, l.Key)
				if want := sent[string(l.Key)].reason; h["pqsink.reason"] != want || !bytes.Equal(l.Value, orig.Value) {
					t.Errorf("dead letter %s: reason %q (want %q), error %q", l.Key, h["pqsink.reason"], want, h["pqsink.error"])
				}
				if sent[string(l.Key)].reason == "schema" && !strings.Contains(h["pqsink.error"], "json schema") {
					t.Errorf("dead letter %s: error %q does not say what failed", l.Key, h["pqsink.error"])
				}
			}

			store, err := objstore.Open(context.Background(), cfg.storeURL+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
				objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			files := download(t, store, t.TempDir())
			checkFileRanges(t, files)
			checkJSONSchemaRows(t, db, files, truth, sent)
			t.Logf("%d records, %d files, rotations %v, rejects %v, %d dead letters", len(truth), len(files), st.Files, st.Rejects, len(letters))
		})
	}
}

// httptestServer serves h until the test ends and returns its URL.
func httptestServer(t *testing.T, h *testRegistry) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// waitConsumed waits until the sink has consumed n records and its counts
// stop moving.
func waitConsumed(t *testing.T, sink *connector.Sink, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last connector.Snapshot
	for stable := 0; time.Now().Before(deadline) && stable < 15; {
		time.Sleep(200 * time.Millisecond)
		st := sink.Stats().Snapshot()
		if st.Consumed >= n && st.Consumed == last.Consumed {
			stable++
		} else {
			stable = 0
		}
		last = st
	}
	if last.Consumed < n {
		t.Fatalf("consumed %d records of %d", last.Consumed, n)
	}
}

// checkJSONSchemaRows reads every landed file with DuckDB and arrow-go:
// each record that is not rejected exactly once, equal to what was sent,
// the file's JSON Schema in its footer, and the channel of v2's files.
func checkJSONSchemaRows(t *testing.T, db *duckdb.DB, files []landedFile, truth map[string]produced, sent map[string]jsSent) {
	t.Helper()
	seen := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f.local)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var footer string
		for _, kv := range pf.Metadata().KeyValueMetadata {
			if kv.Key == jsonschema.MetadataKey && kv.Value != nil {
				footer = *kv.Value
			}
		}
		if footer == "" {
			t.Errorf("%s: no %s in the footer", f.key, jsonschema.MetadataKey)
		}
		v2 := strings.Contains(footer, `"channel"`)
		res := db.Query(t, strings.Replace(fmt.Sprintf(jsEventQuery, duckdb.Quote(f.local)), "SELECT ", `SELECT "_kafka"."partition" || '/' || "_kafka"."offset" AS rid, `, 1))
		var wants []string
		for i := range res.Rows {
			id := res.Value(i, "rid").(string)
			seen[id]++
			s := sent[string(truth[id].Key)]
			if s.reason != "" || s.row == "" {
				t.Errorf("%s: record %s (key %s) should have been rejected", f.key, id, truth[id].Key)
				continue
			}
			if v2 != (s.version == 2) {
				t.Errorf("%s: record %s of schema v%d in a file of another schema", f.key, id, s.version)
			}
			wants = append(wants, s.row)
			if eq, err := testutil.JSONEqual([]byte(res.Value(i, "j").(string)), []byte(s.row)); err != nil || !eq {
				t.Errorf("%s: record %s:\nduckdb %s\nwant   %s", f.key, id, res.Value(i, "j"), s.row)
			}
		}
		if v2 {
			c := db.Query(t, "SELECT count(*) AS n FROM read_parquet("+duckdb.Quote(f.local)+") WHERE channel = 'app'")
			if fmt.Sprint(c.Value(0, "n")) != fmt.Sprint(len(res.Rows)) {
				t.Errorf("%s: %v rows with channel app, want %d", f.key, c.Value(0, "n"), len(res.Rows))
			}
		}
		checkArrowJSON(t, f.local, wants)
	}
	for id, p := range truth {
		want := 1
		if sent[string(p.Key)].reason != "" {
			want = 0
		}
		if seen[id] != want {
			t.Errorf("record %s (key %s) landed %d times, want %d", id, p.Key, seen[id], want)
		}
	}
}

// TestSinkJSONSchemaIncompatibleFails: under errors: fail, the first
// record of a schema that does not evolve the partition's (v3 retypes
// count) stops its partition with an error naming the field; the records
// before it land, and none after.
func TestSinkJSONSchemaIncompatibleFails(t *testing.T) {
	topic := "js-fail"
	broker := kafkatest.Start(t, 1, topic)
	v1, _, v3, user := jsRegistrySchemas(t)
	reg := &testRegistry{schemas: map[int]string{jsIDv1: v1, jsIDv3: v3}, gets: map[int]int{},
		types:    map[int]string{jsIDv1: "JSON", jsIDv3: "JSON"},
		refs:     map[int][]map[string]any{},
		versions: map[string]string{"user/1": user}}
	for _, id := range []int{jsIDv1, jsIDv3} {
		reg.refs[id] = []map[string]any{{"name": "user.schema.json", "subject": "user", "version": 1}}
	}
	rs := httptestServer(t, reg)
	var msgs []kafka.Message
	for i := range 60 {
		v, _ := jsEvent(i)
		id := jsIDv1
		if i >= 50 {
			id = jsIDv3
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%d", i)), Value: append(schemaregistry.AppendWire(nil, uint32(id)), v...)})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "js-fail", topic: topic, storeURL: "file://" + dir, format: "json_schema", envelope: true,
		records: 100000, interval: "10m", path: "{topic}/{topic}+{partition}+{first_offset}.parquet", extra: "errors: fail\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: json_schema\n", fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q}\n", rs), 1)
	c, err := config.Parse([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Tail{Max: 1 << 20}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink, err := connector.New(ctx, c, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	done := make(chan error, 1)
	go func() { done <- sink.Run(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && !strings.Contains(logs.String(), "partition stopped") {
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	<-done
	log := logs.String()
	if !strings.Contains(log, "partition stopped (errors: fail)") || !strings.Contains(log, "json schema id 23 is incompatible with id 21: field count changed from INT64 to BYTE_ARRAY (STRING)") {
		t.Fatalf("no stop naming the field in the log:\n%s", log)
	}
	if got := sink.Stats().Snapshot().Rejects[[2]string{"schema", "fail"}]; got != 1 {
		t.Errorf("%d rejections under fail, want 1", got)
	}
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var rows int64
	for _, f := range download(t, store, t.TempDir()) {
		rows += f.rows
		if f.rng["pqsink.kafka.last_offset"] != "49" {
			t.Errorf("%s: last offset %s, want 49, the record before v3's", f.key, f.rng["pqsink.kafka.last_offset"])
		}
	}
	if rows != 50 {
		t.Errorf("%d records landed, want the 50 of v1", rows)
	}
}

// TestTableSinkJSONSchema: format.type json_schema with a schema_file
// commits to an Iceberg table: the files carry the table's field ids (not
// the mapping's hashed ones), and the table holds every record once.
func TestTableSinkJSONSchema(t *testing.T) {
	const partitions, n = 2, 1200
	env := newTableEnv(t, "jsevents")
	broker := kafkatest.Start(t, partitions, env.topic)
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	text := env.config(t, broker.Brokers, "jst", "1s", 500)
	i := strings.Index(text, "format:\n  type: json\n  schema_file: ")
	if i < 0 {
		t.Fatalf("the table config has no json format:\n%s", text)
	}
	j := i + strings.Index(text[i:], ".schema\n") + len(".schema\n")
	schemaFile := filepath.Join(testutil.RepoRoot(t), "convert", "testdata", "events.schema.json")
	text = text[:i] + fmt.Sprintf("format:\n  type: json_schema\n  schema_file: %s\n", schemaFile) + text[j:]
	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	env.check(t, readTopic(t, broker.Brokers, env.topic, partitions))
}

// TestTableSinkJSONSchemaRegistry lands JSON Schema records of the
// Confluent wire format into a table that the first schema id creates;
// the second id adds an optional property mid-stream, which becomes a new
// optional column of the table (one schema update) before the first file
// that has it. iceberg-go reads every record once.
func TestTableSinkJSONSchemaRegistry(t *testing.T) {
	const partitions, n = 2, 1200
	env := newTableEnv(t, "jsreg")
	broker := kafkatest.Start(t, partitions, env.topic)
	v1, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), "convert", "testdata", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(v1, &doc); err != nil {
		t.Fatal(err)
	}
	doc["properties"].(map[string]any)["channel"] = map[string]any{"type": "string"}
	v2, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	reg := &testRegistry{schemas: map[int]string{31: string(v1), 32: string(v2)}, types: map[int]string{31: "JSON", 32: "JSON"}, gets: map[int]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	// The reference events in the wire format: half under id 31, then the
	// others under 32.
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	plain := readTopic(t, broker.Brokers, env.topic, partitions)
	wired := kafkatest.Start(t, partitions, env.topic)
	ids := slices.Sorted(maps.Keys(plain))
	var msgs []kafka.Message
	for i, k := range ids {
		id := uint32(31)
		if i >= n/2 {
			id = 32
		}
		p := plain[k]
		msgs = append(msgs, kafka.Message{Key: p.Key, Value: append(schemaregistry.AppendWire(nil, id), p.Value...)})
	}
	if len(msgs) != n {
		t.Fatalf("%d of %d events found by id", len(msgs), n)
	}
	w := &kafka.Writer{Addr: kafka.TCP(wired.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, Transport: testTransport(t)}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	text := env.config(t, wired.Brokers, "jsr", "1s", 400)
	i := strings.Index(text, "format:\n  type: json\n  schema_file: ")
	j := i + strings.Index(text[i:], ".schema\n") + len(".schema\n")
	text = text[:i] + fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q}\n", srv.URL) + text[j:]
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.TableSchemaUpdates != 1 || st.Rejected != 0 {
		t.Errorf("%d table schema updates (want 1), %d records rejected", st.TableSchemaUpdates, st.Rejected)
	}
	if f, ok := env.load(t).Schema().FindFieldByName("channel"); !ok || f.Required {
		t.Errorf("the table's channel column: %+v (found %v), want an optional column", f, ok)
	}
	// The table against Kafka, the values without their wire header.
	truth := readTopic(t, wired.Brokers, env.topic, partitions)
	for id, p := range truth {
		p.Value = p.Value[5:]
		truth[id] = p
	}
	env.check(t, truth)
}
