// Package deadletter is where the sink's rejected records go
// (errors: dead_letter): a Kafka topic (dead_letter.topic), JSON Lines
// objects in a store (dead_letter.url), or the topic with the store for
// the records too large for the topic.
//
// A Destination makes a partition's letters durable before the sink
// commits the offsets they stand for, and says how far the letters of the
// partition are durable, which may be beyond what it was handed when an
// earlier owner of the partition wrote more: the objects are keyed by the
// partition and the offset of their first letter and created only if
// absent, as the Parquet files are.
//
// The package knows nothing of the sink runtime: the sink (package
// connector) opens the store of dead_letter.url and hands it, with its
// Kafka client, logger and a counter hook, to New in Options.
package deadletter

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
)

// Letter is a rejected record on its way to the dead letters.
type Letter struct {
	Offset  int64
	Time    time.Time
	Key     []byte // nil for a null key
	Value   []byte
	Headers []rowgroup.Header
	// Reason names why the record was rejected (decode, schema,
	// too_large, path, envelope), as the pqsink.reason header and the
	// reason field of a JSON line say.
	Reason string
	// Error is the rejection's message, as pqsink.error says.
	Error string
}

// Destination is where a partition's rejected records go. A partition
// queues its letters and sends them before it commits, so that no offset
// is committed before the dead letter of a record below it is durable.
type Destination interface {
	// Send makes letters (of one partition, in offset order, at least
	// one) durable and returns the offset of the last record whose letter
	// is now durable, which may be beyond the last of letters when an
	// earlier owner of the partition wrote more.
	Send(ctx context.Context, topic string, partition int32, letters []Letter) (int64, error)
	// Close releases the topic's producer and the store.
	Close() error
}

// Oversized dead letters, by what was done with them: the counter
// hook's actions.
const (
	ActionCut = "cut" // sent to the topic with the value cut to fit
	ActionURL = "url" // written to dead_letter.url instead
)

// Options are what New needs from the sink.
type Options struct {
	// Settings are the dead_letter section.
	Settings config.DeadLetter
	// Store is the store of Settings.URL, opened by the caller (with the
	// store section's endpoint and credentials), or nil without a URL.
	// The Destination takes it over: its Close closes Store.
	Store objstore.Store
	// ConditionalWrites is store.conditional_writes: an s3:// Store
	// refuses to overwrite an object only with it, other stores always
	// do. Without it an object is looked for before it is written.
	ConditionalWrites bool
	// Kafka is the client whose brokers and transport the topic's
	// producer uses, and which is asked the topic's max.message.bytes.
	// Needed with Settings.Topic only.
	Kafka *kafka.Client
	// Log receives the topic's lines, with the attribute
	// dead_letter_topic; nil logs nothing.
	Log *slog.Logger
	// Oversized counts n durable dead letters that the topic could not
	// take whole, by action (ActionCut, ActionURL); nil counts nothing.
	Oversized func(action string, n int64)
}

// New returns the Destination of o.Settings, nil when it names none.
func New(o Options) Destination {
	var store *storeLetters
	if o.Settings.URL != "" && o.Store != nil {
		store = &storeLetters{store: o.Store, conditional: o.ConditionalWrites || !strings.HasPrefix(o.Settings.URL, "s3://")}
	}
	if o.Settings.Topic == "" {
		if store == nil {
			return nil // a nil *storeLetters must not become a non-nil interface
		}
		return store
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	oversized := o.Oversized
	if oversized == nil {
		oversized = func(string, int64) {}
	}
	d := &topicLetters{
		w: &kafka.Writer{
			Addr:                   o.Kafka.Addr,
			Topic:                  o.Settings.Topic,
			Balancer:               &kafka.Hash{},
			RequiredAcks:           kafka.RequireAll,
			BatchTimeout:           time.Millisecond,
			AllowAutoTopicCreation: true,
			Transport:              o.Kafka.Transport,
		},
		client:    o.Kafka,
		log:       log.With("dead_letter_topic", o.Settings.Topic),
		oversized: oversized,
	}
	if store != nil {
		d.overflow = store // a nil *storeLetters must not become a non-nil interface
	}
	return d
}
