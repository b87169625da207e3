package test

import (
	"context"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkManyPartitions archives a topic of 300 partitions, fetched by
// multi-partition requests rather than a request per partition: every
// record exactly once, and the memory budget's count back to zero at the
// end.
func TestSinkManyPartitions(t *testing.T) {
	const partitions, n = 300, 6000
	topic := "wide"
	broker := kafkatest.Start(t, partitions, topic)
	produceEvents(t, broker.Brokers, topic, 0, n)
	truth := readTopic(t, broker.Brokers, topic, partitions)
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "wide", topic: topic, storeURL: "file://" + dir, format: "json", envelope: true, records: 1000, interval: "1s",
		path: "{topic}/{partition}/{first_offset}.parquet"}
	sink, stop := startSink(t, cfg.yaml(t))
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitLanded(t, store, n, 2*time.Minute)
	stop()
	if used := sink.Memory().Used; used != 0 {
		t.Errorf("the memory budget counts %d bytes after the sink stopped, want 0", used)
	}
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
	checkExactlyOnce(t, topic, truth, rows, "json", true)
}
