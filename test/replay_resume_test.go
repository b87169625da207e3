package test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestReplayResume stops a replay mid-way as SIGINT does (its context
// ends), checks that the target holds exactly the records the checkpoint
// counts, then reruns it with the checkpoint: every record once, none
// missing, in order.
func TestReplayResume(t *testing.T) {
	const partitions, n = 3, 3000
	topic, target := "resume-src", "resume-dst"
	broker := kafkatest.Start(t, partitions, topic, target)
	produceReplayEvents(t, broker.Brokers, topic, n, false)
	truth := readTopic(t, broker.Brokers, topic, partitions)

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-resume", topic: topic, format: "json", envelope: true,
		records: 400, interval: "2s", storeURL: "file://" + dir}
	store, err := objstore.Open(context.Background(), cfg.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	text := cfg.yaml(t)
	_, stop := startSink(t, text)
	waitLanded(t, store, n, 2*time.Minute)
	stop()

	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := filepath.Join(t.TempDir(), "replay.checkpoint")
	opts := source.Options{From: cfg.storeURL, Topic: target, Checkpoint: checkpoint, PathTemplate: rcfg.Path, BatchRecords: 100}

	// First run: interrupted once about a third is produced, by the
	// producer itself, so that the interruption does not depend on timing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(broker.Brokers...), Topic: target, Balancer: samePartitionBalancer{},
		BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	first := opts
	first.Producer = &cancelAfter{Writer: w, limit: n / 3, cancel: cancel}
	r, err := source.New(ctx, rcfg, first)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Run(ctx)
	r.Close()
	if !errors.Is(err, source.ErrInterrupted) {
		t.Fatalf("interrupted replay: %v, want ErrInterrupted", err)
	}
	data, err := os.ReadFile(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var ck source.Checkpoint
	if err := json.Unmarshal(data, &ck); err != nil {
		t.Fatal(err)
	}
	produced := len(readTopic(t, broker.Brokers, target, partitions))
	if ck.Complete || ck.Records != int64(produced) || produced < n/3 || produced >= n {
		t.Fatalf("after the interruption the target holds %d records and the checkpoint says %d (complete %v)", produced, ck.Records, ck.Complete)
	}
	for name, pos := range ck.Partitions {
		if pos.Object == "" || pos.Offset < 0 {
			t.Errorf("checkpoint of %s: %+v", name, pos)
		}
	}

	// Second run: the rest, from the checkpoint.
	r, err = source.New(context.Background(), rcfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.Stats().Records.Load(); got != int64(n-produced) {
		t.Errorf("the resumed run produced %d records, want the %d left", got, n-produced)
	}
	compareReplayed(t, truth, readTopic(t, broker.Brokers, target, partitions), 0)
}

// samePartitionBalancer sends a message to the partition it names.
type samePartitionBalancer struct{}

func (samePartitionBalancer) Balance(msg kafka.Message, _ ...int) int { return msg.Partition }

// cancelAfter is a producer that cancels the replay's context once limit
// messages are acknowledged.
type cancelAfter struct {
	*kafka.Writer
	mu     sync.Mutex
	n      int
	limit  int
	cancel func()
}

func (c *cancelAfter) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	if err := c.Writer.WriteMessages(ctx, msgs...); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n += len(msgs); c.n >= c.limit {
		c.cancel()
	}
	return nil
}
