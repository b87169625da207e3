package connector

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/group"
	"github.com/pqsink/pqsink/internal/kafkaauth"
	"github.com/pqsink/pqsink/internal/kafkaconn"
)

// errGenerationOver is a commit refused because the group moved on to a
// new generation: the partition is no longer ours to commit.
var errGenerationOver = group.ErrGenerationOver

// committed is a partition's committed offset and metadata; offset is -1
// when the group never committed it.
type committed struct {
	offset   int64
	metadata string
}

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
	running := int64(len(s.consuming))
	s.mu.Unlock()
	n := s.mem.Limit() / (128 * max(1, running))
	return max(64<<10, min(n, s.cfg.Kafka.Fetch.MaxBytes))
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
