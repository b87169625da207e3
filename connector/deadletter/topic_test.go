package deadletter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/rowgroup"
)

// TestTopicLetters: letters produced to the dead-letter topic carry the
// record's key, value and headers and the pqsink.* headers; one larger
// than the topic's max.message.bytes is cut to fit (pqsink.truncated)
// or, with dead_letter.url, written there instead, and counted either
// way. Run against the in-process broker, without a sink.
func TestTopicLetters(t *testing.T) {
	cases := []struct {
		name   string
		limit  int  // the topic's max.message.bytes; 0: the topic does not exist, the first letter creates it
		url    bool // dead_letter.url beside the topic
		big    int  // bytes of the second letter's value
		want   string
		counts map[string]int64
	}{
		{"created by the first letter", 0, false, 5_000, "whole", map[string]int64{}},
		{"fits the topic", 2 << 20, false, 1_100_000, "whole", map[string]int64{}},
		{"too large, cut", 100_000, false, 300_000, "cut", map[string]int64{ActionCut: 1}},
		{"too large, to the url", 100_000, true, 300_000, "url", map[string]int64{ActionURL: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			const dlq = "in.dlq"
			broker := kafkatest.Start(t, 1)
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			client := &kafka.Client{Addr: kafka.TCP(broker.Brokers...), Transport: tr}
			if c.limit > 0 {
				spec := kafka.TopicConfig{Topic: dlq, NumPartitions: 1, ReplicationFactor: 1,
					ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: fmt.Sprint(c.limit)}}}
				if _, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{spec}}); err != nil {
					t.Fatal(err)
				}
			}
			o := Options{Settings: config.DeadLetter{Topic: dlq}, Kafka: client}
			var store objstore.Store
			if c.url {
				var err error
				o.Settings.URL = "file://" + t.TempDir()
				if store, err = objstore.Open(ctx, o.Settings.URL); err != nil {
					t.Fatal(err)
				}
				o.Store = store
			}
			counts := map[string]int64{}
			o.Oversized = func(action string, n int64) { counts[action] += n }
			d := New(o)
			defer func() {
				if err := d.Close(); err != nil {
					t.Error(err)
				}
			}()

			big := bytes.Repeat([]byte{'b'}, c.big)
			letters := []Letter{
				{Offset: 3, Time: time.UnixMilli(1700000000000), Key: []byte("small"), Value: []byte("{bad"),
					Headers: []rowgroup.Header{{Key: "origin", Value: []byte("test")}}, Reason: "decode", Error: "unexpected end"},
				{Offset: 7, Time: time.UnixMilli(1700000000007), Key: nil, Value: big, Reason: "schema", Error: "no field n"},
			}
			last, err := d.Send(ctx, "in", 2, letters)
			if err != nil {
				t.Fatal(err)
			}
			if last != 7 {
				t.Errorf("last %d, want 7", last)
			}
			if fmt.Sprint(counts) != fmt.Sprint(c.counts) {
				t.Errorf("oversized counts %v, want %v", counts, c.counts)
			}

			msgs := fetchAll(ctx, t, client, dlq)
			wantInTopic := 2
			if c.want == "url" {
				wantInTopic = 1
			}
			if len(msgs) != wantInTopic {
				t.Fatalf("%d messages in the topic, want %d", len(msgs), wantInTopic)
			}
			h := headers(msgs[0])
			if string(msgs[0].Key) != "small" || string(msgs[0].Value) != "{bad" || h["origin"] != "test" ||
				h["pqsink.reason"] != "decode" || h["pqsink.error"] != "unexpected end" || h["pqsink.topic"] != "in" ||
				h["pqsink.partition"] != "2" || h["pqsink.offset"] != "3" || h["pqsink.truncated"] != "" {
				t.Errorf("first letter: key %q value %q headers %v", msgs[0].Key, msgs[0].Value, h)
			}
			switch c.want {
			case "whole":
				h := headers(msgs[1])
				if !bytes.Equal(msgs[1].Value, big) || h["pqsink.offset"] != "7" || h["pqsink.reason"] != "schema" || h["pqsink.truncated"] != "" {
					t.Errorf("second letter: %d bytes of value (want %d), headers %v", len(msgs[1].Value), len(big), h)
				}
			case "cut":
				h := headers(msgs[1])
				if len(msgs[1].Value) == 0 || len(msgs[1].Value) >= len(big) || !bytes.HasPrefix(big, msgs[1].Value) ||
					h["pqsink.truncated"] != "value" || h["pqsink.original_bytes"] != fmt.Sprint(len(big)) || h["pqsink.offset"] != "7" {
					t.Errorf("cut letter: %d bytes of value, headers %v", len(msgs[1].Value), h)
				}
			case "url":
				r, _, err := store.Get(ctx, "in/2/in+2+00000000000000000007.jsonl")
				if err != nil {
					t.Fatal(err)
				}
				body, err := io.ReadAll(r)
				r.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(body), `"offset":7`) || !strings.Contains(string(body), `"reason":"schema"`) || strings.Count(string(body), "\n") != 1 {
					t.Errorf("the letter under the url: %.200s", body)
				}
			}
		})
	}
}

// fetchAll reads every message of partition 0 of topic.
func fetchAll(ctx context.Context, t *testing.T, c *kafka.Client, topic string) []kafka.Message {
	t.Helper()
	var msgs []kafka.Message
	for offset := int64(0); ; {
		resp, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: 0, Offset: offset, MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil {
			t.Fatal(resp.Error)
		}
		for {
			r, err := resp.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			m := kafka.Message{Offset: r.Offset, Headers: r.Headers}
			if r.Key != nil {
				if m.Key, err = io.ReadAll(r.Key); err != nil {
					t.Fatal(err)
				}
			}
			if r.Value != nil {
				if m.Value, err = io.ReadAll(r.Value); err != nil {
					t.Fatal(err)
				}
			}
			msgs = append(msgs, m)
			offset = r.Offset + 1
		}
		if offset >= resp.HighWatermark {
			return msgs
		}
	}
}

// headers are a message's headers by key.
func headers(m kafka.Message) map[string]string {
	h := map[string]string{}
	for _, x := range m.Headers {
		h[x.Key] = string(x.Value)
	}
	return h
}

// TestFitMessage: a message cut to fit a room is no larger than the room,
// keeps the pqsink.* headers, and says what was cut.
func TestFitMessage(t *testing.T) {
	pq := []kafka.Header{{Key: "pqsink.reason", Value: []byte("decode")}, {Key: "pqsink.offset", Value: []byte("9")}}
	cases := []struct {
		name      string
		key       int
		value     int
		header    int // bytes of one non-pqsink header's value
		room      int64
		truncated string
	}{
		{"value over", 10, 50_000, 10, 10_000, "value"},
		{"headers over", 10, 500, 20_000, 10_000, "value,key,headers"},
		{"key over", 20_000, 500, 10, 10_000, "value,key,headers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := kafka.Message{Key: bytes.Repeat([]byte{'k'}, c.key), Value: bytes.Repeat([]byte{'v'}, c.value),
				Headers: append([]kafka.Header{{Key: "origin", Value: bytes.Repeat([]byte{'h'}, c.header)}}, pq...)}
			size := messageSize(&m)
			if size <= c.room {
				t.Fatalf("the case fits already: %d <= %d", size, c.room)
			}
			got := fitMessage(m, size, c.room)
			if n := messageSize(&got); n > c.room {
				t.Errorf("fitted to %d bytes, room %d", n, c.room)
			}
			h := headers(got)
			if h["pqsink.truncated"] != c.truncated || h["pqsink.original_bytes"] != fmt.Sprint(c.value) ||
				h["pqsink.reason"] != "decode" || h["pqsink.offset"] != "9" {
				t.Errorf("headers %v", h)
			}
			if _, ok := h["origin"]; ok == (c.truncated != "value") {
				t.Errorf("origin header kept: %v, with %s cut", ok, c.truncated)
			}
		})
	}
}

// TestNew: without a topic or a url there is no destination; with a url
// only, the store's.
func TestNew(t *testing.T) {
	if d := New(Options{}); d != nil {
		t.Errorf("New without settings: %T, want nil", d)
	}
	store, err := objstore.Open(context.Background(), "file://"+t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Settings: config.DeadLetter{URL: "file:///x"}, Store: store})
	if s, ok := d.(*storeLetters); !ok || !s.conditional {
		t.Errorf("New with a file:// url: %#v, want a conditional store destination", d)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}

// TestTopicLettersLimitChanged: when the topic's max.message.bytes
// shrinks after the destination learned it, the broker's refusal makes
// the destination ask again, and the letter is cut to the new limit
// instead of being refused forever.
func TestTopicLettersLimitChanged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const dlq = "in.dlq"
	broker := kafkatest.Start(t, 1)
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(broker.Brokers...), Transport: tr}
	spec := kafka.TopicConfig{Topic: dlq, NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "2000000"}}}
	if _, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{spec}}); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	d := New(Options{Settings: config.DeadLetter{Topic: dlq}, Kafka: client, Oversized: func(a string, n int64) { counts[a] += n }})
	defer d.Close()
	letter := func(offset int64, n int) []Letter {
		return []Letter{{Offset: offset, Value: bytes.Repeat([]byte{'v'}, n), Reason: "decode", Error: "bad"}}
	}
	if _, err := d.Send(ctx, "in", 0, letter(1, 500_000)); err != nil {
		t.Fatal(err)
	}
	resp, err := client.AlterConfigs(ctx, &kafka.AlterConfigsRequest{Resources: []kafka.AlterConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: dlq,
		Configs: []kafka.AlterConfigRequestConfig{{Name: "max.message.bytes", Value: "100000"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Errors {
		if e != nil {
			t.Fatal(e)
		}
	}
	last, err := d.Send(ctx, "in", 0, letter(2, 500_000))
	if err != nil {
		t.Fatalf("after the limit shrank: %v", err)
	}
	msgs := fetchAll(ctx, t, client, dlq)
	if last != 2 || len(msgs) != 2 || counts[ActionCut] != 1 {
		t.Fatalf("last %d, %d messages, counts %v; want 2, 2 and one cut", last, len(msgs), counts)
	}
	if h := headers(msgs[1]); h["pqsink.truncated"] != "value" || len(msgs[1].Value) >= 100_000 || len(msgs[0].Value) != 500_000 {
		t.Errorf("values of %d and %d bytes, second's headers %v", len(msgs[0].Value), len(msgs[1].Value), h)
	}
}
