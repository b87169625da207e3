package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/segmentio/kafka-go"
)

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
	overflow Destination // dead_letter.url's objects, or nil
	log      *slog.Logger
	// oversized counts the durable letters that the topic could not take
	// whole, by action.
	oversized func(action string, n int64)

	// limit is the largest message the topic takes, from the broker; 0
	// until known. Asked again when the broker refuses a message as too
	// large (its config may change) and while the topic does not exist.
	limit int64
}

func (d *topicLetters) Send(ctx context.Context, topic string, partition int32, letters []Letter) (int64, error) {
	for attempt := 0; ; attempt++ {
		if d.limit == 0 {
			d.learnLimit(ctx)
		}
		last, err := d.sendFitted(ctx, topic, partition, letters)
		if err == nil || attempt > 0 || !tooLarge(err) {
			return last, err
		}
		d.log.Warn("the dead-letter topic refused a message as too large; asking its max.message.bytes again", "error", err)
		d.limit = 0
	}
}

// tooLarge reports whether err is the broker's refusal of a message as
// too large. kafka-go's Writer returns its errors as kafka.WriteErrors,
// one per message, which errors.Is does not look into.
func tooLarge(err error) bool {
	if errors.Is(err, kafka.MessageSizeTooLarge) {
		return true
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if errors.Is(e, kafka.MessageSizeTooLarge) {
				return true
			}
		}
	}
	return false
}

// sendFitted sends letters, each one sized to the topic's limit.
func (d *topicLetters) sendFitted(ctx context.Context, topic string, partition int32, letters []Letter) (int64, error) {
	room := d.room()
	d.w.BatchBytes = room
	msgs := make([]kafka.Message, 0, len(letters))
	var oversized []Letter
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
	last := letters[len(letters)-1].Offset
	if len(oversized) > 0 {
		l, err := d.overflow.Send(ctx, topic, partition, oversized)
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
		d.oversized(ActionCut, int64(cut))
		d.log.Warn("dead letters larger than the topic takes were sent with their values cut", "records", cut, "max_message_bytes", d.limit)
	}
	if len(oversized) > 0 {
		d.oversized(ActionURL, int64(len(oversized)))
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

func (d *topicLetters) Close() error {
	err := d.w.Close()
	if d.overflow != nil {
		err = errors.Join(err, d.overflow.Close())
	}
	return err
}

// message makes the dead letter of l from partition topic[partition].
func (l *Letter) message(topic string, partition int32) kafka.Message {
	m := kafka.Message{Key: l.Key, Value: l.Value, Time: l.Time}
	for _, h := range l.Headers {
		m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: h.Value})
	}
	m.Headers = append(m.Headers,
		kafka.Header{Key: "pqsink.error", Value: []byte(l.Error)},
		kafka.Header{Key: "pqsink.reason", Value: []byte(l.Reason)},
		kafka.Header{Key: "pqsink.topic", Value: []byte(topic)},
		kafka.Header{Key: "pqsink.partition", Value: strconv.AppendInt(nil, int64(partition), 10)},
		kafka.Header{Key: "pqsink.offset", Value: strconv.AppendInt(nil, l.Offset, 10)},
	)
	return m
}
