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
	a := archiveTopic(t, "g-resume", topic, []string{target}, partitions, n, 400)
	brokers, truth, text := a.brokers, a.truth, a.text
	rcfg, err := config.ParseReplay([]byte(text), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	checkpoint := filepath.Join(t.TempDir(), "replay.checkpoint")
	opts := source.Options{From: a.storeURL, Topic: target, Checkpoint: checkpoint, PathTemplate: rcfg.Path, BatchRecords: 100}

	// First run: interrupted once about a third is produced, by the
	// producer itself, so that the interruption does not depend on timing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(brokers...), Topic: target, Balancer: samePartitionBalancer{},
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
	produced := len(readTopic(t, brokers, target, partitions))
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
	compareReplayed(t, truth, readTopic(t, brokers, target, partitions), 0)
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

// archived is a topic of reference events that the sink landed in a file
// store: what the replay tests start from.
type archived struct {
	brokers  []string
	truth    map[string]produced
	text     string // the sink's config, which replay reads as it is
	storeURL string
	store    objstore.Store // closed when the test ends
}

// archiveTopic starts a broker with topic and targets, produces n events
// into topic and lands them with the sink, records to a file.
func archiveTopic(t *testing.T, group, topic string, targets []string, partitions int32, n, records int) archived {
	t.Helper()
	broker := kafkatest.Start(t, partitions, append([]string{topic}, targets...)...)
	produceReplayEvents(t, broker.Brokers, topic, n, false)
	a := archived{brokers: broker.Brokers, truth: readTopic(t, broker.Brokers, topic, int(partitions)), storeURL: "file://" + t.TempDir()}
	cfg := sinkConfig{brokers: broker.Brokers, group: group, topic: topic, format: "json", envelope: true,
		records: records, interval: "2s", storeURL: a.storeURL}
	store, err := objstore.Open(context.Background(), a.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	a.store = store
	a.text = cfg.yaml(t)
	_, stop := startSink(t, a.text)
	waitLanded(t, store, int64(n), 2*time.Minute)
	stop()
	return a
}
