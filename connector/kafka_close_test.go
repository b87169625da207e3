package connector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestCloseStopsTransport: a closed sink leaves no kafka-go connection
// pool refreshing its brokers' metadata. Left running, one asks a gone
// broker's port every few seconds for the life of the process, and reads
// whatever server takes the port next as a Kafka response.
func TestCloseStopsTransport(t *testing.T) {
	broker := kafkatest.Start(t, 1, "t")
	schemaPath := filepath.Join(t.TempDir(), "s.schema")
	if err := os.WriteFile(schemaPath, []byte("message m { required int64 n; }"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("kafka: {brokers: [%s], group: g, topics: [t]}\nstore: {url: \"file://%s\"}\nformat: {type: json, schema_file: %s}\n",
		strings.Join(broker.Brokers, ", "), t.TempDir(), schemaPath)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := discoverLoops()
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// A request through the sink's client opens its transport's pool.
	if _, err := s.kafka.client.Metadata(context.Background(), &kafka.MetadataRequest{Topics: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	if n := discoverLoops(); n <= before {
		t.Fatalf("%d metadata loops with the sink open, %d before: the check sees none", n, before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for discoverLoops() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d metadata loops 5 s after Close, %d before New", discoverLoops(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// discoverLoops counts the goroutines of kafka-go connection pools that
// refresh their brokers' metadata.
func discoverLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "kafka-go.(*connPool).discover(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
