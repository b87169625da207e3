package connector

import (
	"context"
	"fmt"

	"github.com/pqsink/pqsink/connector/deadletter"
	"github.com/pqsink/pqsink/objstore"
)

// With errors: dead_letter, a partition's rejected records go to the
// dead-letter destination (package deadletter). This is the sink's side
// of it: the store of dead_letter.url opened as the store section says,
// handed with the Kafka client, the logger and the oversized counter to
// deadletter.New; the letter of a rejected record; and the skip-set entry
// that says how far a partition's letters are durable.

// deadLetterID is the skip-set entry of a partition's dead letters: the
// offset of the last rejected record whose dead letter is durable. No
// rendered path contains a NUL byte, so it cannot name a Parquet path.
const deadLetterID = "\x00dead-letters"

// newLetter is the dead letter of r, rejected as rej says.
func newLetter(r *record, rej *rejection) deadletter.Letter {
	return deadletter.Letter{Offset: r.offset, Time: r.time, Key: r.key, Value: r.value, Headers: r.headers,
		Reason: rej.Reason, Error: truncate(rej.Err.Error(), 1000)}
}

// newDeadLetters opens the dead-letter destination of the config, or
// returns nil when it has none. The store of dead_letter.url takes the
// store section's endpoint and credentials, the part buffers of pool and
// the retry hook onRetry.
func newDeadLetters(ctx context.Context, s *Sink, pool objstore.BufferPool, onRetry func(string, int, error)) (deadletter.Destination, error) {
	dl := s.cfg.DeadLetter
	var store objstore.Store
	if dl.URL != "" {
		c := s.cfg.Store
		c.URL = dl.URL
		st, err := openStore(ctx, &c, pool, onRetry)
		if err != nil {
			return nil, fmt.Errorf("dead_letter.url: %w", err)
		}
		store = st
	}
	o := deadletter.Options{
		Settings:          dl,
		Store:             store,
		ConditionalWrites: s.cfg.Store.ConditionalWrites,
		Log:               s.log,
		Oversized:         s.stats.deadLettersOversized,
	}
	if dl.Topic != "" {
		o.Kafka = s.kafka.client
	}
	return deadletter.New(o), nil
}

// truncate shortens s for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
