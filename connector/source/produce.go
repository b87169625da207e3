package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// partitionProducer produces each message to the partition it names, in
// order, through kafka-go's Client.Produce: one request per run of
// messages of one partition, up to maxRequestBytes, retried as kafka-go's
// Writer retries a batch. It is the Writer's path without its work per
// message (a partition count asked of the transport, a balancer call, a
// map entry and a batch slot for every message), which was half of the CPU
// replay spent producing. The records it writes are the Writer's, byte
// for byte: the same record set encoding of the same keys, values,
// headers and timestamps, uncompressed.
type partitionProducer struct {
	client      *kafka.Client
	transport   *kafka.Transport
	topic       string
	maxAttempts int
	backoffMin  time.Duration
	backoffMax  time.Duration
	timeout     time.Duration // of one request
	log         *slog.Logger
}

// maxRequestBytes bounds the records of one produce request: brokers
// refuse a record batch over message.max.bytes, 1 MiB by default. A message
// larger than that goes alone, for the broker to take or refuse.
const maxRequestBytes = 1 << 20

// WriteMessages produces msgs, each to its Partition, and returns when
// all are acknowledged or one request failed for good. Several goroutines
// may call it at once.
func (p *partitionProducer) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	records := &messageRecords{}
	for len(msgs) > 0 {
		part := msgs[0].Partition
		n, size := 0, 0
		for n < len(msgs) && msgs[n].Partition == part {
			s := messageSize(&msgs[n])
			if n > 0 && size+s > maxRequestBytes {
				break
			}
			size += s
			n++
		}
		if err := p.produce(ctx, records, part, msgs[:n]); err != nil {
			return fmt.Errorf("partition %d, %d messages: %w", part, n, err)
		}
		msgs = msgs[n:]
	}
	return nil
}

// messageSize is about what m takes in a record batch.
func messageSize(m *kafka.Message) int {
	s := 24 + len(m.Key) + len(m.Value)
	for _, h := range m.Headers {
		s += 8 + len(h.Key) + len(h.Value)
	}
	return s
}

// produce writes msgs to partition part in one request, retrying
// temporary failures.
func (p *partitionProducer) produce(ctx context.Context, records *messageRecords, part int, msgs []kafka.Message) error {
	var err error
	for attempt := 0; attempt < p.maxAttempts; attempt++ {
		if attempt > 0 {
			d := min(time.Duration(attempt*attempt)*p.backoffMin, p.backoffMax)
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			}
		}
		records.reset(msgs)
		rctx, cancel := context.WithTimeout(ctx, p.timeout)
		var res *kafka.ProduceResponse
		res, err = p.client.Produce(rctx, &kafka.ProduceRequest{Topic: p.topic, Partition: part,
			RequiredAcks: kafka.RequireAll, Records: records})
		cancel()
		if err == nil && res != nil {
			err = res.Error
		}
		if err == nil {
			return nil
		}
		if !retriable(err) || ctx.Err() != nil {
			return err
		}
		p.log.Warn("produce request failed; trying again", "topic", p.topic, "partition", part,
			"records", len(msgs), "attempt", attempt+1, "of", p.maxAttempts, "err", err)
	}
	return err
}

// retriable reports the errors after which kafka-go's Writer tries a
// batch again: those the Kafka protocol calls retriable and broken
// connections.
func retriable(err error) bool {
	var t interface{ Temporary() bool }
	if errors.As(err, &t) && t.Temporary() {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Close closes the producer's idle connections.
func (p *partitionProducer) Close() error {
	p.transport.CloseIdleConnections()
	return nil
}

// messageRecords reads messages as the records of a produce request,
// reusing one record and two byte readers, as kafka-go's Writer does.
type messageRecords struct {
	msgs   []kafka.Message
	i      int
	record kafka.Record
	key    bytesReader
	value  bytesReader
}

func (r *messageRecords) reset(msgs []kafka.Message) { r.msgs, r.i = msgs, 0 }

// ReadRecord returns the next message as a record, io.EOF after the last.
func (r *messageRecords) ReadRecord() (*kafka.Record, error) {
	if r.i >= len(r.msgs) {
		return nil, io.EOF
	}
	m := &r.msgs[r.i]
	r.i++
	r.record = kafka.Record{Time: m.Time, Headers: m.Headers}
	if m.Key != nil {
		r.key.reset(m.Key)
		r.record.Key = &r.key
	}
	if m.Value != nil {
		r.value.reset(m.Value)
		r.record.Value = &r.value
	}
	return &r.record, nil
}

// bytesReader is a kafka.Bytes over a slice.
type bytesReader struct {
	b []byte
}

func (b *bytesReader) reset(p []byte) { b.b = p }

// Read reads from the slice.
func (b *bytesReader) Read(p []byte) (int, error) {
	if len(b.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.b)
	b.b = b.b[n:]
	return n, nil
}

// WriteTo writes the bytes not read yet to w: the record encoder copies
// them this way, without a buffer of its own.
func (b *bytesReader) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b.b)
	b.b = b.b[n:]
	return int64(n), err
}

// Len returns the bytes not read yet.
func (b *bytesReader) Len() int { return len(b.b) }

// Close does nothing.
func (b *bytesReader) Close() error { return nil }
