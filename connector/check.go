package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/health"
	"github.com/pqsink/pqsink/objstore"
)

// CheckTimeout bounds each thing Check contacts.
const CheckTimeout = 15 * time.Second

// Check contacts, read-only, what a sink made with CheckOnly depends on,
// each within timeout: the brokers (the metadata of the configured
// topics, which must exist), the store's bucket (a listing of at most one
// key, with the configured credentials) or folder, and the dead-letter
// destination. The catalog was looked at by New. Nothing is created: a
// missing file:// folder or catalog that the sink would create is a note,
// not a failure. The error joins every failure, each naming its
// configuration key. With Offline, Check contacts nothing and returns the
// notes of New only.
func (s *Sink) Check(ctx context.Context, timeout time.Duration) (notes []string, err error) {
	if !s.checkOnly {
		return nil, errors.New("connector: Check is for a sink made with CheckOnly")
	}
	notes = append(notes, s.checkNotes...)
	if s.offline {
		return notes, nil
	}
	var errs []error
	if err := s.checkKafka(ctx, timeout); err != nil {
		errs = append(errs, err)
	}
	note, err := checkDestination(ctx, &s.cfg.Store, s.cfg.Store.URL, timeout)
	if err != nil {
		errs = append(errs, fmt.Errorf("store.url: %w", err))
	} else if note != "" {
		notes = append(notes, "store.url: "+note)
	}
	if u := s.cfg.DeadLetter.URL; u != "" {
		note, err := checkDestination(ctx, &s.cfg.Store, u, timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("dead_letter.url: %w", err))
		} else if note != "" {
			notes = append(notes, "dead_letter.url: "+note)
		}
	}
	return notes, errors.Join(errs...)
}

// checkKafka asks the brokers for the metadata of the configured topics
// (with topic_regex, of all topics), and says which topics do not exist.
// The request does not create topics.
func (s *Sink) checkKafka(ctx context.Context, timeout time.Duration) error {
	k := &s.cfg.Kafka
	var want []string
	if s.regex == nil {
		want = k.Topics
	}
	if t := s.cfg.DeadLetter.Topic; t != "" && s.regex == nil {
		want = append(want[:len(want):len(want)], t)
	}
	mctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := s.kafka.client.Metadata(mctx, &kafka.MetadataRequest{Topics: want})
	if err != nil {
		if mctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return fmt.Errorf("kafka.brokers: cannot reach %s: %w", strings.Join(k.Brokers, ", "), err)
	}
	if s.regex != nil {
		return nil // no topic matching yet is waited for, not an error
	}
	found := map[string]error{}
	for _, t := range resp.Topics {
		found[t.Name] = t.Error
	}
	return health.CheckTopics(found, want, k.Topics, s.cfg.DeadLetter.Topic)
}

// checkDestination checks a store URL with the store section's settings
// and credentials (health.CheckDestination), retrying a request at most
// once.
func checkDestination(ctx context.Context, c *config.Store, rawURL string, timeout time.Duration) (note string, err error) {
	return health.CheckDestination(ctx, rawURL, timeout, func(ctx context.Context) (objstore.Store, error) {
		sc := *c
		sc.URL = rawURL
		sc.MaxRetries = min(sc.MaxRetries, 1)
		return openStore(ctx, &sc, nil, nil)
	})
}
