package group

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"
)

// CommitBatcher sends the offset commits of a generation's partitions
// together: while one OffsetCommit request is out, the commits that
// partitions ask for queue, and the next request carries all of them.
// A sink with ten thousand partitions that all finish their files at once
// (a shutdown, a schedule boundary) then sends a few requests, not ten
// thousand.
//
// The batcher serves a whole membership of the group: its generation
// changes at each rebalance. A commit refused because the group moved on
// is sent again in the next generation when this member still holds the
// partition there (the same member, and the partition assigned to it, or
// being handed over by it); otherwise it fails with ErrGenerationOver.
type CommitBatcher struct {
	client *kafka.Client

	mu      sync.Mutex
	gen     *Generation   // nil once the membership is lost
	changed chan struct{} // closed when gen changes
	pending []*pendingCommit
	wake    chan struct{}
}

// pendingCommit is one partition's commit waiting for its request.
type pendingCommit struct {
	gen       *Generation
	topic     string
	partition int32
	offset    int64
	metadata  string
	done      chan error
}

// NewCommitBatcher returns a batcher that commits through client; Run
// sends its requests.
func NewCommitBatcher(client *kafka.Client) *CommitBatcher {
	return &CommitBatcher{client: client, wake: make(chan struct{}, 1), changed: make(chan struct{})}
}

// SetGeneration makes gen the generation of the next commits; nil means
// that the membership is lost.
func (b *CommitBatcher) SetGeneration(gen *Generation) {
	b.mu.Lock()
	b.gen = gen
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// generation returns the current generation, and a channel closed when
// it changes.
func (b *CommitBatcher) generation() (*Generation, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen, b.changed
}

// Commit commits one partition's offset and metadata and waits for the
// answer. A refusal because the group moved on is tried again in the next
// generation while this member still holds the partition.
func (b *CommitBatcher) Commit(ctx context.Context, topic string, partition int32, offset int64, md string) error {
	for {
		gen, changed := b.generation()
		if gen == nil {
			return fmt.Errorf("committing %s[%d] at %d: %w", topic, partition, offset, ErrGenerationOver)
		}
		err := b.commitIn(ctx, gen, topic, partition, offset, md)
		if !errors.Is(err, ErrGenerationOver) {
			return err
		}
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-changed:
			}
			var next *Generation
			if next, changed = b.generation(); next == nil || next.ID != gen.ID {
				if next == nil || next.MemberID != gen.MemberID || !(next.Cooperative() || next.Has(topic, int(partition))) {
					return err
				}
				break
			}
		}
	}
}

// commitIn commits in generation gen.
func (b *CommitBatcher) commitIn(ctx context.Context, gen *Generation, topic string, partition int32, offset int64, md string) error {
	c := &pendingCommit{gen: gen, topic: topic, partition: partition, offset: offset, metadata: md, done: make(chan error, 1)}
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

// Run sends the queued commits until ctx ends.
func (b *CommitBatcher) Run(ctx context.Context) {
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
		// One request per generation (a rebalance may leave commits of
		// two in the queue).
		for len(batch) > 0 {
			gen := batch[0].gen
			var now, later []*pendingCommit
			for _, c := range batch {
				if c.gen == gen {
					now = append(now, c)
				} else {
					later = append(later, c)
				}
			}
			b.send(ctx, gen, now)
			batch = later
		}
	}
}

// send commits batch in one request and answers each of its commits.
func (b *CommitBatcher) send(ctx context.Context, gen *Generation, batch []*pendingCommit) {
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
	errs, err := commitMany(ctx, b.client, gen, topics)
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
