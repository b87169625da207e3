package test

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkSASL archives a topic from a broker that requires SCRAM-SHA-512
// authentication, with the password from the environment.
func TestSinkSASL(t *testing.T) {
	const partitions, n, user, password = 2, 600, "archiver", "pa55-w0rd-secret"
	topic := "secure"
	broker := kafkatest.StartWith(t, []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password)}, partitions, topic)
	mech, err := scram.Mechanism(scram.SHA512, user, password)
	if err != nil {
		t.Fatal(err)
	}
	tr := &kafka.Transport{SASL: mech}
	defer tr.CloseIdleConnections()
	produceEventsVia(t, tr, broker.Brokers, topic, 0, n)
	truth := readTopicVia(t, tr, broker.Brokers, topic, partitions)

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "secure", topic: topic, storeURL: "file://" + dir, format: "json", envelope: true, records: 250, interval: "1s"}
	text := replaceLine(cfg.yaml(t), "  start: earliest", "  start: earliest\n  sasl: {mechanism: SCRAM-SHA-512, username: "+user+", password: \"${KAFKA_PASSWORD}\"}")
	t.Setenv("KAFKA_PASSWORD", password)
	sink, stop := startSink(t, text)
	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitLanded(t, store, n, time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.RecordsUploaded != n {
		t.Errorf("stats: %+v", st)
	}
	files := download(t, store, t.TempDir())
	rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
	checkExactlyOnce(t, topic, truth, rows, "json", true)
}
