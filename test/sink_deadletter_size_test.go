package test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkDeadLetterSizes: a rejected record as large as the broker takes
// reaches a dead-letter topic whole; one larger than the dead-letter topic
// takes goes to dead_letter.url when it is set, and is otherwise sent with
// its value cut to fit, marked and counted. None of them holds its
// partition back: the good records around them land, exactly once, and
// each rejected record is counted once, not once per attempt.
func TestSinkDeadLetterSizes(t *testing.T) {
	cases := []struct {
		name     string
		dlqLimit int  // the dead-letter topic's max.message.bytes; 0 = the broker's default
		url      bool // dead_letter.url beside the topic
		poison   int  // bytes of the rejected record's value
		want     string
	}{
		// The largest record the source topic takes (Kafka's default
		// limit) is over kafka-go's default batch size of 1 MiB once the
		// pqsink.* headers are added; a topic that takes 2 MiB takes it.
		{"fits the topic", 2 << 20, false, 1_048_400, "whole"},
		// With the default limit on both topics, the headers tip it over.
		{"over the default limit, cut", 0, false, 1_048_400, "cut"},
		{"too large, cut", 100_000, false, 300_000, "cut"},
		{"too large, to the url", 100_000, true, 300_000, "url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, dlq := "big", "big.dlq"
			broker := kafkatest.Start(t, 1, topic)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			client := &kafka.Client{Addr: kafka.TCP(broker.Brokers...), Transport: testTransport(t)}
			spec := kafka.TopicConfig{Topic: dlq, NumPartitions: 1, ReplicationFactor: 1}
			if c.dlqLimit > 0 {
				spec.ConfigEntries = []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: fmt.Sprint(c.dlqLimit)}}
			}
			if _, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{spec}}); err != nil {
				t.Fatal(err)
			}

			produceEvents(t, broker.Brokers, topic, 0, 100)
			poison := append([]byte(`{"id": "`), bytes.Repeat([]byte{'p'}, c.poison)...) // not JSON: never closed
			w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchBytes: 2 << 20}
			poisonMsg := kafka.Message{Key: []byte("poison"), Value: poison, Headers: []kafka.Header{{Key: "origin", Value: []byte("test")}}}
			if err := w.WriteMessages(ctx, poisonMsg); err != nil {
				t.Fatal(err)
			}
			w.Close()
			produceEvents(t, broker.Brokers, topic, 100, 100)
			truth := readTopic(t, broker.Brokers, topic, 1)

			dir, dlDir := t.TempDir(), t.TempDir()
			extra := "dead_letter:\n  topic: " + dlq + "\n"
			if c.url {
				extra += "  url: file://" + dlDir + "/rejects\n"
			}
			cfg := sinkConfig{brokers: broker.Brokers, group: "dlsize", topic: topic, storeURL: "file://" + dir, format: "json", envelope: true,
				records: 1000, interval: "1s", path: "{topic}/{topic}+{partition}+{first_offset}.parquet", extra: extra}
			sink, stop := startSink(t, cfg.yaml(t))
			store, err := objstore.Open(ctx, "file://"+dir)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			waitLanded(t, store, 200, time.Minute)
			time.Sleep(time.Second) // would the partition read the poison again?
			stop()

			st := sink.Stats().Snapshot()
			if n := st.Rejects[[2]string{"decode", "dead_letter"}]; n != 1 {
				t.Errorf("rejects %v: want the one record counted once", st.Rejects)
			}
			if st.DeadLetterErrors != 0 {
				t.Errorf("%d failed dead-letter sends", st.DeadLetterErrors)
			}
			wantOversized := map[string]int64{"cut": 0, "url": 0}
			if c.want != "whole" {
				wantOversized[c.want] = 1
			}
			for k, v := range wantOversized {
				if st.DeadLettersOversized[k] != v {
					t.Errorf("oversized dead letters %v, want %s: %d", st.DeadLettersOversized, k, v)
				}
			}

			inTopic := readTopic(t, broker.Brokers, dlq, 1)
			var inURL map[string]produced
			if c.url {
				inURL = readLetterObjects(t, "file://"+dlDir+"/rejects")
			}
			var letter produced
			switch c.want {
			case "url":
				if len(inTopic) != 0 || len(inURL) != 1 {
					t.Fatalf("%d letters in the topic and %d under the url, want 0 and 1", len(inTopic), len(inURL))
				}
				for _, l := range inURL {
					letter = l
				}
			default:
				if len(inTopic) != 1 || len(inURL) != 0 {
					t.Fatalf("%d letters in the topic and %d under the url, want 1 and 0", len(inTopic), len(inURL))
				}
				for _, l := range inTopic {
					letter = l
				}
			}
			h := decodeHeaders(t, letter.Headers)
			if string(letter.Key) != "poison" || h["origin"] != "test" || h["pqsink.reason"] != "decode" || h["pqsink.offset"] != "100" {
				t.Errorf("dead letter: key %q, headers %v", letter.Key, h)
			}
			switch c.want {
			case "cut":
				if h["pqsink.truncated"] != "value" || h["pqsink.original_bytes"] != fmt.Sprint(len(poison)) ||
					len(letter.Value) == 0 || len(letter.Value) >= len(poison) || !bytes.HasPrefix(poison, letter.Value) {
					t.Errorf("cut dead letter: %d bytes of value, headers %v", len(letter.Value), h)
				}
			default:
				if !bytes.Equal(letter.Value, poison) || h["pqsink.truncated"] != "" {
					t.Errorf("dead letter: %d bytes of value (want %d whole), headers truncated=%q", len(letter.Value), len(poison), h["pqsink.truncated"])
				}
			}

			for id, p := range truth {
				if strings.HasPrefix(string(p.Key), "poison") {
					delete(truth, id)
				}
			}
			files := download(t, store, t.TempDir())
			rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
			checkExactlyOnce(t, topic, truth, rows, "json", true)
		})
	}
}
