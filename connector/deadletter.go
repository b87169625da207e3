package connector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
)

// Reasons a record is rejected, as counted and as the pqsink.reason
// header of its dead letter says.
const (
	rejectDecode   = "decode"    // not valid JSON (or Avro, ...)
	rejectSchema   = "schema"    // valid, but does not fit the files' schema
	rejectTooLarge = "too_large" // larger than max_record_bytes
	rejectPath     = "path"      // its path cannot be rendered (a path field is an object, a bad time_field)
)

// deadLetterID is the skip-set entry of a partition's dead letters: the
// offset of the last rejected record whose dead letter is durable. No
// rendered path contains a NUL byte, so it cannot name a Parquet path.
const deadLetterID = "\x00dead-letters"

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

// letter is a rejected record on its way to the dead letters.
type letter struct {
	offset  int64
	time    time.Time
	key     []byte // nil for a null key
	value   []byte
	headers []rowgroup.Header
	reason  string
	err     string
}

func newLetter(r *record, rej *rejection) letter {
	return letter{offset: r.offset, time: r.time, key: r.key, value: r.value, headers: r.headers,
		reason: rej.reason, err: truncate(rej.err.Error(), 1000)}
}

// deadLetters is where a partition's rejected records go. A partition
// queues its letters and sends them before it commits, so that no offset
// is committed before the dead letter of a record below it is durable.
type deadLetters interface {
	// send makes letters (of one partition, in offset order) durable and
	// returns the offset of the last record whose letter is now durable,
	// which may be beyond the last of letters when an earlier owner of the
	// partition wrote more.
	send(ctx context.Context, topic string, partition int32, letters []letter) (int64, error)
	close() error
}

// newDeadLetters opens the dead-letter destination of the config, or
// returns nil when it has none.
func newDeadLetters(ctx context.Context, s *Sink, pool objstore.BufferPool, onRetry func(string, int, error)) (deadLetters, error) {
	dl := &s.cfg.DeadLetter
	switch {
	case dl.Topic != "":
		return &topicLetters{w: &kafka.Writer{
			Addr:                   kafka.TCP(s.cfg.Kafka.Brokers...),
			Topic:                  dl.Topic,
			Balancer:               &kafka.Hash{},
			RequiredAcks:           kafka.RequireAll,
			BatchTimeout:           time.Millisecond,
			AllowAutoTopicCreation: true,
			Transport:              s.kafka.client.Transport,
		}}, nil
	case dl.URL != "":
		c := s.cfg.Store
		c.URL = dl.URL
		store, err := openStore(ctx, &c, pool, onRetry)
		if err != nil {
			return nil, fmt.Errorf("dead_letter.url: %w", err)
		}
		return &storeLetters{store: store, conditional: c.ConditionalWrites || !strings.HasPrefix(c.URL, "s3://")}, nil
	}
	return nil, nil
}

// topicLetters produces dead letters to a Kafka topic, acknowledged by all
// in-sync replicas.
type topicLetters struct {
	w *kafka.Writer
}

func (d *topicLetters) send(ctx context.Context, topic string, partition int32, letters []letter) (int64, error) {
	msgs := make([]kafka.Message, len(letters))
	for i := range letters {
		msgs[i] = letters[i].message(topic, partition)
	}
	if err := d.w.WriteMessages(ctx, msgs...); err != nil {
		return 0, fmt.Errorf("dead-letter topic %s: %w", d.w.Topic, err)
	}
	return letters[len(letters)-1].offset, nil
}

func (d *topicLetters) close() error { return d.w.Close() }

// message makes the dead letter of l from partition topic[partition].
func (l *letter) message(topic string, partition int32) kafka.Message {
	m := kafka.Message{Key: l.key, Value: l.value, Time: l.time}
	for _, h := range l.headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	m.Headers = append(m.Headers,
		kafka.Header{Key: "pqsink.error", Value: []byte(l.err)},
		kafka.Header{Key: "pqsink.reason", Value: []byte(l.reason)},
		kafka.Header{Key: "pqsink.topic", Value: []byte(topic)},
		kafka.Header{Key: "pqsink.partition", Value: strconv.AppendInt(nil, int64(partition), 10)},
		kafka.Header{Key: "pqsink.offset", Value: strconv.AppendInt(nil, l.offset, 10)},
	)
	return m
}

// storeLetters writes dead letters as JSON Lines objects under a prefix,
// with the rules of the Parquet files: an object's key is a function of
// the partition and the offset of its first letter, and it is created only
// if absent. When it exists, an earlier owner of the partition wrote the
// letters from that offset on: its last line says how far, and only the
// letters after it are written, to the key of the first of them.
type storeLetters struct {
	store       objstore.Store
	conditional bool // the store refuses to overwrite; else look first
}

// letterLine is one line of a dead-letter object.
type letterLine struct {
	Topic     string       `json:"topic"`
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp time.Time    `json:"timestamp"`
	Key       []byte       `json:"key"` // base64; null for a null key
	Value     []byte       `json:"value"`
	Headers   []headerLine `json:"headers"`
	Reason    string       `json:"reason"`
	Error     string       `json:"error"`
}

type headerLine struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// letterKey is the object of the dead letters of topic[partition] from offset first.
func letterKey(topic string, partition int32, first int64) string {
	t := escapeSegment(topic)
	return fmt.Sprintf("%s/%d/%s+%d+%020d.jsonl", t, partition, t, partition, first)
}

func (d *storeLetters) send(ctx context.Context, topic string, partition int32, letters []letter) (int64, error) {
	var body bytes.Buffer
	for len(letters) > 0 {
		key := letterKey(topic, partition, letters[0].offset)
		body.Reset()
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		for i := range letters {
			l := &letters[i]
			line := letterLine{Topic: topic, Partition: partition, Offset: l.offset, Timestamp: l.time.UTC(),
				Key: l.key, Value: l.value, Reason: l.reason, Error: l.err, Headers: []headerLine{}}
			if line.Value == nil {
				line.Value = []byte{}
			}
			for _, h := range l.headers {
				line.Headers = append(line.Headers, headerLine{h.Key, h.Value})
			}
			if err := enc.Encode(&line); err != nil {
				return 0, fmt.Errorf("dead letter %s: %w", key, err)
			}
		}
		err := objstore.ErrExists
		if !d.conditional {
			if _, err = d.store.Head(ctx, key); errors.Is(err, objstore.ErrNotExist) {
				err = nil
			} else if err == nil {
				err = objstore.ErrExists
			}
		}
		if d.conditional || err == nil {
			_, err = objstore.Put(ctx, d.store, key, bytes.NewReader(body.Bytes()), objstore.ContentType("application/x-ndjson"))
		}
		if err == nil {
			return letters[len(letters)-1].offset, nil
		}
		if !errors.Is(err, objstore.ErrExists) {
			return 0, fmt.Errorf("dead letters %s: %w", key, err)
		}
		last, err := d.lastOffset(ctx, key, topic, partition, letters[0].offset)
		if err != nil {
			return 0, err
		}
		i := 0
		for i < len(letters) && letters[i].offset <= last {
			i++
		}
		if letters = letters[i:]; len(letters) == 0 {
			return last, nil
		}
	}
	return 0, nil // not reached: send is called with letters
}

// lastOffset reads the offset of the last letter in the existing object
// key, checking that it holds topic[partition] from offset first.
func (d *storeLetters) lastOffset(ctx context.Context, key, topic string, partition int32, first int64) (int64, error) {
	r, _, err := d.store.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("adopting dead letters %s: %w", key, err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<30)
	last, n := int64(-1), 0
	for sc.Scan() {
		var l struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return 0, fmt.Errorf("adopting dead letters %s: line %d: %w", key, n+1, err)
		}
		if l.Topic != topic || l.Partition != partition || (n == 0 && l.Offset != first) || l.Offset <= last {
			return 0, fmt.Errorf("adopting dead letters %s: line %d holds %s[%d] offset %d, not the letters of this partition from offset %d: is another sink writing to the same prefix?",
				key, n+1, l.Topic, l.Partition, l.Offset, first)
		}
		last = l.Offset
		n++
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("adopting dead letters %s: %w", key, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("adopting dead letters %s: the object is empty", key)
	}
	return last, nil
}

func (d *storeLetters) close() error { return d.store.Close() }
