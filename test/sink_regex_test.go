package test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/connector/metrics"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkTopicRegexAndMetrics subscribes by regex (a topic created while
// the sink runs joins in) and checks /metrics, /healthz and /readyz
// against what landed.
func TestSinkTopicRegexAndMetrics(t *testing.T) {
	broker := kafkatest.Start(t, 2, "re.a", "re.b", "other")
	produceEvents(t, broker.Brokers, "re.a", 0, 300)
	produceEvents(t, broker.Brokers, "re.b", 300, 200)
	produceEvents(t, broker.Brokers, "other", 500, 100)
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "re", topic: "unused", storeURL: "file://" + dir, format: "json", envelope: true, records: 1000, interval: "500ms"}
	text := replaceLine(cfg.yaml(t), "  topics: [unused]", "  topic_regex: '^re\\.'\n  topic_refresh: 500ms")
	sink, stop := startSink(t, text)
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stopMetrics()
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitLanded(t, store, 500, time.Minute)

	// A new topic that matches joins in.
	client := &kafka.Client{Addr: kafka.TCP(broker.Brokers...), Transport: testTransport(t)}
	if _, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "re.c", NumPartitions: 2, ReplicationFactor: 1}}}); err != nil {
		t.Fatal(err)
	}
	produceEvents(t, broker.Brokers, "re.c", 600, 150)
	waitLanded(t, store, 650, time.Minute)

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Errorf("/readyz: %d %s", code, body)
	}
	// The records are uploaded; the counters must say so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get("/metrics")
		if strings.Contains(body, "pqsink_records_uploaded_total 650") && strings.Contains(body, `pqsink_files_uploaded_total{reason="interval"}`) &&
			!strings.Contains(body, `pqsink_files_uploaded_total{reason="interval"} 0`+"\n") { // at 0 from the start
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics do not show 650 uploaded records:\n%s", grepLines(body, "pqsink_"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	files := download(t, store, t.TempDir())
	for _, f := range files {
		if !strings.HasPrefix(f.key, "re.a/") && !strings.HasPrefix(f.key, "re.b/") && !strings.HasPrefix(f.key, "re.c/") {
			t.Errorf("%s: not a topic of the regex", f.key)
		}
	}
	stop()
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
