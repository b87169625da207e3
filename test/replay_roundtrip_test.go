package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/schema/avro"
)

// replayRegistry is a Schema Registry for replay tests: GET
// /schemas/ids/{id} for the sink, POST /subjects/{subject}/versions for
// replay, which registers the schema of Avro files again.
type replayRegistry struct {
	mu       sync.Mutex
	schemas  map[int]string
	subjects map[string]int // "subject\x00schema" → id
	posts    int
}

func (r *replayRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case req.Method == http.MethodGet && strings.HasPrefix(req.URL.Path, "/schemas/ids/"):
		id, _ := strconv.Atoi(strings.TrimPrefix(req.URL.Path, "/schemas/ids/"))
		text, ok := r.schemas[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "Schema not found"})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"schema": text})
	case req.Method == http.MethodPost && strings.HasPrefix(req.URL.Path, "/subjects/") && strings.HasSuffix(req.URL.Path, "/versions"):
		subject := strings.TrimSuffix(strings.TrimPrefix(req.URL.Path, "/subjects/"), "/versions")
		var body struct {
			Schema string `json:"schema"`
		}
		if err := json.NewDecoder(req.Body).Decode(&body); err != nil || body.Schema == "" {
			w.WriteHeader(http.StatusUnprocessableEntity)
			json.NewEncoder(w).Encode(map[string]any{"error_code": 42201, "message": "Invalid schema"})
			return
		}
		r.posts++
		k := subject + "\x00" + body.Schema
		id, ok := r.subjects[k]
		if !ok {
			id = 100 + len(r.subjects)
			r.subjects[k] = id
			r.schemas[id] = body.Schema
		}
		json.NewEncoder(w).Encode(map[string]any{"id": id})
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 404, "message": "HTTP 404 Not Found"})
	}
}

// replayAvroID is the id of avroevents.Schema in the replay tests' registry.
const replayAvroID = 21

// produceReplayEvents writes n reference events to topic: keys null (every
// fifth), empty (every seventh) or set; headers on every third, one of them
// with an empty value; timestamps 7 s apart, so that a path by record hour
// spreads a partition over several chains of files. With avroWire the
// values are in the Confluent wire format with replayAvroID.
func produceReplayEvents(t *testing.T, brokers []string, topic string, n int, avroWire bool) {
	t.Helper()
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{},
		BatchSize: 500, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	gen := events.New(11, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range n {
		m := kafka.Message{Value: gen.Append(nil), Time: base.Add(time.Duration(i) * 7 * time.Second)}
		if avroWire {
			body, err := avroevents.Append(nil, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			m.Value = append(schemaregistry.AppendWire(nil, replayAvroID), body...)
		}
		switch {
		case i%5 == 0:
		case i%7 == 0:
			m.Key = []byte{}
		default:
			m.Key = []byte("k" + strconv.Itoa(i))
		}
		if i%3 == 0 {
			m.Headers = []kafka.Header{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}, {Key: "empty", Value: []byte{}}, {Key: "bin", Value: []byte{0, 0xff, byte(i)}}}
		}
		msgs = append(msgs, m)
	}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// byPartition orders records of a topic by partition, then offset.
func byPartition(recs map[string]produced) map[int][]produced {
	out := map[int][]produced{}
	for _, r := range recs {
		out[r.Partition] = append(out[r.Partition], r)
	}
	for _, rs := range out {
		sort.Slice(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
	}
	return out
}

// compareReplayed checks that the target topic holds the source topic's
// records, partition by partition and in order, with equal keys (null and
// empty apart), headers, timestamps and values: JSON-equal, or for Avro
// the same body behind the id the replay registered.
func compareReplayed(t *testing.T, src, dst map[string]produced, avroID int) {
	t.Helper()
	want, got := byPartition(src), byPartition(dst)
	if len(dst) != len(src) {
		t.Errorf("the target holds %d records, the source %d", len(dst), len(src))
	}
	bad := 0
	for p, ws := range want {
		gs := got[p]
		if len(gs) != len(ws) {
			t.Errorf("partition %d: %d records replayed, want %d", p, len(gs), len(ws))
			continue
		}
		for i := range ws {
			w, g := ws[i], gs[i]
			var problems []string
			if (w.Key == nil) != (g.Key == nil) || !bytes.Equal(w.Key, g.Key) {
				problems = append(problems, fmt.Sprintf("key %q (null %v), want %q (null %v)", g.Key, g.Key == nil, w.Key, w.Key == nil))
			}
			if g.TimeMs != w.TimeMs {
				problems = append(problems, fmt.Sprintf("timestamp %d, want %d", g.TimeMs, w.TimeMs))
			}
			if !reflect.DeepEqual(g.Headers, w.Headers) {
				problems = append(problems, fmt.Sprintf("headers %v, want %v", g.Headers, w.Headers))
			}
			if avroID > 0 {
				id, body, err := schemaregistry.SplitWire(g.Value)
				_, wbody, _ := schemaregistry.SplitWire(w.Value)
				if err != nil || int(id) != avroID || !bytes.Equal(body, wbody) {
					problems = append(problems, fmt.Sprintf("avro value id %d body %x (%v), want id %d body %x", id, body, err, avroID, wbody))
				}
			} else if !jsonEqualBytes(g.Value, w.Value) {
				problems = append(problems, fmt.Sprintf("value %s, want %s", g.Value, w.Value))
			}
			if len(problems) > 0 {
				bad++
				if bad <= 10 {
					t.Errorf("partition %d, record %d (source offset %d): %s", p, i, w.Offset, strings.Join(problems, "; "))
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d records differ in all", bad)
	}
}

// jsonEqualBytes compares JSON texts as values, numbers as doubles.
func jsonEqualBytes(a, b []byte) bool {
	ok, err := testutil.JSONEqualFunc(a, b, testutil.DoubleNumbers)
	return err == nil && ok
}

// TestReplayRoundTrip sinks a topic (typed JSON, VARIANT shredded and not,
// Avro; into MinIO or a directory), replays the files into a new topic,
// and compares every record with the original. A second run with the
// completed checkpoint produces nothing.
func TestReplayRoundTrip(t *testing.T) {
	cases := []struct {
		name   string
		format string
		shred  string
		s3     bool
	}{
		{"json-s3", "json", "", true},
		{"variant-auto-file", "variant", "auto", false},
		{"variant-none-file", "variant", "none", false},
		{"avro-file", "avro", "", false},
	}
	var srv *minio.Server
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const partitions, n = 3, 2000
			topic, target := "replay-src-"+c.format, "replay-dst-"+c.format
			broker := kafkatest.Start(t, partitions, topic, target)
			reg := &replayRegistry{schemas: map[int]string{replayAvroID: avroevents.Schema}, subjects: map[string]int{}}
			regSrv := httptest.NewServer(reg)
			defer regSrv.Close()

			produceReplayEvents(t, broker.Brokers, topic, n, c.format == "avro")
			truth := readTopic(t, broker.Brokers, topic, partitions)
			if len(truth) != n {
				t.Fatalf("Kafka holds %d records, want %d", len(truth), n)
			}
			format := c.format
			if format == "avro" {
				format = "variant" // rewritten below
			}
			cfg := sinkConfig{brokers: broker.Brokers, group: "g-" + c.name, topic: topic, format: format, shred: c.shred,
				envelope: true, records: 300, interval: "2s"}
			ctx := context.Background()
			var store objstore.Store
			var storeURL string
			if c.s3 {
				if srv == nil {
					srv = minio.Start(t)
				}
				bucket := srv.NewBucket(t)
				storeURL = fmt.Sprintf("s3://%s/archive", bucket)
				cfg.storeURL = storeURL
				cfg.s3 = &s3Target{endpoint: srv.Endpoint, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey}
				var err error
				if store, err = objstore.Open(ctx, storeURL+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
					objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, "")); err != nil {
					t.Fatal(err)
				}
			} else {
				storeURL = "file://" + t.TempDir()
				cfg.storeURL = storeURL
				var err error
				if store, err = objstore.Open(ctx, storeURL); err != nil {
					t.Fatal(err)
				}
			}
			defer store.Close()
			text := cfg.yaml(t)
			if c.format == "avro" {
				text = strings.Replace(text, "format:\n  type: variant\n", fmt.Sprintf("format:\n  type: avro\n  registry: {url: %q}\n", regSrv.URL), 1)
			}
			_, stop := startSink(t, text)
			waitLanded(t, store, n, 2*time.Minute)
			stop()

			rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
			if err != nil {
				t.Fatal(err)
			}
			checkpoint := filepath.Join(t.TempDir(), "replay.checkpoint")
			log := slog.New(slog.NewTextHandler(logTail(t, "replay"), nil))
			replay := func() *source.Replayer {
				opts := source.Options{From: storeURL, Topic: target, Checkpoint: checkpoint, PathTemplate: rcfg.Path, Log: log}
				if c.s3 {
					// In the bucket, beside the files.
					opts.Checkpoint, opts.StoreCheckpoint = "", "roundtrip"
				}
				r, err := source.New(ctx, rcfg, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				if err := r.Run(ctx); err != nil {
					t.Fatal(err)
				}
				return r
			}
			r := replay()
			if got := r.Stats().Records.Load(); got != n {
				t.Errorf("replay produced %d records, want %d", got, n)
			}
			avroID := 0
			if c.format == "avro" {
				if reg.posts == 0 {
					t.Fatal("replay registered no schema")
				}
				avroID = reg.subjects[target+"-value\x00"+avro.MustParse(avroevents.Schema).String()]
			}
			compareReplayed(t, truth, readTopic(t, broker.Brokers, target, partitions), avroID)

			if r := replay(); r.Stats().Records.Load() != 0 {
				t.Errorf("a rerun with the completed checkpoint produced %d records", r.Stats().Records.Load())
			}
			if c.s3 {
				var keys []string
				for info, err := range store.List(ctx, "_pqsink/replay/roundtrip/") {
					if err != nil {
						t.Fatal(err)
					}
					keys = append(keys, info.Key)
				}
				if len(keys) != 1 {
					t.Errorf("store checkpoint objects: %q, want the latest alone", keys)
				}
			}
			if got := len(readTopic(t, broker.Brokers, target, partitions)); got != n {
				t.Errorf("after the rerun the target holds %d records, want %d", got, n)
			}
		})
	}
}

// TestReplayForeignParquet: a Parquet file that the sink did not write
// under the prefix stops the replay with an error that names it and says
// why, before anything is produced.
func TestReplayForeignParquet(t *testing.T) {
	dir := t.TempDir()
	// A plain Parquet file, written by convert: no envelope, no footer
	// metadata of the sink.
	data, err := os.ReadFile(filepath.Join("..", "reader", "testdata", "parquet-testing", "alltypes_plain.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "foreign.parquet"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	broker := kafkatest.Start(t, 1, "replay-foreign")
	cfg := &config.Config{Kafka: config.Kafka{Brokers: broker.Brokers, ClientID: "test"}}
	r, err := source.New(context.Background(), cfg, source.Options{From: "file://" + dir, Topic: "replay-foreign"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "foreign.parquet") || !strings.Contains(err.Error(), "pqsink.kafka.topic") {
		t.Fatalf("error %v, want one naming foreign.parquet and the missing footer metadata", err)
	}
	if got := len(readTopic(t, broker.Brokers, "replay-foreign", 1)); got != 0 {
		t.Errorf("%d records produced", got)
	}
}
