package connector

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/pqsink/pqsink/config"
)

// errGenerationOver is a commit refused because the group moved on to a
// new generation: the partition is no longer ours to commit.
var errGenerationOver = errors.New("consumer group generation is over")

// saslMechanism builds the SASL mechanism of the config, or nil.
func saslMechanism(c *config.SASL) (sasl.Mechanism, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Mechanism {
	case "PLAIN":
		return plain.Mechanism{Username: c.Username, Password: c.Password.Value()}, nil
	case "SCRAM-SHA-256":
		return scram.Mechanism(scram.SHA256, c.Username, c.Password.Value())
	case "SCRAM-SHA-512":
		return scram.Mechanism(scram.SHA512, c.Username, c.Password.Value())
	}
	return nil, fmt.Errorf("kafka.sasl.mechanism: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512", c.Mechanism)
}

// tlsConfig builds the TLS settings of the config, or nil.
func tlsConfig(c *config.TLS) (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify, ServerName: c.ServerName}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka.tls.ca_file %s: no PEM certificate in it", c.CAFile)
		}
		t.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka.tls.cert_file/key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// kafkaClients are the connections to Kafka: the dialer of the consumer
// group and the fetchers, and the client of offset commits and metadata.
type kafkaClients struct {
	dialer *kafka.Dialer
	client *kafka.Client
}

func newKafkaClients(c *config.Kafka) (*kafkaClients, error) {
	mech, err := saslMechanism(c.SASL)
	if err != nil {
		return nil, err
	}
	tc, err := tlsConfig(c.TLS)
	if err != nil {
		return nil, err
	}
	dialer := &kafka.Dialer{ClientID: c.ClientID, Timeout: 10 * time.Second, DualStack: true, SASLMechanism: mech, TLS: tc}
	transport := &kafka.Transport{ClientID: c.ClientID, SASL: mech, TLS: tc, DialTimeout: 10 * time.Second}
	client := &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: c.CommitTimeout, Transport: transport}
	return &kafkaClients{dialer: dialer, client: client}, nil
}

// fetcher reads one partition in the background. Records pile up in a
// buffer that the partition's goroutine takes whole when it is ready, so a
// busy partition pays for one hand-over per batch, not per record, and an
// idle one sees each record at once.
type fetcher struct {
	mu    sync.Mutex
	buf   []kafka.Message
	ready chan struct{} // signalled when buf has records
	space chan struct{} // signalled when buf was taken
	errc  chan error

	cancel context.CancelFunc
	done   chan struct{}
}

// fetchBatch is the number of records the fetcher holds before it waits
// for the partition to take them.
const fetchBatch = 4096

func startFetcher(ctx context.Context, cfg *config.Kafka, dialer *kafka.Dialer, topic string, partition int32, offset int64) *fetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &fetcher{
		ready: make(chan struct{}, 1), space: make(chan struct{}, 1), errc: make(chan error, 1),
		cancel: cancel, done: make(chan struct{}),
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:         cfg.Brokers,
		Topic:           topic,
		Partition:       int(partition),
		Dialer:          dialer,
		MinBytes:        int(cfg.Fetch.MinBytes),
		MaxBytes:        int(cfg.Fetch.MaxBytes),
		MaxWait:         cfg.Fetch.MaxWait,
		QueueCapacity:   1024,
		ReadLagInterval: -1,
	})
	go func() {
		defer close(f.done)
		defer r.Close()
		if err := r.SetOffset(offset); err != nil {
			f.errc <- err
			return
		}
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() == nil {
					f.errc <- fmt.Errorf("fetching %s[%d]: %w", topic, partition, err)
				}
				return
			}
			f.mu.Lock()
			f.buf = append(f.buf, m)
			n := len(f.buf)
			f.mu.Unlock()
			select {
			case f.ready <- struct{}{}:
			default:
			}
			for n >= fetchBatch {
				select {
				case <-f.space:
				case <-ctx.Done():
					return
				}
				f.mu.Lock()
				n = len(f.buf)
				f.mu.Unlock()
			}
		}
	}()
	return f
}

// take returns the records fetched since the last take.
func (f *fetcher) take() []kafka.Message {
	f.mu.Lock()
	b := f.buf
	f.buf = make([]kafka.Message, 0, max(64, len(b)))
	f.mu.Unlock()
	select {
	case f.space <- struct{}{}:
	default:
	}
	return b
}

// stop ends the fetch and waits for its goroutine.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// commitOffset commits one partition's offset with metadata in generation
// gen, as a member of it: a fenced-off member's commit is refused.
func (k *kafkaClients) commitOffset(ctx context.Context, gen *kafka.Generation, topic string, partition int32, offset int64, md string) error {
	resp, err := k.client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{
		GroupID:      gen.GroupID,
		GenerationID: int(gen.ID),
		MemberID:     gen.MemberID,
		Topics:       map[string][]kafka.OffsetCommit{topic: {{Partition: int(partition), Offset: offset, Metadata: md}}},
	})
	if err != nil {
		return fmt.Errorf("committing %s[%d] at %d: %w", topic, partition, offset, err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition == int(partition) && p.Error != nil {
			err = p.Error
		}
	}
	if err != nil {
		if errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.RebalanceInProgress) ||
			errors.Is(err, kafka.UnknownMemberId) || errors.Is(err, kafka.FencedInstanceID) {
			return fmt.Errorf("committing %s[%d] at %d: %w: %w", topic, partition, offset, errGenerationOver, err)
		}
		return fmt.Errorf("committing %s[%d] at %d: %w", topic, partition, offset, err)
	}
	return nil
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

// startOffset resolves the first or last offset of a partition, for a
// partition the group never committed.
func (k *kafkaClients) startOffset(ctx context.Context, topic string, partition int32, latest bool) (int64, error) {
	req := kafka.FirstOffsetOf(int(partition))
	if latest {
		req = kafka.LastOffsetOf(int(partition))
	}
	resp, err := k.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {req}}})
	if err != nil {
		return 0, fmt.Errorf("listing offsets of %s[%d]: %w", topic, partition, err)
	}
	for _, p := range resp.Topics[topic] {
		if p.Partition != int(partition) {
			continue
		}
		if p.Error != nil {
			return 0, fmt.Errorf("listing offsets of %s[%d]: %w", topic, partition, p.Error)
		}
		if latest {
			return p.LastOffset, nil
		}
		return p.FirstOffset, nil
	}
	return 0, fmt.Errorf("listing offsets of %s[%d]: no answer for the partition", topic, partition)
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
