package test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestReplayFilesStores archives a topic as files into Google Cloud
// Storage (fake-gcs-server) and Azure Blob Storage (Azurite), then
// replays the files with `--from` the store's URL (gs://, azblob://),
// which replay opens with the configuration's store section (its
// endpoint): the target topic gets every record once, with its key,
// headers, timestamp and value, and a rerun with the completed checkpoint,
// kept in the store beside the files, produces nothing. (TestReplayTable
// replays tables on these stores; TestReplayRoundTrip files on S3 and a
// directory.)
func TestReplayFilesStores(t *testing.T) {
	for _, kind := range []string{"gcs", "azure"} {
		t.Run(kind, func(t *testing.T) { testReplayFilesStore(t, newStoreTarget(t, kind, "archive")) })
	}
}

func testReplayFilesStore(t *testing.T, target storeTarget) {
	const partitions, n = 3, 1500
	topic, dst := "replay-src", "replay-dst"
	broker := kafkatest.Start(t, partitions, topic, dst)
	produceReplayEvents(t, broker.Brokers, topic, n, false)
	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n)
	}
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-replay-" + target.kind, topic: topic,
		format: "variant", shred: "auto", envelope: true, records: 300, interval: "2s"}
	target.config(&cfg)
	text := cfg.yaml(t)
	store := target.store(t)
	_, stop := startSink(t, text)
	waitLanded(t, store, n, 2*time.Minute)
	stop()

	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(logTail(t, "replay"), nil))
	replay := func() int64 {
		t.Helper()
		r, err := source.New(ctx, rcfg, source.Options{From: target.url, Topic: dst,
			StoreCheckpoint: "stores", PathTemplate: rcfg.Path, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := r.Run(ctx); err != nil {
			t.Fatal(err)
		}
		return r.Stats().Records.Load()
	}
	if got := replay(); got != n {
		t.Errorf("replay produced %d records, want %d", got, n)
	}
	compareReplayed(t, truth, readTopic(t, broker.Brokers, dst, partitions), 0)
	if got := replay(); got != 0 {
		t.Errorf("a rerun with the completed checkpoint produced %d records", got)
	}
	if got := len(readTopic(t, broker.Brokers, dst, partitions)); got != n {
		t.Errorf("after the rerun the target holds %d records, want %d", got, n)
	}
}
