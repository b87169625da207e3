package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runningSink is `pqsink run` in-process, its log, and its exit status
// once stopped.
type runningSink struct {
	log  *lockedBuffer
	stop context.CancelFunc
	done chan int
}

func startRun(t *testing.T, cfgText string) *runningSink {
	t.Helper()
	cfg := writeFile(t, t.TempDir(), "pqsink.yaml", cfgText)
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningSink{log: &lockedBuffer{}, stop: cancel, done: make(chan int, 1)}
	go func() { r.done <- run(ctx, []string{"run", "--config", cfg}, strings.NewReader(""), io.Discard, r.log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(2 * time.Minute):
			t.Error("pqsink run did not stop")
		}
	})
	return r
}

// waitFor polls until cond holds, failing the test with what after a
// generous deadline: the conditions are events, not durations.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; last seen:\n%s", what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// metricsAddr waits for the address the sink serves /readyz on.
func (r *runningSink) metricsAddr(t *testing.T) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving metrics" address=(\S+)`)
	var addr string
	waitFor(t, "the metrics server", func() (bool, string) {
		m := re.FindStringSubmatch(r.log.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil, r.log.String()
	})
	return addr
}

func get(addr, path string) (int, string) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitUnready waits for /readyz to answer 503 with a reason holding want.
func (r *runningSink) waitUnready(t *testing.T, addr, want string) {
	t.Helper()
	waitFor(t, "/readyz to say "+want, func() (bool, string) {
		code, body := get(addr, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, want), fmt.Sprintf("%d %s\nlog:\n%s", code, body, r.log.String())
	})
}

// TestRunHealth: what stops the sink from archiving shows as an ERROR and
// as /readyz not ready with the reason: a missing bucket (which a HEAD
// of a missing key cannot tell), a listed topic that does not exist, and
// unreachable brokers, whose retries back off and are logged at growing
// intervals with their count. A shutdown that could not upload its open
// files exits 1.
func TestRunHealth(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "events.schema", testSchema)
	broker := kafkatest.Start(t, 1, "events")
	srv := minio.Start(t)
	config := func(brokers, topics, store string) string {
		return fmt.Sprintf(`kafka: {brokers: [%s], group: g, topics: [%s]}
store: %s
format: {type: json, schema_file: %s}
metrics: {listen: "127.0.0.1:0"}
shutdown_timeout: 20s
`, brokers, topics, store, schemaFile)
	}
	fileStore := fmt.Sprintf(`{url: "file://%s/out"}`, dir)

	t.Run("missing bucket", func(t *testing.T) {
		w := &kafka.Writer{Addr: kafka.TCP(broker.Brokers...), Topic: "events", BatchTimeout: time.Millisecond}
		defer w.Close()
		for i := range 10 {
			if err := w.WriteMessages(context.Background(), kafka.Message{Value: fmt.Appendf(nil, `{"id":%d}`, i)}); err != nil {
				t.Fatal(err)
			}
		}
		store := fmt.Sprintf(`{url: "s3://nosuchbucket/p", endpoint: %q, path_style: true, region: %s, access_key: %s, secret_key: %q, max_retries: 1}`,
			srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
		r := startRun(t, config(broker.Brokers[0], "events", store))
		addr := r.metricsAddr(t)
		r.waitUnready(t, addr, "store refuses a listing (store.url)")
		if !strings.Contains(r.log.String(), `level=ERROR msg="the store refuses a listing`) || !strings.Contains(r.log.String(), "NoSuchBucket") {
			t.Errorf("no ERROR for the missing bucket:\n%s", r.log.String())
		}
		waitFor(t, "the records consumed", func() (bool, string) {
			_, body := get(addr, "/metrics")
			return strings.Contains(body, "pqsink_records_consumed_total 10"), body
		})
		r.stop()
		if code := <-r.done; code != 1 {
			t.Errorf("exit %d after a shutdown that could not upload its files, want 1:\n%s", code, r.log.String())
		}
		r.done <- 1 // for the cleanup
		if !strings.Contains(r.log.String(), "partitions could not finish their files") {
			t.Errorf("the log does not say the shutdown left files unfinished:\n%s", r.log.String())
		}
	})

	t.Run("missing topic", func(t *testing.T) {
		r := startRun(t, config(broker.Brokers[0], "events, nosuchtopic", fileStore))
		addr := r.metricsAddr(t)
		r.waitUnready(t, addr, `topics ["nosuchtopic"] do not exist`)
		if !strings.Contains(r.log.String(), `level=ERROR msg="topics do not exist`) {
			t.Errorf("no ERROR for the missing topic:\n%s", r.log.String())
		}
		// Once the topic exists, the member rejoins and consumes it.
		client := &kafka.Client{Addr: kafka.TCP(broker.Brokers...)}
		if _, err := client.CreateTopics(context.Background(), &kafka.CreateTopicsRequest{
			Topics: []kafka.TopicConfig{{Topic: "nosuchtopic", NumPartitions: 1, ReplicationFactor: 1}},
		}); err != nil {
			t.Fatal(err)
		}
		w := &kafka.Writer{Addr: kafka.TCP(broker.Brokers...), Topic: "nosuchtopic", BatchTimeout: time.Millisecond}
		defer w.Close()
		if err := w.WriteMessages(context.Background(), kafka.Message{Value: []byte(`{"id":1}`)}, kafka.Message{Value: []byte(`{"id":2}`)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the new topic's records consumed and /readyz ready", func() (bool, string) {
			_, metrics := get(addr, "/metrics")
			code, body := get(addr, "/readyz")
			return code == http.StatusOK && strings.Contains(metrics, `pqsink_consumer_lag_records{partition="0",topic="nosuchtopic"} 0`),
				fmt.Sprintf("%d %s\nlog:\n%s", code, body, r.log.String())
		})
		if !strings.Contains(r.log.String(), `msg="every topic exists now"`) {
			t.Errorf("no line says the topic exists now:\n%s", r.log.String())
		}
		r.stop()
		if code := <-r.done; code != 0 {
			t.Errorf("exit %d after a clean shutdown:\n%s", code, r.log.String())
		}
		r.done <- 0
	})

	t.Run("unreachable broker", func(t *testing.T) {
		r := startRun(t, config("127.0.0.1:1", "events", fileStore))
		addr := r.metricsAddr(t)
		r.waitUnready(t, addr, "kafka unreachable")
		// The 4th failure comes after waits of 1, 2 and 4 seconds; it
		// is logged, the 3rd is not.
		waitFor(t, "the 4th failure to join", func() (bool, string) {
			return strings.Contains(r.log.String(), "failures=4"), r.log.String()
		})
		log := r.log.String()
		if n := strings.Count(log, "cannot join"); n != 3 || !strings.Contains(log, "level=ERROR") || strings.Contains(log, "failures=3") {
			t.Errorf("%d lines for 4 failures to join, want 3 (failures 1, 2, 4) at ERROR:\n%s", n, log)
		}
		// Stopping does not wait for the backoff (up to 30 s) to end.
		r.stop()
		if code := <-r.done; code != 0 {
			t.Errorf("exit %d after a shutdown with nothing to finish:\n%s", code, r.log.String())
		}
		r.done <- 0
	})
}
