package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// TestKafkaGoAgainstKfake proves the harness with the production client:
// kafka-go produces, consumes in a consumer group, commits, and a second
// reader of the group resumes after the committed offsets.
func TestKafkaGoAgainstKfake(t *testing.T) {
	c := Start(t, 3, "events")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w := &kafkago.Writer{Addr: kafkago.TCP(c.Brokers...), Topic: "events", Balancer: &kafkago.Hash{}, BatchTimeout: 10 * time.Millisecond}
	const n = 300
	var msgs []kafkago.Message
	for i := 0; i < n; i++ {
		msgs = append(msgs, kafkago.Message{Key: []byte(fmt.Sprint(i % 17)), Value: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	read := func(limit int) map[string]bool {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.Brokers, GroupID: "sink", Topic: "events", MaxWait: 50 * time.Millisecond})
		defer r.Close()
		seen := map[string]bool{}
		for len(seen) < limit {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatalf("fetch after %d messages: %v", len(seen), err)
			}
			seen[string(m.Value)] = true
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatalf("commit: %v", err)
			}
		}
		return seen
	}
	first := read(n / 2)
	rest := map[string]bool{}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.Brokers, GroupID: "sink", Topic: "events", MaxWait: 50 * time.Millisecond})
	defer r.Close()
	for len(first)+len(rest) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("resume after %d+%d messages: %v", len(first), len(rest), err)
		}
		if first[string(m.Value)] {
			// Per partition, the committed offset is the last message the
			// first reader committed, so nothing it committed comes back.
			t.Fatalf("message %s was committed by the first reader and delivered again", m.Value)
		}
		rest[string(m.Value)] = true
	}
	if len(first)+len(rest) != n {
		t.Fatalf("consumed %d distinct messages, produced %d", len(first)+len(rest), n)
	}
}
