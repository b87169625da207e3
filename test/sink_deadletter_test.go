package test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkDeadLetters mixes poison records of every reason into a topic:
// each reaches the dead letters (a topic, or JSON Lines objects under a
// prefix) with its key, value, headers and the pqsink.* fields, while the
// good records of the same partitions land, exactly once.
func TestSinkDeadLetters(t *testing.T) {
	for _, dest := range []string{"topic", "url"} {
		t.Run(dest, func(t *testing.T) { testSinkDeadLetters(t, dest) })
	}
}

func testSinkDeadLetters(t *testing.T, dest string) {
	const partitions = 2
	topic, dlq := "mixed", "mixed.dlq"
	broker := kafkatest.Start(t, partitions, topic, dlq)
	produceEvents(t, broker.Brokers, topic, 0, 400)
	poison := map[string][]byte{
		"decode":    []byte(`{"id": 1, "ts": `),
		"schema":    []byte(`{"id":"one","ts":"2026-11-23T10:00:00Z","user":"u","country":"DE","amount":1}`),
		"too_large": []byte(`{"id":2,"user":"` + strings.Repeat("x", 3000) + `"}`),
		"path":      []byte(`{"id":3,"ts":"2026-11-23T10:00:00Z","user":"u","country":{"nested":true},"amount":1}`),
		// A good value with a header key that is not UTF-8: the record is
		// refused whole rather than written with its key altered.
		"envelope": []byte(`{"id":4,"ts":"2026-11-23T10:00:00Z","user":"u","country":"DE","amount":1}`),
	}
	const badHeaderKey = "bin\xff\xfekey"
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	for reason, v := range poison {
		m := kafka.Message{Key: []byte("poison-" + reason), Value: v, Headers: []kafka.Header{{Key: "origin", Value: []byte(reason)}}}
		if reason == "envelope" {
			m.Headers = append(m.Headers, kafka.Header{Key: badHeaderKey, Value: []byte{0xff}})
		}
		if err := w.WriteMessages(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	produceEvents(t, broker.Brokers, topic, 400, 400)
	truth := readTopic(t, broker.Brokers, topic, partitions)

	dir, dlDir := t.TempDir(), t.TempDir()
	extra := "max_record_bytes: 2KiB\ndead_letter:\n  topic: " + dlq + "\n"
	if dest == "url" {
		extra = "max_record_bytes: 2KiB\ndead_letter:\n  url: file://" + dlDir + "/rejects\n"
	}
	cfg := sinkConfig{brokers: broker.Brokers, group: "dl", topic: topic, storeURL: "file://" + dir, format: "json", envelope: true, records: 300, interval: "1s",
		path:  "{topic}/country={field:country}/{topic}+{partition}+{first_offset}.parquet",
		extra: extra}
	sink, stop := startSink(t, cfg.yaml(t))
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitLanded(t, store, 800, time.Minute)
	stop()

	st := sink.Stats().Snapshot()
	for reason := range poison {
		if st.Rejects[[2]string{reason, "dead_letter"}] != 1 {
			t.Errorf("rejects: %v, want one dead letter for %s", st.Rejects, reason)
		}
	}
	// The dead letters, as Kafka or the objects hold them.
	var letters map[string]produced
	if dest == "topic" {
		letters = readTopic(t, broker.Brokers, dlq, partitions)
	} else {
		letters = readLetterObjects(t, "file://"+dlDir+"/rejects")
	}
	if len(letters) != len(poison) {
		t.Fatalf("%d dead letters, want %d", len(letters), len(poison))
	}
	for _, l := range letters {
		reason := string(l.Key[len("poison-"):])
		h := decodeHeaders(t, l.Headers)
		orig := findByKey(truth, l.Key)
		if string(l.Value) != string(poison[reason]) || h["origin"] != reason || h["pqsink.reason"] != reason ||
			h["pqsink.topic"] != topic || h["pqsink.partition"] != fmt.Sprint(orig.Partition) || h["pqsink.offset"] != fmt.Sprint(orig.Offset) || h["pqsink.error"] == "" {
			t.Errorf("dead letter %s: headers %v, value %.60q", l.Key, h, l.Value)
		}
		if reason == "envelope" && (h[badHeaderKey] != "\xff" || len(h) != 7) {
			t.Errorf("dead letter %s: the header whose key is not UTF-8 is not there byte for byte: %q", l.Key, h)
		}
		if l.TimeMs != orig.TimeMs {
			t.Errorf("dead letter %s: time %d, want %d", l.Key, l.TimeMs, orig.TimeMs)
		}
	}
	// Every good record landed once: drop the poison from the truth.
	for id, p := range truth {
		if strings.HasPrefix(string(p.Key), "poison-") {
			delete(truth, id)
		}
	}
	files := download(t, store, t.TempDir())
	rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
	checkExactlyOnce(t, topic, truth, rows, "json", true)
}

// readLetterObjects reads the dead-letter objects under url, in the shape
// readTopic gives (the pqsink.* fields as headers, headers base64), and
// fails on a record that is in two of them.
func readLetterObjects(t *testing.T, url string) map[string]produced {
	t.Helper()
	store, err := objstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	return readLetters(t, store)
}

// readLetters is readLetterObjects of an open store.
func readLetters(t *testing.T, store objstore.Store) map[string]produced {
	t.Helper()
	ctx := context.Background()
	out := map[string]produced{}
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := store.Get(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l struct {
				Topic     string    `json:"topic"`
				Partition int       `json:"partition"`
				Offset    int64     `json:"offset"`
				Timestamp time.Time `json:"timestamp"`
				Key       []byte    `json:"key"`
				Value     []byte    `json:"value"`
				Headers   []struct {
					Key      string `json:"key"`
					KeyBytes []byte `json:"key_bytes"`
					Value    []byte `json:"value"`
				} `json:"headers"`
				Reason string `json:"reason"`
				Error  string `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: %v", info.Key, err)
			}
			enc := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
			p := produced{Partition: l.Partition, Offset: l.Offset, Key: l.Key, Value: l.Value, TimeMs: l.Timestamp.UnixMilli(), Headers: map[string]string{
				"pqsink.error": enc([]byte(l.Error)), "pqsink.reason": enc([]byte(l.Reason)), "pqsink.topic": enc([]byte(l.Topic)),
				"pqsink.partition": enc([]byte(fmt.Sprint(l.Partition))), "pqsink.offset": enc([]byte(fmt.Sprint(l.Offset))),
			}}
			for _, h := range l.Headers {
				if h.KeyBytes != nil {
					h.Key = string(h.KeyBytes)
				}
				p.Headers[h.Key] = enc(h.Value)
			}
			if _, dup := out[p.id()]; dup {
				t.Errorf("dead letter of %s is in two objects (again in %s)", p.id(), info.Key)
			}
			out[p.id()] = p
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	return out
}

func decodeHeaders(t *testing.T, h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		b, err := base64Decode(v)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = string(b)
	}
	return out
}

func findByKey(truth map[string]produced, key []byte) produced {
	for _, p := range truth {
		if string(p.Key) == string(key) {
			return p
		}
	}
	return produced{Partition: -1}
}
