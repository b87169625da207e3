package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema/avro"
)

// The schemas of the topic, as registered in the test's registry. v1 is the
// reference record shape; v2 adds a field with a default (backward
// compatible); v3 turns id into a string (incompatible with both).
const (
	avroIDv1 = 11
	avroIDv2 = 12
	avroIDv3 = 13
)

var (
	avroV1 = avroevents.Schema
	avroV2 = strings.TrimSuffix(avroevents.Schema, "]}") + `,{"name":"channel","type":"string","default":"web"}]}`
	avroV3 = strings.Replace(avroevents.Schema, `{"name":"id","type":"long"}`, `{"name":"id","type":"string"}`, 1)
)

// testRegistry implements the calls of the Confluent Schema Registry's
// REST API that pqsink makes (GET /schemas/ids/{id}, with /subjects for
// completeness), with its documented answers and error bodies. No real
// registry runs on these machines: this server stands in for one. failID
// answers 503 to its first failures requests, like a registry that is
// down for a while.
type testRegistry struct {
	mu       sync.Mutex
	schemas  map[int]string
	gets     map[int]int // GET /schemas/ids/{id} by id
	failID   int
	failures int
	// answers are whole answers by path, for what schemas alone do not
	// say: a PROTOBUF schema with its type and references, a subject's
	// version that a reference names.
	answers map[string]any

	// For schemas that are not Avro: the schemaType and the references of
	// an id, and the schemas of subject versions ("subject/1"), which
	// references name.
	types    map[int]string
	refs     map[int][]map[string]any
	versions map[string]string
}

func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	answerErr := func(status, code int, msg string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
	}
	if req.Method != http.MethodGet {
		answerErr(http.StatusMethodNotAllowed, 405, "HTTP 405 Method Not Allowed")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case strings.HasPrefix(req.URL.Path, "/schemas/ids/"):
		id, err := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/schemas/ids/"))
		if err != nil {
			answerErr(http.StatusNotFound, 404, "HTTP 404 Not Found")
			return
		}
		r.gets[id]++
		if id == r.failID && r.failures > 0 {
			r.failures--
			answerErr(http.StatusServiceUnavailable, 50003, "Error while forwarding the request to the leader")
			return
		}
		if a, ok := r.answers[req.URL.Path]; ok {
			json.NewEncoder(w).Encode(a)
			return
		}
		text, ok := r.schemas[id]
		if !ok {
			answerErr(http.StatusNotFound, 40403, "Schema "+strconv.Itoa(id)+" not found")
			return
		}
		answer := map[string]any{"schema": text}
		if typ := r.types[id]; typ != "" {
			answer["schemaType"] = typ
		}
		if refs := r.refs[id]; refs != nil {
			answer["references"] = refs
		}
		json.NewEncoder(w).Encode(answer)
	case strings.HasPrefix(req.URL.Path, "/subjects/") && r.versions[strings.Replace(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions/", "/", 1)] != "":
		text := r.versions[strings.Replace(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions/", "/", 1)]
		json.NewEncoder(w).Encode(map[string]any{"schema": text, "schemaType": "JSON"})
	case req.URL.Path == "/subjects":
		json.NewEncoder(w).Encode([]string{"avro-events-value"})
	case req.URL.Path == "/subjects/avro-events-value/versions":
		json.NewEncoder(w).Encode([]int{1, 2, 3})
	case r.answers[req.URL.Path] != nil:
		json.NewEncoder(w).Encode(r.answers[req.URL.Path])
	default:
		answerErr(http.StatusNotFound, 404, "HTTP 404 Not Found")
	}
}

// avroSent is what the test produced as one record.
type avroSent struct {
	version int    // writer schema: 1, 2, 3; 0 for a poison record
	event   []byte // the reference event, as JSON
	channel string // v2 only
}

// encodeAvro writes e (an internal/events record) in the Confluent wire
// format with the writer schema of version.
func encodeAvro(t *testing.T, version int, e []byte, channel string) []byte {
	t.Helper()
	body, err := avroevents.Append(nil, e)
	if err != nil {
		t.Fatal(err)
	}
	var id uint32
	switch version {
	case 1:
		id = avroIDv1
	case 2:
		id = avroIDv2
		body = avro.AppendLong(body, int64(len(channel)))
		body = append(body, channel...)
	case 3:
		id = avroIDv3
		var m struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(e, &m); err != nil {
			t.Fatal(err)
		}
		rest := body[len(avro.AppendLong(nil, m.ID)):]
		s := "id-" + strconv.FormatInt(m.ID, 10)
		body = append(append(avro.AppendLong(nil, int64(len(s))), s...), rest...)
	}
	return append(schemaregistry.AppendWire(nil, id), body...)
}

// produceAvroStream writes the test's stream: 300 v1 records; 300 in six
// blocks of 50 that alternate v2 and v1 (producers upgrading one by one);
// 200 v3; then three poison records. It returns what each key stands for.
func produceAvroStream(t *testing.T, brokers []string, topic string) map[string]avroSent {
	t.Helper()
	gen := events.New(7, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	sent := map[string]avroSent{}
	var msgs []kafka.Message
	add := func(version int) {
		e := gen.Append(nil)
		key := fmt.Sprintf("k%04d", len(msgs))
		s := avroSent{version: version, event: e}
		if version == 2 {
			s.channel = "app-" + strconv.Itoa(len(msgs)%3)
		}
		sent[key] = s
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: encodeAvro(t, version, e, s.channel)})
	}
	for range 300 {
		add(1)
	}
	for block := range 6 {
		for range 50 {
			add(2 - block%2)
		}
	}
	for range 200 {
		add(3)
	}
	// The truncated record has the header of the current schema, so that
	// it rotates no file before it is rejected.
	truncated := encodeAvro(t, 3, gen.Append(nil), "")
	for _, p := range []struct{ key, value string }{
		{"poison-unknown-id", string(append(schemaregistry.AppendWire(nil, 999), truncated[5:]...))},
		{"poison-no-magic", `{"id":1,"user":"not avro"}`},
		{"poison-truncated", string(truncated[:12])},
	} {
		sent[p.key] = avroSent{}
		msgs = append(msgs, kafka.Message{Key: []byte(p.key), Value: []byte(p.value)})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	return sent
}

// TestSinkAvro consumes an Avro topic whose schema changes twice mid-stream
// (v1 → v2 with an added field → v3 incompatible, with v1 producers still
// writing after v2 appeared), through the in-test registry, with and
// without schema_compatibility: backward. Every record lands exactly once
// with its values, files rotate with reason schema where the schema
// changes, every footer has avro.schema, and the poison records are
// dead-lettered or skipped.
func TestSinkAvro(t *testing.T) {
	for _, tc := range []struct {
		name   string
		compat string
		errors string
		// rotations for reason schema per partition: none rotates at every
		// change of schema id (into v2, five changes between the blocks,
		// into v3); backward only where a newer schema appears (v2, v3),
		// the v1 blocks being resolved into the v2 files.
		schemaRotations int64
	}{
		{"none", "none", "dead_letter", 7},
		{"backward", "backward", "skip", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const partitions = 2
			topic, dlq := "avro-events", "avro-events.dlq"
			broker := kafkatest.Start(t, partitions, topic, dlq)
			sent := produceAvroStream(t, broker.Brokers, topic)
			truth := readTopic(t, broker.Brokers, topic, partitions)

			reg := &testRegistry{schemas: map[int]string{avroIDv1: avroV1, avroIDv2: avroV2, avroIDv3: avroV3}, gets: map[int]int{}}
			if tc.compat == "backward" {
				// The registry is down when v2 first shows up: more failures
				// than the client's retries, so the partitions pause and
				// consume again from their committed offsets.
				reg.failID, reg.failures = avroIDv2, 8
			}
			srv := httptest.NewServer(reg)
			defer srv.Close()

			dir := t.TempDir()
			extra := fmt.Sprintf("errors: %s\n", tc.errors)
			if tc.errors == "dead_letter" {
				extra = "dead_letter:\n  topic: " + dlq + "\n"
			}
			cfg := sinkConfig{brokers: broker.Brokers, group: "avro-" + tc.name, topic: topic, storeURL: "file://" + dir, format: "avro", envelope: true,
				records: 100000, interval: "10m", path: "{topic}/{topic}+{partition}+{first_offset}.parquet", extra: extra}
			text := strings.Replace(cfg.yaml(t), "format:\n  type: avro\n",
				fmt.Sprintf("format:\n  type: avro\n  registry: {url: %q, timeout: 2s}\n  schema_compatibility: %s\n", srv.URL, tc.compat), 1)
			sink, stop := startSink(t, text)

			// Every record is handled when the counts stop moving; then the
			// shutdown lands the open files.
			total := int64(len(truth))
			deadline := time.Now().Add(2 * time.Minute)
			var last connector.Snapshot
			stable := 0
			for time.Now().Before(deadline) && stable < 15 {
				time.Sleep(200 * time.Millisecond)
				st := sink.Stats().Snapshot()
				if st.Consumed >= total && st.Consumed == last.Consumed {
					stable++
				} else {
					stable = 0
				}
				last = st
			}
			if last.Consumed < total {
				t.Fatalf("consumed %d records of %d", last.Consumed, total)
			}
			stop()
			st := sink.Stats().Snapshot()
			if got := st.Files["schema"]; got != tc.schemaRotations*partitions {
				t.Errorf("files rotated for reason schema: %d, want %d (files %v)", got, tc.schemaRotations*partitions, st.Files)
			}
			for _, reason := range []string{"decode"} {
				if got := st.Rejects[[2]string{reason, tc.errors}]; got != 3 {
					t.Errorf("rejects: %v, want 3 %s/%s", st.Rejects, reason, tc.errors)
				}
			}
			reg.mu.Lock()
			for id, n := range reg.gets {
				// Cached: one lookup per id, plus the failed ones and the
				// registry client's retries of them.
				if limit := 2; id == avroIDv2 && tc.compat == "backward" {
					if n > 8+2*partitions {
						t.Errorf("registry asked %d times for schema %d", n, id)
					}
				} else if n > limit {
					t.Errorf("registry asked %d times for schema %d", n, id)
				}
			}
			reg.mu.Unlock()

			if tc.errors == "dead_letter" {
				letters := readTopic(t, broker.Brokers, dlq, partitions)
				if len(letters) != 3 {
					t.Errorf("%d dead letters, want 3", len(letters))
				}
				for _, l := range letters {
					h := decodeHeaders(t, l.Headers)
					orig := findByKey(truth, l.Key)
					if !strings.HasPrefix(string(l.Key), "poison-") || h["pqsink.reason"] != "decode" || h["pqsink.offset"] != fmt.Sprint(orig.Offset) || !bytes.Equal(l.Value, orig.Value) {
						t.Errorf("dead letter %s: headers %v", l.Key, h)
					}
				}
			}

			store, err := objstore.Open(context.Background(), "file://"+dir)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			files := download(t, store, t.TempDir())
			checkFileRanges(t, files)
			resolved := checkAvroRows(t, duckdb.Start(t), files, truth, sent)
			if tc.compat == "backward" && resolved == 0 {
				t.Errorf("no v1 record was resolved into a v2 file")
			}
			if tc.compat == "none" && resolved != 0 {
				t.Errorf("%d records in a file of another schema without backward", resolved)
			}
		})
	}
}

// checkAvroRows reads every landed row back with DuckDB and compares it
// with the record produced at its offset: each good record exactly once,
// with the values of the file's schema (a v1 record in a v2 file has the
// default channel). It returns how many records were written with a schema
// other than their file's.
func checkAvroRows(t *testing.T, db *duckdb.DB, files []landedFile, truth map[string]produced, sent map[string]avroSent) int {
	t.Helper()
	seen := map[string]int{}
	resolved := 0
	for _, f := range files {
		// The footer holds the file's Avro schema, as parquet-java writes it.
		data, err := os.ReadFile(f.local)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		var fileSchema string
		for _, kv := range pf.Metadata().KeyValueMetadata {
			if kv.Key == avro.MetadataKey && kv.Value != nil {
				fileSchema = *kv.Value
			}
		}
		version := 0
		for v, text := range []string{avroV1, avroV2, avroV3} {
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(text)); err != nil {
				t.Fatal(err)
			}
			if compact.String() == fileSchema {
				version = v + 1
			}
		}
		if version == 0 {
			t.Errorf("%s: footer %s is %.80q, not one of the schemas", f.key, avro.MetadataKey, fileSchema)
			continue
		}
		res := db.Query(t, fmt.Sprintf(`SELECT _off, to_json(x)::VARCHAR AS j FROM (SELECT * EXCLUDE (_kafka, ts), epoch_us(ts) AS ts,
			_kafka.partition AS _part, _kafka.offset AS _off FROM read_parquet(%s)) x ORDER BY _off`, duckdb.Quote(f.local)))
		for i := range res.Rows {
			var row map[string]any
			if err := json.Unmarshal([]byte(res.Value(i, "j").(string)), &row); err != nil {
				t.Fatal(err)
			}
			id := fmt.Sprintf("%v/%v", row["_part"], row["_off"])
			delete(row, "_part")
			delete(row, "_off")
			seen[id]++
			p, ok := truth[id]
			if !ok {
				t.Errorf("%s: row %s is no record of the topic", f.key, id)
				continue
			}
			s := sent[string(p.Key)]
			if s.version != version {
				resolved++
				if s.version != 1 || version != 2 {
					t.Errorf("%s: record %s of schema v%d in a file of v%d", f.key, id, s.version, version)
				}
			}
			want := expectedAvroRow(t, s, version)
			got, _ := json.Marshal(row)
			if canonJSONText(t, got) != want {
				t.Errorf("%s: record %s (v%d):\n got %s\nwant %s", f.key, id, s.version, canonJSONText(t, got), want)
			}
		}
	}
	for id, p := range truth {
		want := 1
		if strings.HasPrefix(string(p.Key), "poison-") {
			want = 0
		}
		if seen[id] != want {
			t.Errorf("record %s (key %s) landed %d times, want %d", id, p.Key, seen[id], want)
		}
	}
	return resolved
}

// expectedAvroRow is what a record sent with s reads back as from a file of
// schema version.
func expectedAvroRow(t *testing.T, s avroSent, version int) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(expectedPayload(t, s.event, "json")), &m); err != nil {
		t.Fatal(err)
	}
	switch version {
	case 2:
		m["channel"] = "web" // the default, for a v1 record
		if s.version == 2 {
			m["channel"] = s.channel
		}
	case 3:
		m["id"] = fmt.Sprintf("id-%v", m["id"])
	}
	raw, _ := json.Marshal(m)
	return canonJSONText(t, raw)
}
