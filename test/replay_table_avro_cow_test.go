package test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	itable "github.com/apache/iceberg-go/table"
	"github.com/linkedin/goavro/v2"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/schemaregistry"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

const (
	cowAvroID     = 41
	cowAvroSchema = `{"type":"record","name":"order","namespace":"shop","fields":[
 {"name":"id","type":"long"},
 {"name":"customer","type":"string"},
 {"name":"qty","type":"int"},
 {"name":"price","type":"double"},
 {"name":"paid","type":"boolean"},
 {"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"tags","type":{"type":"array","items":"string"}},
 {"name":"note","type":["null","string"],"default":null},
 {"name":"ship","type":["null",{"type":"record","name":"address","fields":[
   {"name":"city","type":"string"},{"name":"zip","type":["null","string"],"default":null}]}],"default":null}]}`
)

// TestReplayTableAvroCopyOnWrite archives Avro records into a table, then
// deletes some of them as Spark's or Trino's `DELETE FROM` does by default
// (copy-on-write, here iceberg-go's: the files holding them are rewritten
// without them, and the new files have the columns but not the sink's
// footer, so not the records' schema). `pqsink replay --from
// iceberg:kafka.TOPIC` produces every remaining record as the producer's
// Avro bytes under the replay's registered id, those of the rewritten
// files too: they borrow the schema of the sink's file with the same
// columns. Before, such a replay was refused.
func TestReplayTableAvroCopyOnWrite(t *testing.T) {
	const partitions, n = 2, 300
	env := newTableEnv(t, "avro-cow")
	broker := kafkatest.Start(t, partitions, env.topic, "replayed")
	reg := &replayRegistry{schemas: map[int]string{cowAvroID: cowAvroSchema}, subjects: map[string]int{}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	env.avroRegistry = srv.URL
	text := env.config(t, broker.Brokers, "avro-cow", "1s", 100000)

	codec, err := goavro.NewCodec(cowAvroSchema)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	var msgs []kafka.Message
	for i := range n {
		rec := map[string]any{"id": int64(i), "customer": fmt.Sprintf("c-%03d", i%37), "qty": int32(i % 5),
			"price": float64(i) * 1.25, "paid": i%3 == 0, "at": at.Add(time.Duration(i) * time.Second),
			"tags": []any{"a", fmt.Sprint(i % 4)}, "note": nil, "ship": nil}
		if i%2 == 0 {
			rec["note"] = goavro.Union("string", fmt.Sprintf("note %d", i))
		}
		if i%3 != 2 {
			addr := map[string]any{"city": "Oslo", "zip": nil}
			if i%6 == 0 {
				addr["zip"] = goavro.Union("string", "0150")
			}
			rec["ship"] = goavro.Union("shop.address", addr)
		}
		body, err := codec.BinaryFromNative(nil, rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("k%03d", i)), Value: append(schemaregistry.AppendWire(nil, cowAvroID), body...)})
	}
	w := &kafka.Writer{Transport: testTransport(t), Addr: kafka.TCP(broker.Brokers...), Topic: env.topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	if err := w.WriteMessages(context.Background(), msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	_, stop := startSink(t, text)
	env.waitRows(t, n, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)

	// Delete every tenth order, copy-on-write.
	ctx := context.Background()
	var ids []int64
	for i := int64(0); i < n; i += 10 {
		ids = append(ids, i)
	}
	tx := env.load(t).NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{itable.WriteDeleteModeKey: itable.WriteModeCopyOnWrite}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("copy-on-write delete: %v", err)
	}
	rewritten := 0
	for _, key := range env.files(t) {
		if !strings.Contains(filepath.Base(key), "+") {
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Fatalf("the delete rewrote no file: %v", env.files(t))
	}

	cfgFile := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pqsinkBinary(t), "replay", "--config", cfgFile, "--from", "iceberg:kafka."+env.topic, "--topic", "replayed", "--progress", "log").CombinedOutput()
	if err != nil {
		for _, key := range env.files(t) {
			path := filepath.Join(strings.TrimPrefix(env.warehouse, "file://"), key)
			o, _ := exec.Command(pqsinkBinary(t), "inspect", "schema", path).CombinedOutput()
			t.Logf("%s:\n%s", key, o)
		}
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("schemas_lent=%d", rewritten)) {
		t.Errorf("the replay's last line does not say it lent %d rewritten files a schema:\n%s", rewritten, out)
	}
	want := map[string]produced{}
	for id, p := range truth {
		if _, body, err := schemaregistry.SplitWire(p.Value); err == nil {
			native, _, err := codec.NativeFromBinary(body)
			if err != nil {
				t.Fatal(err)
			}
			if native.(map[string]any)["id"].(int64)%10 == 0 {
				continue
			}
		}
		want[id] = p
	}
	if len(want) != n-len(ids) {
		t.Fatalf("%d records should remain, want %d", len(want), n-len(ids))
	}
	reg.mu.Lock()
	replayID := reg.subjects["replayed-value\x00"+avroSchemaText(t, cowAvroSchema)]
	reg.mu.Unlock()
	compareReplayed(t, want, readTopic(t, broker.Brokers, "replayed", partitions), replayID)
}
