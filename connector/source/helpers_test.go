package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/rowgroup/rowgrouptest"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// srcRecord is one record as it was in Kafka.
type srcRecord struct {
	topic     string
	partition int32
	offset    int64
	ms        int64
	key       []byte // nil: null
	headers   []kafka.Header
	value     []byte
}

// recordOf returns record i of a partition: the reference event, with
// keys null, empty or set and headers none, one, or two with a repeat.
func recordOf(gen *events.Generator, topic string, partition int32, offset int64, i int) srcRecord {
	r := srcRecord{topic: topic, partition: partition, offset: offset, value: gen.Append(nil),
		ms: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC).UnixMilli() + int64(i)*1000}
	switch i % 4 {
	case 0:
	case 1:
		r.key = []byte{}
		r.headers = []kafka.Header{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}}
	case 2:
		r.key = []byte("k" + strconv.Itoa(i))
		r.headers = []kafka.Header{{Key: "a", Value: []byte{0, 1}}, {Key: "b", Value: []byte{}}, {Key: "a", Value: []byte("2")}}
	case 3:
		r.key = []byte{0xff, 0}
	}
	return r
}

// writeFile writes records as the sink does (events.Schema payload and the
// envelope, footer pqsink.kafka.*) into dir under key, rowGroup records
// per row group.
func writeFile(t testing.TB, dir, key string, recs []srcRecord, rowGroup int, opts ...writer.Option) {
	t.Helper()
	writeFileWith(t, dir, key, events.Schema, recs, rowGroup, opts...)
}

// writeFileWith is writeFile with a payload of another message schema,
// each record's value its JSON.
func writeFileWith(t testing.TB, dir, key, schemaText string, recs []srcRecord, rowGroup int, opts ...writer.Option) {
	t.Helper()
	writeRecords(t, dir, key, schemaText, recs, rowGroup, true, opts...)
}

// writeRecords is writeFileWith, with the pqsink.kafka.* footer metadata
// when footer is set: without it, the file is as another engine that
// rewrote the sink's file would write it.
func writeRecords(t testing.TB, dir, key, schemaText string, recs []srcRecord, rowGroup int, footer bool, opts ...writer.Option) {
	t.Helper()
	msg, err := schema.Parse(schemaText)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.New(msg.Name(), append(msg.Fields(), rowgroup.EnvelopeNode())...)
	if err != nil {
		t.Fatal(err)
	}
	g, b := rowgrouptest.JSON(t, s)
	var out bytes.Buffer
	w, err := writer.New(&out, s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		env := &rowgroup.Envelope{Topic: r.topic, Partition: r.partition, Offset: r.offset, Timestamp: time.UnixMilli(r.ms), Key: r.key}
		for _, h := range r.headers {
			env.Headers = append(env.Headers, rowgroup.Header{Key: h.Key, Value: h.Value})
		}
		if err := b.Append(r.value, env); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if (i+1)%rowGroup == 0 || i == len(recs)-1 {
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatal(err)
			}
			g.Reset()
		}
	}
	if footer {
		w.SetKeyValue(archive.FooterTopic, recs[0].topic)
		w.SetKeyValue(archive.FooterPartition, strconv.Itoa(int(recs[0].partition)))
		w.SetKeyValue(archive.FooterFirstOffset, strconv.FormatInt(recs[0].offset, 10))
		w.SetKeyValue(archive.FooterLastOffset, strconv.FormatInt(recs[len(recs)-1].offset, 10))
		w.SetKeyValue(archive.FooterRecords, strconv.Itoa(len(recs)))
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sinkKey is the object key of the default path template.
func sinkKey(topic string, partition int32, first int64) string {
	return fmt.Sprintf("%s/%s+%d+%020d.parquet", topic, topic, partition, first)
}

// collector is a Producer that keeps copies of what it is given; cancel,
// when set, is called once after stopAfter messages.
type collector struct {
	mu        sync.Mutex
	msgs      []kafka.Message
	stopAfter int
	cancel    func()
	calls     atomic.Int64
}

func (c *collector) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	c.calls.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range msgs {
		cp := kafka.Message{Topic: m.Topic, Partition: m.Partition, Time: m.Time,
			Key: cloneBytes(m.Key), Value: cloneBytes(m.Value)}
		for _, h := range m.Headers {
			cp.Headers = append(cp.Headers, kafka.Header{Key: h.Key, Value: cloneBytes(h.Value)})
		}
		c.msgs = append(c.msgs, cp)
	}
	if c.cancel != nil && len(c.msgs) >= c.stopAfter {
		c.cancel()
		c.cancel = nil
	}
	return nil
}

func (c *collector) Close() error { return nil }

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// countingStore counts the openings of each object.
type countingStore struct {
	objstore.Store
	mu    sync.Mutex
	opens map[string]int
}

func (s *countingStore) NewReaderAt(ctx context.Context, key string) (objstore.ReaderAt, error) {
	s.mu.Lock()
	s.opens[key]++
	s.mu.Unlock()
	return s.Store.NewReaderAt(ctx, key)
}

func (s *countingStore) opened(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens[key]
}

// openDir opens dir as a counting file store.
func openDir(t testing.TB, dir string) *countingStore {
	t.Helper()
	st, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &countingStore{Store: st, opens: map[string]int{}}
}
