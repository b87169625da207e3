package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestTableSinkStateWithoutFiles: records that are only dead-lettered move
// the table's state in a snapshot that adds no file, so that a sink
// started again reads on from after them and sends no dead letter twice;
// the table still holds every good record once.
func TestTableSinkStateWithoutFiles(t *testing.T) {
	const partitions, n, poison = 2, 400, 6
	env := newTableEnv(t, "stateonly")
	dlq := "stateonly.dlq"
	broker := kafkatest.Start(t, partitions, env.topic, dlq)
	text := env.config(t, broker.Brokers, "sto", "1s", 100000) + "dead_letter:\n  topic: " + dlq + "\n"
	produceEvents(t, broker.Brokers, env.topic, 0, n)
	sink, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	snapshots := len(env.load(t).Metadata().Snapshots())

	// Poison alone: no file, only dead letters and a moved state.
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	for i := range poison {
		if err := w.WriteMessages(context.Background(), kafka.Message{Key: []byte(fmt.Sprintf("poison-%d", i)), Value: []byte(`{"id": "not a number"`)}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	deadline := time.Now().Add(time.Minute)
	for len(env.load(t).Metadata().Snapshots()) == snapshots {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot for the state after the dead letters (rejected %d)", sink.Stats().Snapshot().Rejected)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if st := sink.Stats().Snapshot(); st.Rejected != poison || st.TableFilesAppended == 0 {
		t.Errorf("first run: %d rejected (want %d), %d files appended", st.Rejected, poison, st.TableFilesAppended)
	}

	// Started again: nothing to read again, nothing rejected twice.
	sink, stop = startSink(t, text)
	time.Sleep(3 * time.Second)
	stop()
	if st := sink.Stats().Snapshot(); st.Rejected != 0 || st.Consumed != 0 {
		t.Errorf("second run: %d records consumed, %d rejected; want none: the table's state is past the poison", st.Consumed, st.Rejected)
	}
	if letters := readTopic(t, broker.Brokers, dlq, partitions); len(letters) != poison {
		t.Errorf("%d dead letters, want %d", len(letters), poison)
	}
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	for id, p := range truth {
		if len(p.Key) >= 7 && string(p.Key[:7]) == "poison-" {
			delete(truth, id)
		}
	}
	env.check(t, truth)
	checkSnapshotFiles(t, env, env.load(t), truth)
}
