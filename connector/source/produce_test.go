package source

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// samePartition sends each message to the partition number it came from:
// the kafka-go Writer that replay used before the partitionProducer, kept
// here as the reference.
type samePartition struct{}

func (samePartition) Balance(msg kafka.Message, _ ...int) int { return msg.Partition }

// fetched is a record as fetched: key and value nil when null.
type fetched struct {
	key, value []byte
	headers    []kafka.Header
	time       time.Time
}

// readAll returns the bytes of b, nil for a null b.
func readAll(t *testing.T, b kafka.Bytes) []byte {
	t.Helper()
	if b == nil {
		return nil
	}
	out, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil {
		out = []byte{}
	}
	return out
}

// readPartition fetches n records of a partition from the start, with
// kafka-go's Client, which tells null keys and values from empty ones.
func readPartition(t *testing.T, brokers []string, topic string, partition, n int) []fetched {
	t.Helper()
	tr := &kafka.Transport{} // not the shared DefaultTransport, which would refresh these brokers' metadata for the life of the process
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []fetched
	for len(out) < n {
		res, err := c.Fetch(ctx, &kafka.FetchRequest{Topic: topic, Partition: partition, Offset: int64(len(out)), MaxBytes: 16 << 20})
		if err == nil {
			err = res.Error
		}
		if err != nil {
			t.Fatalf("%s[%d] after %d of %d records: %v", topic, partition, len(out), n, err)
		}
		for {
			r, err := res.Records.ReadRecord()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset < int64(len(out)) {
				continue
			}
			out = append(out, fetched{key: readAll(t, r.Key), value: readAll(t, r.Value), headers: r.Headers, time: r.Time})
		}
	}
	return out[:n]
}

// TestPartitionProducer produces the same messages through kafka-go's
// Writer (with the balancer replay used) and through the
// partitionProducer, to the in-process broker, and requires each
// partition of both topics to hold the same records in the same order:
// keys (null, empty or set), values (null, empty, large enough that the
// requests split), headers and timestamps. The messages come in runs of one
// partition and interleaved, in calls from two goroutines at once.
func TestPartitionProducer(t *testing.T) {
	const partitions = 4
	cluster := kafkatest.Start(t, partitions, "by-writer", "by-producer")
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range 3000 {
		part := (i / 700) % partitions
		if i >= 2800 {
			part = i % partitions // interleaved
		}
		m := kafka.Message{Partition: part, Time: t0.Add(time.Duration(i) * time.Millisecond), Value: []byte(`{"i":` + strconv.Itoa(i) + `}`)}
		switch i % 5 {
		case 1:
			m.Key = []byte{}
			m.Value = nil
		case 2:
			m.Key = []byte("k" + strconv.Itoa(i))
			m.Headers = []kafka.Header{{Key: "a", Value: []byte{0, 1}}, {Key: "b", Value: []byte{}}, {Key: "a", Value: nil}}
		case 3:
			m.Value = []byte{}
		}
		if i%600 == 7 {
			m.Value = bytes.Repeat([]byte{'x'}, 300<<10) // four make more than a request
		}
		msgs = append(msgs, m)
	}
	ctx := context.Background()
	tr := &kafka.Transport{} // not the shared DefaultTransport, whose pools outlive the test
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(cluster.Brokers...), Topic: "by-writer", Balancer: samePartition{}, BatchSize: 2048,
		BatchBytes: maxRequestBytes, BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll, Transport: tr}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	p, err := newProducer(&config.Kafka{Brokers: cluster.Brokers}, Options{Topic: "by-producer"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ok := p.(*partitionProducer); !ok {
		t.Fatalf("newProducer made a %T, want a *partitionProducer", p)
	}
	// Two callers at once, as two replay workers: the first half and the
	// second, which share no partition run but the interleaved tail's.
	half := 1400
	errs := make(chan error, 2)
	go func() { errs <- p.WriteMessages(ctx, msgs[:half]...) }()
	go func() { errs <- p.WriteMessages(ctx, msgs[half:2800]...) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := p.WriteMessages(ctx, msgs[2800:]...); err != nil {
		t.Fatal(err)
	}
	counts := make([]int, partitions)
	for _, m := range msgs {
		counts[m.Partition]++
	}
	for part := range partitions {
		want := readPartition(t, cluster.Brokers, "by-writer", part, counts[part])
		got := readPartition(t, cluster.Brokers, "by-producer", part, counts[part])
		// The Writer's order is the reference within a partition; the
		// producer's two callers each keep theirs.
		for i := range want {
			g, w := got[i], want[i]
			if !bytes.Equal(g.key, w.key) || (g.key == nil) != (w.key == nil) || !bytes.Equal(g.value, w.value) ||
				(g.value == nil) != (w.value == nil) || !g.time.Equal(w.time) || !headersEqual(g.headers, w.headers) {
				t.Fatalf("partition %d record %d:\nproducer key %q value %.40q headers %v time %v\nwriter   key %q value %.40q headers %v time %v",
					part, i, g.key, g.value, g.headers, g.time, w.key, w.value, w.headers, w.time)
			}
		}
	}
}

// TestPartitionProducerRetries makes the broker answer the first produce
// request with a retriable error (NOT_LEADER_OR_FOLLOWER) or one that is
// not (TOPIC_AUTHORIZATION_FAILED): the first is tried again and its
// records land once, with a warning logged; the second fails at once.
func TestPartitionProducerRetries(t *testing.T) {
	tests := []struct {
		name      string
		code      int16
		wantErr   bool
		wantCalls int
	}{
		{"retriable", 6, false, 2},
		{"fatal", 29, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cluster := kafkatest.Start(t, 1, "t")
			calls, failed := 0, false
			cluster.Kfake().ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				cluster.Kfake().KeepControl()
				calls++
				if failed && !tc.wantErr {
					return nil, nil, false // the broker's own answer
				}
				failed = true
				req := kreq.(*kmsg.ProduceRequest)
				resp := req.ResponseKind().(*kmsg.ProduceResponse)
				for _, rt := range req.Topics {
					st := kmsg.NewProduceResponseTopic()
					st.Topic = rt.Topic
					for _, rp := range rt.Partitions {
						sp := kmsg.NewProduceResponseTopicPartition()
						sp.Partition = rp.Partition
						sp.ErrorCode = tc.code
						st.Partitions = append(st.Partitions, sp)
					}
					resp.Topics = append(resp.Topics, st)
				}
				return resp, nil, true
			})
			var logged bytes.Buffer
			p, err := newProducer(&config.Kafka{Brokers: cluster.Brokers}, Options{Topic: "t", Log: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			pp := p.(*partitionProducer)
			pp.backoffMin = time.Millisecond
			msgs := []kafka.Message{{Value: []byte("a")}, {Value: []byte("b")}}
			err = p.WriteMessages(context.Background(), msgs...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d produce requests, want %d", calls, tc.wantCalls)
			}
			if tc.wantErr {
				return
			}
			if !strings.Contains(logged.String(), "trying again") {
				t.Errorf("no retry logged: %q", logged.String())
			}
			got := readPartition(t, cluster.Brokers, "t", 0, 2)
			if string(got[0].value) != "a" || string(got[1].value) != "b" {
				t.Errorf("records %q %q, want a b", got[0].value, got[1].value)
			}
			tr := &kafka.Transport{}
			defer tr.CloseIdleConnections()
			res, err := (&kafka.Client{Addr: kafka.TCP(cluster.Brokers...), Transport: tr}).ListOffsets(context.Background(), &kafka.ListOffsetsRequest{
				Topics: map[string][]kafka.OffsetRequest{"t": {kafka.LastOffsetOf(0)}}})
			if err != nil {
				t.Fatal(err)
			}
			if last := res.Topics["t"][0].LastOffset; last != 2 {
				t.Errorf("partition ends at offset %d, want 2: the records landed once", last)
			}
		})
	}
}
