package connector

import (
	"context"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"
)

// commitBatcher sends the offset commits of a generation's partitions
// together: while one OffsetCommit request is out, the commits that
// partitions ask for queue, and the next request carries all of them.
// A sink with ten thousand partitions that all finish their files at once
// (a shutdown, a schedule boundary) then sends a few requests, not ten
// thousand.
type commitBatcher struct {
	k   *kafkaClients
	gen *kafka.Generation

	mu      sync.Mutex
	pending []*pendingCommit
	wake    chan struct{}
}

// pendingCommit is one partition's commit waiting for its request.
type pendingCommit struct {
	topic     string
	partition int32
	offset    int64
	metadata  string
	done      chan error
}

func newCommitBatcher(k *kafkaClients, gen *kafka.Generation) *commitBatcher {
	return &commitBatcher{k: k, gen: gen, wake: make(chan struct{}, 1)}
}

// commit commits one partition's offset and metadata in the batcher's
// generation and waits for the answer.
func (b *commitBatcher) commit(ctx context.Context, topic string, partition int32, offset int64, md string) error {
	c := &pendingCommit{topic: topic, partition: partition, offset: offset, metadata: md, done: make(chan error, 1)}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-c.done:
		if err != nil {
			return fmt.Errorf("committing %s[%d] at %d: %w", topic, partition, offset, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends the queued commits until ctx ends.
func (b *commitBatcher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			b.mu.Lock()
			for _, c := range b.pending {
				c.done <- ctx.Err()
			}
			b.pending = nil
			b.mu.Unlock()
			return
		case <-b.wake:
		}
		b.mu.Lock()
		batch := b.pending
		b.pending = nil
		b.mu.Unlock()
		if len(batch) > 0 {
			b.send(ctx, batch)
		}
	}
}

// send commits batch in one request and answers each of its commits.
func (b *commitBatcher) send(ctx context.Context, batch []*pendingCommit) {
	topics := map[string][]kafka.OffsetCommit{}
	type key struct {
		topic     string
		partition int
	}
	byKey := make(map[key][]*pendingCommit, len(batch))
	for _, c := range batch {
		k := key{c.topic, int(c.partition)}
		if len(byKey[k]) == 0 {
			topics[c.topic] = append(topics[c.topic], kafka.OffsetCommit{Partition: k.partition, Offset: c.offset, Metadata: c.metadata})
		} else {
			// Cannot happen (a partition waits for its commit), but a
			// request must not name a partition twice: send it next time.
			b.mu.Lock()
			b.pending = append(b.pending, c)
			b.mu.Unlock()
			select {
			case b.wake <- struct{}{}:
			default:
			}
			continue
		}
		byKey[k] = append(byKey[k], c)
	}
	errs, err := b.k.commitMany(ctx, b.gen, topics)
	for k, cs := range byKey {
		e := err
		if e == nil {
			e = errs[k.topic][k.partition]
		}
		for _, c := range cs {
			c.done <- e
		}
	}
}
