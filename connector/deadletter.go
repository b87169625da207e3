package connector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	rejectEnvelope = "envelope"  // its envelope cannot be stored: a header key that is not UTF-8
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
	switch {
	case errors.As(err, &syntax):
		return rejectDecode
	case errors.Is(err, rowgroup.ErrEnvelopeText):
		return rejectEnvelope
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
	var store *storeLetters
	if dl.URL != "" {
		c := s.cfg.Store
		c.URL = dl.URL
		st, err := openStore(ctx, &c, pool, onRetry)
		if err != nil {
			return nil, fmt.Errorf("dead_letter.url: %w", err)
		}
		store = &storeLetters{store: st, conditional: c.ConditionalWrites || !strings.HasPrefix(c.URL, "s3://")}
	}
	if dl.Topic == "" {
		if store == nil {
			return nil, nil
		}
		return store, nil
	}
	d := &topicLetters{
		w: &kafka.Writer{
			Addr:                   kafka.TCP(s.cfg.Kafka.Brokers...),
			Topic:                  dl.Topic,
			Balancer:               &kafka.Hash{},
			RequiredAcks:           kafka.RequireAll,
			BatchTimeout:           time.Millisecond,
			AllowAutoTopicCreation: true,
			Transport:              s.kafka.client.Transport,
		},
		client: s.kafka.client,
		log:    s.log.With("dead_letter_topic", dl.Topic),
		stats:  s.stats,
	}
	if store != nil {
		d.overflow = store // a nil *storeLetters must not become a non-nil interface
	}
	return d, nil
}

// defaultMessageBytes is Kafka's default max.message.bytes (and
// message.max.bytes): what a topic takes when the broker cannot say.
const defaultMessageBytes = 1048588

// batchOverhead is what a record batch of the v2 format adds to its
// records, which a broker counts against max.message.bytes, with room for
// the varints of one record's framing that kafka-go's size leaves out.
const batchOverhead = 61 + 64

// topicLetters produces dead letters to a Kafka topic, acknowledged by all
// in-sync replicas. A letter larger than the topic takes (its
// max.message.bytes, asked of the broker) goes to overflow when the
// config has dead_letter.url as well, else it is produced with its value
// cut to fit and the header pqsink.truncated: a letter that cannot be
// delivered must not hold its partition back forever.
type topicLetters struct {
	w        *kafka.Writer
	client   *kafka.Client
	overflow deadLetters // dead_letter.url's objects, or nil
	log      *slog.Logger
	stats    *Stats

	// limit is the largest message the topic takes, from the broker; 0
	// until known. Asked again when the broker refuses a message as too
	// large (its config may change) and while the topic does not exist.
	limit int64
}

func (d *topicLetters) send(ctx context.Context, topic string, partition int32, letters []letter) (int64, error) {
	for attempt := 0; ; attempt++ {
		if d.limit == 0 {
			d.learnLimit(ctx)
		}
		last, err := d.sendFitted(ctx, topic, partition, letters)
		if err == nil || attempt > 0 || !errors.Is(err, kafka.MessageSizeTooLarge) {
			return last, err
		}
		d.log.Warn("the dead-letter topic refused a message as too large; asking its max.message.bytes again", "error", err)
		d.limit = 0
	}
}

// sendFitted sends letters, each one sized to the topic's limit.
func (d *topicLetters) sendFitted(ctx context.Context, topic string, partition int32, letters []letter) (int64, error) {
	room := d.room()
	d.w.BatchBytes = room
	msgs := make([]kafka.Message, 0, len(letters))
	var oversized []letter
	var cut int
	for i := range letters {
		m := letters[i].message(topic, partition)
		if size := messageSize(&m); size > room {
			if d.overflow != nil {
				oversized = append(oversized, letters[i])
				continue
			}
			m = fitMessage(m, size, room)
			cut++
		}
		msgs = append(msgs, m)
	}
	last := letters[len(letters)-1].offset
	if len(oversized) > 0 {
		l, err := d.overflow.send(ctx, topic, partition, oversized)
		if err != nil {
			return 0, fmt.Errorf("dead letters larger than topic %s takes (%d bytes): %w", d.w.Topic, room, err)
		}
		last = max(last, l)
	}
	if len(msgs) > 0 {
		if err := d.w.WriteMessages(ctx, msgs...); err != nil {
			return 0, fmt.Errorf("dead-letter topic %s: %w", d.w.Topic, err)
		}
	}
	// Counted once durable: a failed send is tried again.
	if cut > 0 {
		d.stats.deadLettersOversized("cut", int64(cut))
		d.log.Warn("dead letters larger than the topic takes were sent with their values cut", "records", cut, "max_message_bytes", d.limit)
	}
	if len(oversized) > 0 {
		d.stats.deadLettersOversized("url", int64(len(oversized)))
	}
	return last, nil
}

// room is the largest message, as kafka-go sizes it, that fits the topic.
func (d *topicLetters) room() int64 {
	limit := d.limit
	if limit <= 0 {
		limit = defaultMessageBytes
	}
	return max(limit-batchOverhead, 1024)
}

// learnLimit asks the broker for the topic's max.message.bytes. When it
// cannot say (the topic is created by the first letter, or the broker
// refuses DescribeConfigs), Kafka's default stands in and the question is
// asked again with the next letters.
func (d *topicLetters) learnLimit(ctx context.Context) {
	n, err := topicMessageBytes(ctx, d.client, d.w.Topic)
	if err != nil {
		d.log.Debug("max.message.bytes of the dead-letter topic unknown; assuming Kafka's default", "default", defaultMessageBytes, "error", err)
		return
	}
	d.limit = n
	d.log.Info("dead-letter topic's message limit", "max_message_bytes", n)
}

// topicMessageBytes is the max.message.bytes of a topic, as its broker
// reports it.
func topicMessageBytes(ctx context.Context, c *kafka.Client, topic string) (int64, error) {
	resp, err := c.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"max.message.bytes"},
	}}})
	if err != nil {
		return 0, err
	}
	for _, r := range resp.Resources {
		if r.Error != nil {
			return 0, r.Error
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "max.message.bytes" {
				n, err := strconv.ParseInt(e.ConfigValue, 10, 64)
				if err != nil || n <= 0 {
					return 0, fmt.Errorf("max.message.bytes %q is not a size", e.ConfigValue)
				}
				return n, nil
			}
		}
	}
	return 0, errors.New("the broker did not return max.message.bytes")
}

// messageSize is kafka-go's size of m, which it holds to the writer's
// BatchBytes: the legacy message format's fields, which are never smaller
// than a v2 record's.
func messageSize(m *kafka.Message) int64 {
	n := int64(4+1+1+8) + 4 + int64(len(m.Key)) + 4 + int64(len(m.Value)) + 4
	for _, h := range m.Headers {
		n += 2 + int64(len(h.Key)) + 4 + int64(len(h.Value))
	}
	return n
}

// fitMessage cuts m, of size bytes, to at most room: its value first, then,
// when the key and headers alone are too large, its key and its original
// headers (the pqsink.* headers stay). pqsink.truncated says what was cut
// and pqsink.original_bytes how large the value was.
func fitMessage(m kafka.Message, size, room int64) kafka.Message {
	what := "value"
	orig := int64(len(m.Value))
	const extra = int64(2 + len("pqsink.truncated") + 4 + len("value,key,headers") + 2 + len("pqsink.original_bytes") + 4 + 20)
	over := size + extra - room
	if over <= int64(len(m.Value)) {
		m.Value = m.Value[:int64(len(m.Value))-over]
	} else {
		m.Value = m.Value[:0]
		var pq []kafka.Header
		for _, h := range m.Headers {
			if strings.HasPrefix(h.Key, "pqsink.") {
				pq = append(pq, h)
			}
		}
		m.Headers = pq
		m.Key = m.Key[:min(int64(len(m.Key)), max(0, room-messageSize(&m)-extra))]
		what = "value,key,headers"
	}
	m.Headers = append(m.Headers,
		kafka.Header{Key: "pqsink.truncated", Value: []byte(what)},
		kafka.Header{Key: "pqsink.original_bytes", Value: strconv.AppendInt(nil, orig, 10)})
	return m
}

func (d *topicLetters) close() error {
	err := d.w.Close()
	if d.overflow != nil {
		err = errors.Join(err, d.overflow.close())
	}
	return err
}

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

// headerLine is one header of a dead letter. JSON text cannot hold a key
// that is not UTF-8 (encoding/json would replace its bad bytes), so such a
// key is also given whole, in base64, as key_bytes.
type headerLine struct {
	Key      string `json:"key"`
	KeyBytes []byte `json:"key_bytes,omitempty"`
	Value    []byte `json:"value"`
}

func newHeaderLine(h rowgroup.Header) headerLine {
	l := headerLine{Key: h.Key, Value: h.Value}
	if !utf8.ValidString(h.Key) {
		l.KeyBytes = []byte(h.Key)
	}
	return l
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
				line.Headers = append(line.Headers, newHeaderLine(h))
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
