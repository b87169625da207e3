package connector

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/kafkaauth"
	"github.com/pqsink/pqsink/internal/kafkaconn"
)

// errGenerationOver is a commit refused because the group moved on to a
// new generation: the partition is no longer ours to commit.
var errGenerationOver = errors.New("consumer group generation is over")

// kafkaClients are the connections to Kafka: the client of the group
// protocol, fetches, offset commits and metadata, and its transport.
type kafkaClients struct {
	client    *kafka.Client
	transport *kafka.Transport
}

// close closes the transport's connections and stops its metadata
// refreshes: a transport left open keeps asking its brokers for metadata
// every few seconds for the life of the process, and, should another
// server take a gone broker's port, reads that server's bytes as a
// response (kafka-go sizes arrays by the counts it reads, so an HTTP
// reply can cost gigabytes).
func (k *kafkaClients) close() { k.transport.CloseIdleConnections() }

func newKafkaClients(c *config.Kafka) (*kafkaClients, error) {
	mech, err := kafkaauth.SASL(c.SASL)
	if err != nil {
		return nil, err
	}
	tc, err := kafkaauth.TLS(c.TLS)
	if err != nil {
		return nil, err
	}
	transport := &kafka.Transport{ClientID: c.ClientID, SASL: mech, TLS: tc, DialTimeout: 10 * time.Second}
	if tc == nil {
		// Under TLS a server that is no broker fails the handshake.
		transport.Dial = kafkaconn.Dialer(transport.DialTimeout)
	}
	client := &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: c.CommitTimeout, Transport: transport}
	return &kafkaClients{client: client, transport: transport}, nil
}

// fetchSize is the most one fetch may bring: fetch.max_bytes, less when
// several partitions share the budget (Kafka still returns a first record
// batch larger than that, so a partition always makes progress).
//
// Small fetches cost less than large ones, not more: while a response is
// decoded, kafka-go holds it whole, compressed and again decompressed, and
// with four partitions 8 MiB fetches pushed the heap against the memory
// limit, where the garbage collector runs without pause. Measured with
// `pqsink bench` (four partitions, lz4 batches): 8 MiB fetches took 5.9 to
// 7.1 CPU-seconds per million records, 512 KiB fetches (with the record
// slices handed over, not copied) 3.0 to 4.2, and peaked at 430 to 466
// MiB instead of 489 to 581. So a fetch takes at most 1/128 of the budget
// per partition.
func (s *Sink) fetchSize() int64 {
	s.mu.Lock()
	running := int64(len(s.parts))
	s.mu.Unlock()
	n := s.mem.limit / (128 * max(1, running))
	return max(64<<10, min(n, s.cfg.Kafka.Fetch.MaxBytes))
}

// commit sends one offset commit in generation gen and returns the first
// error of the request or of a partition.
func (k *kafkaClients) commit(ctx context.Context, gen *generation, topics map[string][]kafka.OffsetCommit) error {
	errs, err := k.commitMany(ctx, gen, topics)
	if err != nil {
		return err
	}
	for topic, ps := range errs {
		for p, err := range ps {
			return fmt.Errorf("%s[%d]: %w", topic, p, err)
		}
	}
	return nil
}

// commitMany sends one offset commit in generation gen, as a member of it
// (a fenced-off member's commit is refused), and returns the error of the
// request or, per topic and partition, those of the partitions that
// failed. A refusal because the group moved on wraps errGenerationOver.
func (k *kafkaClients) commitMany(ctx context.Context, gen *generation, topics map[string][]kafka.OffsetCommit) (map[string]map[int]error, error) {
	resp, err := k.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID: gen.group, GenerationID: gen.id, MemberID: gen.memberID, InstanceID: gen.instanceID, Topics: topics,
	})
	if err != nil {
		return nil, generationOver(err)
	}
	var errs map[string]map[int]error
	for topic, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error == nil {
				continue
			}
			if errs == nil {
				errs = map[string]map[int]error{}
			}
			if errs[topic] == nil {
				errs[topic] = map[int]error{}
			}
			errs[topic][p.Partition] = generationOver(p.Error)
		}
	}
	return errs, nil
}

// generationOver marks the errors that say the group moved on.
func generationOver(err error) error {
	if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress) ||
		errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.FencedInstanceID) {
		return fmt.Errorf("%w: %w", errGenerationOver, err)
	}
	return err
}

// committed is a partition's committed offset and metadata; offset is -1
// when the group never committed it.
type committed struct {
	offset   int64
	metadata string
}

// fetchCommitted reads the group's committed offsets and metadata.
func (k *kafkaClients) fetchCommitted(ctx context.Context, group string, parts map[string][]int) (map[string]map[int]committed, error) {
	resp, err := k.client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, err)
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("fetching committed offsets of group %s: %w", group, resp.Error)
	}
	out := map[string]map[int]committed{}
	for topic, ps := range resp.Topics {
		m := map[int]committed{}
		for _, p := range ps {
			if p.Error != nil {
				return nil, fmt.Errorf("fetching committed offset of %s[%d]: %w", topic, p.Partition, p.Error)
			}
			m[p.Partition] = committed{offset: p.CommittedOffset, metadata: p.Metadata}
		}
		out[topic] = m
	}
	return out, nil
}

// startOffsets resolves the first or last offset of partitions the group
// never committed.
func (k *kafkaClients) startOffsets(ctx context.Context, parts map[string][]int, latest bool) (map[string]map[int]int64, error) {
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for topic, ids := range parts {
		for _, id := range ids {
			r := kafka.FirstOffsetOf(id)
			if latest {
				r = kafka.LastOffsetOf(id)
			}
			req.Topics[topic] = append(req.Topics[topic], r)
		}
	}
	resp, err := k.client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("listing offsets: %w", err)
	}
	out := map[string]map[int]int64{}
	for topic, ids := range parts {
		got := map[int]kafka.PartitionOffsets{}
		for _, p := range resp.Topics[topic] {
			got[p.Partition] = p
		}
		out[topic] = map[int]int64{}
		for _, id := range ids {
			p, ok := got[id]
			switch {
			case !ok:
				return nil, fmt.Errorf("listing offsets of %s[%d]: no answer for the partition", topic, id)
			case p.Error != nil:
				return nil, fmt.Errorf("listing offsets of %s[%d]: %w", topic, id, p.Error)
			case latest:
				out[topic][id] = p.LastOffset
			default:
				out[topic][id] = p.FirstOffset
			}
		}
	}
	return out, nil
}

// commitOffsets commits offsets without metadata for many partitions in
// one request.
func (k *kafkaClients) commitOffsets(ctx context.Context, gen *generation, offsets map[string]map[int]int64) error {
	topics := map[string][]kafka.OffsetCommit{}
	for topic, offs := range offsets {
		for id, off := range offs {
			topics[topic] = append(topics[topic], kafka.OffsetCommit{Partition: id, Offset: off})
		}
	}
	if err := k.commit(ctx, gen, topics); err != nil {
		return fmt.Errorf("committing start offsets: %w", err)
	}
	return nil
}

// topics lists the topics of the cluster, internal ones left out.
func (k *kafkaClients) topics(ctx context.Context) ([]string, error) {
	resp, err := k.client.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var names []string
	for _, t := range resp.Topics {
		if t.Error == nil && !t.Internal {
			names = append(names, t.Name)
		}
	}
	return names, nil
}
