package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkJSONSchemaRegistryPathFields: with format json_schema and a
// registry, {field:...} in the path and time_field read the record's JSON
// after the wire format's header: each record lands under its country and
// the day of its ts, not of its Kafka timestamp, and a record whose ts is
// null is dead-lettered with reason path.
func TestSinkJSONSchemaRegistryPathFields(t *testing.T) {
	const partitions, id = 2, 41
	topic, dlq := "js-path", "js-path.dlq"
	broker := kafkatest.Start(t, partitions, topic, dlq)
	reg := &testRegistry{schemas: map[int]string{id: `{"type":"object","properties":{
		"id":{"type":"integer"},"country":{"type":["string","null"]},"ts":{"type":["string","null"],"format":"date-time"}}}`},
		gets: map[int]int{}, types: map[int]string{id: "JSON"}}
	rs := httptestServer(t, reg)

	countries := []string{"DE", "FR", "a b"}
	type sentRec struct{ country, day string }
	sent := map[string]sentRec{}
	var msgs []kafka.Message
	for i := range 200 {
		key := fmt.Sprintf("k%04d", i)
		ts := time.Date(2024, 1, 1+i%3, 23, 0, 0, 0, time.UTC)
		v := fmt.Sprintf(`{"id":%d,"country":%q,"ts":%q}`, i, countries[i%3], ts.Format(time.RFC3339))
		s := sentRec{country: countries[i%3], day: ts.Format("2006-01-02")}
		if i%50 == 9 {
			v, s = fmt.Sprintf(`{"id":%d,"country":"DE","ts":null}`, i), sentRec{}
		}
		sent[key] = s
		msgs = append(msgs, kafka.Message{Key: []byte(key), Value: append(schemaregistry.AppendWire(nil, id), v...), Time: time.Now()})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	truth := readTopic(t, broker.Brokers, topic, partitions)

	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "js-path", topic: topic, storeURL: "file://" + dir, format: "json_schema", envelope: true,
		records: 100000, interval: "10m", path: "c={field:country}/d={record_time:2006-01-02}/{partition}-{first_offset}.parquet",
		extra: "time_field: ts\ndead_letter:\n  topic: " + dlq + "\n"}
	text := strings.Replace(cfg.yaml(t), "format:\n  type: json_schema\n", fmt.Sprintf("format:\n  type: json_schema\n  registry: {url: %q}\n", rs), 1)
	sink, stop := startSink(t, text)
	waitConsumed(t, sink, int64(len(truth)))
	stop()
	st := sink.Stats().Snapshot()
	if got := st.Rejects[[2]string{"path", "dead_letter"}]; got != 4 {
		t.Errorf("rejects %v, want 4 path/dead_letter", st.Rejects)
	}

	store, err := objstore.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	db := duckdb.Start(t)
	seen := map[string]int{}
	for _, f := range files {
		res := db.Query(t, fmt.Sprintf(`SELECT _kafka.key::VARCHAR AS k FROM read_parquet(%s)`, duckdb.Quote(f.local)))
		for i := range res.Rows {
			key := fmt.Sprint(res.Value(i, "k"))
			s := sent[key]
			seen[key]++
			if want := "c=" + archive.Escape(s.country) + "/d=" + s.day + "/"; !strings.HasPrefix(f.key, want) {
				t.Errorf("record %s in %s, want it under %s", key, f.key, want)
			}
		}
	}
	checkLanded(t, sent, seen, func(s sentRec) bool { return s.day != "" })
}
