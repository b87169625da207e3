package avrofmt_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/schema/avro/avrofmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

// The schemas Debezium's PostgreSQL connector registers through
// Confluent's AvroConverter for a table customers(id int primary key,
// first_name, email).
const (
	envelopeSchema = `{"type":"record","name":"Envelope","namespace":"dbserver1.inventory.customers","fields":[
{"name":"before","type":["null",{"type":"record","name":"Value","fields":[
  {"name":"id","type":{"type":"int","connect.default":0},"default":0},
  {"name":"first_name","type":"string"},
  {"name":"email","type":["null","string"],"default":null}],
  "connect.name":"dbserver1.inventory.customers.Value"}],"default":null},
{"name":"after","type":["null","Value"],"default":null},
{"name":"source","type":{"type":"record","name":"Source","namespace":"io.debezium.connector.postgresql","fields":[
  {"name":"version","type":"string"},{"name":"connector","type":"string"},{"name":"name","type":"string"},
  {"name":"ts_ms","type":"long"},
  {"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,last,false,incremental"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"},
  {"name":"db","type":"string"},{"name":"sequence","type":["null","string"],"default":null},
  {"name":"schema","type":"string"},{"name":"table","type":"string"},
  {"name":"txId","type":["null","long"],"default":null},{"name":"lsn","type":["null","long"],"default":null},
  {"name":"xmin","type":["null","long"],"default":null}],"connect.name":"io.debezium.connector.postgresql.Source"}},
{"name":"op","type":"string"},
{"name":"ts_ms","type":["null","long"],"default":null},
{"name":"transaction","type":["null",{"type":"record","name":"block","namespace":"event","fields":[
  {"name":"id","type":"string"},{"name":"total_order","type":"long"},{"name":"data_collection_order","type":"long"}],
  "connect.version":1,"connect.name":"event.block"}],"default":null}],
"connect.version":1,"connect.name":"dbserver1.inventory.customers.Envelope"}`
	debeziumKeySchema = `{"type":"record","name":"Key","namespace":"dbserver1.inventory.customers","fields":[{"name":"id","type":{"type":"int","connect.default":0},"default":0}],"connect.name":"dbserver1.inventory.customers.Key"}`
)

func source(ts int64) map[string]any {
	return map[string]any{"version": "2.7.3.Final", "connector": "postgresql", "name": "dbserver1", "ts_ms": ts,
		"snapshot": map[string]any{"string": "false"}, "db": "inventory", "sequence": nil, "schema": "public", "table": "customers",
		"txId": map[string]any{"long": int64(780)}, "lsn": map[string]any{"long": int64(34553160)}, "xmin": nil}
}

func customerRow(id int32, name string) map[string]any {
	return map[string]any{"dbserver1.inventory.customers.Value": map[string]any{"id": id, "first_name": name, "email": map[string]any{"string": name + "@acme.com"}}}
}

func envelope(t *testing.T, op string, before, after any, ts int64) []byte {
	return encode(t, 1, envelopeSchema, map[string]any{"before": before, "after": after, "source": source(ts), "op": op,
		"ts_ms": map[string]any{"long": ts + 5}, "transaction": nil})
}

// TestKeyedDebezium reads Debezium's Avro events: c, r and u write after
// with the _cdc record, d deletes by before or the Kafka key, a tombstone
// by its Avro key; a truncate, an unknown op and bytes that are not an
// event are rejections.
func TestKeyedDebezium(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{
		1: {Type: "AVRO", Text: envelopeSchema},
		2: {Type: "AVRO", Text: debeziumKeySchema},
		3: {Type: "AVRO", Text: valueSchema},
	})
	f, err := avrofmt.Open(&config.Config{Envelope: true, Table: &config.Table{Format: "iceberg"},
		Format: config.Format{Type: avrofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	dec := k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)})
	key := func(id int64) []byte { return keyindex.AppendInt(nil, id) }
	avroKey := encode(t, 2, debeziumKeySchema, map[string]any{"id": int32(1001)})
	res := formattest.Check(t, dec, []formattest.Case{
		{Name: "create", Value: envelope(t, "c", nil, customerRow(1001, "sally"), 1733580000123), Want: key(1001), Op: 'c'},
		{Name: "snapshot", Value: envelope(t, "r", nil, customerRow(1002, "george"), 1733580000124), Want: key(1002), Op: 'r'},
		{Name: "update", Value: envelope(t, "u", customerRow(1001, "sally"), customerRow(1001, "sal"), 1733580000125), Want: key(1001), Op: 'u'},
		{Name: "delete", Value: envelope(t, "d", customerRow(1001, "sal"), nil, 1733580000126), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete without before", Key: avroKey, Value: envelope(t, "d", nil, nil, 1733580000127), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "tombstone", Key: avroKey, Want: key(1001), Delete: true},
		{Name: "delete without before or key", Value: envelope(t, "d", nil, nil, 1), Reason: format.RejectKey, Err: "debezium delete without before"},
		{Name: "truncate", Value: envelope(t, "t", nil, nil, 1), Reason: format.RejectChange, Err: "truncate"},
		{Name: "unknown op", Value: envelope(t, "m", nil, nil, 1), Reason: format.RejectChange, Err: `unknown op "m"`},
		{Name: "create without after", Value: envelope(t, "c", nil, nil, 1), Reason: format.RejectChange, Err: "without after"},
		{Name: "cut short", Value: envelope(t, "c", nil, customerRow(1, "x"), 1)[:12], Reason: format.RejectDecode, Err: "debezium"},
		{Name: "not a Debezium schema", Value: encode(t, 3, valueSchema, map[string]any{"id": int64(1), "region": "eu", "email": nil}), Reason: format.RejectSchema, Err: "not a Debezium envelope"},
	})
	if res.Rows != 3 {
		t.Fatalf("rows %d, want 3", res.Rows)
	}
	buf := res.Only(t)
	cols := formattest.Columns(buf)
	if cols["id"] == nil || cols["_cdc.op"] == nil || cols["_cdc.ts"] == nil || cols["_kafka.offset"] == nil {
		t.Fatalf("files' schema %s", buf.Schema)
	}
	if got := string(cols["_cdc.op"].Bytes); got != "cru" {
		t.Errorf("_cdc.op %q, want cru", got)
	}
	// source.ts_ms, in microseconds in a table's files.
	if ts := cols["_cdc.ts"].Int64; len(ts) != 3 || ts[0] != 1733580000123000 || ts[2] != 1733580000125000 {
		t.Errorf("_cdc.ts %v", ts)
	}
	if ids := cols["id"].Int32; len(ids) != 3 || ids[0] != 1001 || ids[1] != 1002 || ids[2] != 1001 {
		t.Errorf("id %v", ids)
	}
}
