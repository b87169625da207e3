package test

import (
	"context"
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
// each reaches the dead-letter topic with its key, value, headers and the
// pqsink.* headers, while the good records of the same partitions land,
// exactly once.
func TestSinkDeadLetters(t *testing.T) {
	const partitions = 2
	topic, dlq := "mixed", "mixed.dlq"
	broker := kafkatest.Start(t, partitions, topic, dlq)
	produceEvents(t, broker.Brokers, topic, 0, 400)
	poison := map[string][]byte{
		"decode":    []byte(`{"id": 1, "ts": `),
		"schema":    []byte(`{"id":"one","ts":"2026-11-23T10:00:00Z","user":"u","country":"DE","amount":1}`),
		"too_large": []byte(`{"id":2,"user":"` + strings.Repeat("x", 3000) + `"}`),
		"path":      []byte(`{"id":3,"ts":"2026-11-23T10:00:00Z","user":"u","country":{"nested":true},"amount":1}`),
	}
	w := &kafka.Writer{Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	for reason, v := range poison {
		m := kafka.Message{Key: []byte("poison-" + reason), Value: v, Headers: []kafka.Header{{Key: "origin", Value: []byte(reason)}}}
		if err := w.WriteMessages(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	produceEvents(t, broker.Brokers, topic, 400, 400)
	truth := readTopic(t, broker.Brokers, topic, partitions)

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "dl", topic: topic, storeURL: "file://" + dir, format: "json", envelope: true, records: 300, interval: "1s",
		path:  "{topic}/country={field:country}/{topic}+{partition}+{first_offset}.parquet",
		extra: "max_record_bytes: 2KiB\ndead_letter:\n  topic: " + dlq + "\n"}
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
	// The dead letters, as Kafka holds them.
	letters := readTopic(t, broker.Brokers, dlq, partitions)
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
