package connector

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// Reasons a record is rejected, as counted and as the pqsink.reason
// header of its dead letter says.
const (
	rejectDecode   = "decode"    // not valid JSON (or Avro, ...)
	rejectSchema   = "schema"    // valid, but does not fit the files' schema
	rejectTooLarge = "too_large" // larger than max_record_bytes
	rejectPath     = "path"      // its path cannot be rendered (a path field is an object, a bad time_field)
)

// rejection is a record that cannot be written, and why.
type rejection struct {
	reason string
	err    error
}

func (r *rejection) Error() string { return r.err.Error() }
func (r *rejection) Unwrap() error { return r.err }

// classify names the reason of a payload error.
func classify(err error) string {
	var syntax *jsonscan.SyntaxError
	if errors.As(err, &syntax) {
		return rejectDecode
	}
	return rejectSchema
}

// deadLetters produces rejected records to the dead-letter topic. A
// partition queues its dead letters and sends them before it commits, so
// that no offset is committed before the dead letter of a record below it
// is acknowledged by all in-sync replicas.
type deadLetters struct {
	w *kafka.Writer
}

func newDeadLetters(s *Sink) *deadLetters {
	if s.cfg.DeadLetter.Topic == "" {
		return nil
	}
	return &deadLetters{w: &kafka.Writer{
		Addr:                   kafka.TCP(s.cfg.Kafka.Brokers...),
		Topic:                  s.cfg.DeadLetter.Topic,
		Balancer:               &kafka.Hash{},
		RequiredAcks:           kafka.RequireAll,
		BatchTimeout:           time.Millisecond,
		AllowAutoTopicCreation: true,
		Transport:              s.kafka.client.Transport,
	}}
}

// letter makes the dead letter of r from partition topic[partition].
func letter(topic string, partition int32, r *record, rej *rejection) kafka.Message {
	m := kafka.Message{Key: r.key, Value: r.value, Time: r.time}
	for _, h := range r.headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	m.Headers = append(m.Headers,
		kafka.Header{Key: "pqsink.error", Value: []byte(truncate(rej.err.Error(), 1000))},
		kafka.Header{Key: "pqsink.reason", Value: []byte(rej.reason)},
		kafka.Header{Key: "pqsink.topic", Value: []byte(topic)},
		kafka.Header{Key: "pqsink.partition", Value: strconv.AppendInt(nil, int64(partition), 10)},
		kafka.Header{Key: "pqsink.offset", Value: strconv.AppendInt(nil, r.offset, 10)},
	)
	return m
}

// send produces the queued letters and waits for their acknowledgement.
func (d *deadLetters) send(ctx context.Context, letters []kafka.Message) error {
	if err := d.w.WriteMessages(ctx, letters...); err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", d.w.Topic, err)
	}
	return nil
}

func (d *deadLetters) close() error {
	if d == nil {
		return nil
	}
	return d.w.Close()
}
