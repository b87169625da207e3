package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// jsCanonical returns record i of the event schema in the form replay
// writes: compact, members in the schema's order, no null member that the
// schema does not require, numbers in their shortest form, date-times and
// times in UTC with "Z" and no trailing zeros in their fractions, UUIDs in
// lower case, members of a VARIANT sorted by name.
func jsCanonical(i int) string {
	at := time.Date(2026, 11, 27, 8, i/60%60, i%60, i*7000%1000000000, time.UTC).Format(time.RFC3339Nano)
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":"7b1c9a52-8a3e-4e0c-9a51-%012x","at":%q`, i, at)
	if i%3 != 0 {
		fmt.Fprintf(&b, `,"day":"2026-01-%02d","clock":"%02d:30:00.25Z"`, i%28+1, i%24)
	}
	fmt.Fprintf(&b, `,"kind":%q,"count":%d`, []string{"click", "view"}[i%2], i-5)
	if i%4 != 0 {
		fmt.Fprintf(&b, `,"score":%d.5,"price":%d.25,"note":"né \"%d\"","ok":%t`, i, i, i, i%2 == 0)
	}
	fmt.Fprintf(&b, `,"tags":["a%d","b"],"user":{"name":"u%d","age":%d}`, i, i, 20+i%50)
	if i%2 == 1 {
		fmt.Fprintf(&b, `,"extra":{"k":%d,"nested":[true,null]},"labels":{"l_x":"y%d"},"choice":"c%d","maybe":%d,"anything":[1,"two",{"three":3.25}]`, i, i, i, i)
	} else {
		fmt.Fprintf(&b, `,"choice":%d`, i)
	}
	// tree.children's elements are VARIANTs (the schema recurses there):
	// their members come back sorted by name.
	fmt.Fprintf(&b, `,"tree":{"value":%d,"children":[{"children":[{"value":2}],"value":1}]}}`, i)
	return b.String()
}

// jsNonCanonical are values the event schema admits whose replayed form
// differs from them, and that form (docs/json-schema.md, "Replay").
var jsNonCanonical = []struct{ in, out string }{
	{ // whitespace
		`{ "id": "7b1c9a52-8a3e-4e0c-9a51-000000000001", "at": "2026-11-27T08:00:00Z", "kind": "view", "count": 1 }`,
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1}`},
	{ // member order
		`{"count":1,"kind":"view","at":"2026-11-27T08:00:00Z","id":"7b1c9a52-8a3e-4e0c-9a51-000000000001"}`,
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1}`},
	{ // a null that is not required; the case of a UUID
		`{"id":"7B1C9A52-8A3E-4E0C-9A51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"note":null}`,
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1}`},
	{ // offsets and trailing zeros of times, numbers written otherwise
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T10:00:00.500+02:00","clock":"10:30:00+02:00","kind":"view","count":1,"score":2.50,"price":1.10}`,
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00.5Z","clock":"08:30:00Z","kind":"view","count":1,"score":2.5,"price":1.1}`},
	{ // string escapes; members of a VARIANT (an open object) sorted by name
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"note":"\u00e9\/","extra":{"b":1,"a":2}}`,
		`{"id":"7b1c9a52-8a3e-4e0c-9a51-000000000001","at":"2026-11-27T08:00:00Z","kind":"view","count":1,"note":"é/","extra":{"a":2,"b":1}}`},
}

// registeringRegistry is the sink tests' registry that also registers
// schemas (POST /subjects/{subject}/versions): a schema the registry holds
// already, of the same type, keeps its id, as Confluent's registry does.
type registeringRegistry struct {
	*testRegistry
	mu    sync.Mutex
	posts int
}

func (r *registeringRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		r.testRegistry.ServeHTTP(w, req)
		return
	}
	var body struct {
		SchemaType string            `json:"schemaType"`
		Schema     string            `json:"schema"`
		References []json.RawMessage `json:"references"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		w.WriteHeader(http.StatusUnprocessableEntity)
		return
	}
	r.mu.Lock()
	r.posts++
	r.mu.Unlock()
	r.testRegistry.mu.Lock()
	defer r.testRegistry.mu.Unlock()
	for id, text := range r.schemas {
		if text == body.Schema && r.types[id] == body.SchemaType && len(r.refs[id]) == len(body.References) {
			json.NewEncoder(w).Encode(map[string]any{"id": id})
			return
		}
	}
	id := 100 + len(r.schemas)
	r.schemas[id], r.types[id] = body.Schema, body.SchemaType
	json.NewEncoder(w).Encode(map[string]any{"id": id})
}

// TestReplayJSONSchema lands JSON Schema topics (plain JSON of a
// schema_file, and Confluent's wire format with a registry schema that has
// a reference, and an open object root, one VARIANT column) and replays them: a value in the canonical form comes back
// byte for byte, in the wire format with the schema's id; the others come
// back in the canonical form, as documented.
func TestReplayJSONSchema(t *testing.T) {
	openSchema := filepath.Join(t.TempDir(), "open.schema.json")
	if err := os.WriteFile(openSchema, []byte(`{"type":"object","required":["id"],"properties":{"id":{"type":"integer"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"schema_file", "registry", "wrapped"} {
		registry, wrapped := name == "registry", name == "wrapped"
		t.Run(name, func(t *testing.T) {
			const partitions = 2
			topic, target := "jsr-"+strings.ReplaceAll(name, "_", ""), "jsr-target-"+strings.ReplaceAll(name, "_", "")
			broker := kafkatest.Start(t, partitions, topic, target)
			v1, _, _, user := jsRegistrySchemas(t)
			reg := &registeringRegistry{testRegistry: &testRegistry{schemas: map[int]string{jsIDv1: v1}, gets: map[int]int{},
				types:    map[int]string{jsIDv1: "JSON"},
				refs:     map[int][]map[string]any{jsIDv1: {{"name": "user.schema.json", "subject": "user", "version": 1}}},
				versions: map[string]string{"user/1": user}}}
			rs := httptest.NewServer(reg)
			defer rs.Close()

			want := map[string]string{} // key → the replayed value
			var msgs []kafka.Message
			frame := func(v string) []byte {
				if registry {
					return append(schemaregistry.AppendWire(nil, jsIDv1), v...)
				}
				return []byte(v)
			}
			for i := range 300 {
				key := fmt.Sprintf("c%04d", i)
				v := jsCanonical(i)
				if wrapped {
					// The root is an open object: one VARIANT column, whose
					// members come back sorted by name.
					v = fmt.Sprintf(`{"a":[%d,"x",null],"id":%d,"z":{"k":true}}`, i, i)
				}
				msgs = append(msgs, kafka.Message{Key: []byte(key), Value: frame(v)})
				want[key] = string(frame(v))
			}
			for i, nc := range jsNonCanonical {
				if wrapped {
					break
				}
				key := fmt.Sprintf("n%d", i)
				msgs = append(msgs, kafka.Message{Key: []byte(key), Value: frame(nc.in)})
				want[key] = string(frame(nc.out))
			}
			w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
			if err := w.WriteMessages(context.Background(), msgs...); err != nil {
				t.Fatal(err)
			}
			w.Close()

			dir := t.TempDir()
			storeURL := "file://" + dir
			cfg := sinkConfig{brokers: broker.Brokers, group: "jsr-" + name, topic: topic, storeURL: storeURL, format: "json_schema", envelope: true,
				records: 100, interval: "10m", path: "{topic}/{topic}+{partition}+{first_offset}.parquet"}
			formatYAML := fmt.Sprintf("format:\n  type: json_schema\n  schema_file: %s\n", jsEventSchemaPath(t))
			if registry {
				formatYAML = fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q}\n", rs.URL)
			}
			if wrapped {
				formatYAML = fmt.Sprintf("format:\n  type: json_schema\n  schema_file: %s\n", openSchema)
			}
			text := strings.Replace(cfg.yaml(t), "format:\n  type: json_schema\n", formatYAML, 1)
			store, err := objstore.Open(context.Background(), storeURL)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			sink, stop := startSink(t, text)
			waitConsumed(t, sink, int64(len(msgs)))
			stop()
			waitLanded(t, store, int64(len(msgs)), 10*time.Second)
			if st := sink.Stats().Snapshot(); st.Rejected != 0 {
				t.Fatalf("the sink rejected %d records", st.Rejected)
			}

			rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(logTail(t, "replay"), nil))
			r, err := source.New(context.Background(), rcfg, source.Options{From: storeURL, Topic: target, PathTemplate: rcfg.Path, Log: log,
				Checkpoint: filepath.Join(t.TempDir(), "ckpt")})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := readTopic(t, broker.Brokers, target, partitions)
			if len(got) != len(msgs) {
				t.Fatalf("replayed %d records, want %d", len(got), len(msgs))
			}
			for _, p := range got {
				if w := want[string(p.Key)]; string(p.Value) != w {
					t.Errorf("record %s:\nreplayed %q\nwant     %q", p.Key, p.Value, w)
				}
			}
			if registry && reg.posts == 0 {
				t.Error("replay registered no schema")
			}
		})
	}
}
