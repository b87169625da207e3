package protofmt_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/schema/protobuf/protofmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

// debeziumProto is the schema of Debezium's events of a customers table
// as Confluent's ProtobufConverter registers it: the row's message Value
// nested in the envelope, nullable scalars as wrappers, and the key's
// message in a schema of its own.
const debeziumProto = `syntax = "proto3";
package dbserver1.inventory.customers;
import "google/protobuf/wrappers.proto";
import "google/protobuf/timestamp.proto";
message Envelope {
  message Value {
    int32 id = 1;
    string first_name = 2;
    google.protobuf.StringValue email = 3;
    google.protobuf.Timestamp created = 4;
    reserved 9;
  }
  Value before = 1;
  Value after = 2;
  Source source = 3;
  string op = 4;
  google.protobuf.Int64Value ts_ms = 5;
  Block transaction = 6;
}
message Source {
  string connector = 1;
  string db = 2;
  int64 ts_ms = 3;
}
message Block { string id = 1; int64 total_order = 2; }
`

const debeziumKeyProto = `syntax = "proto3";
package dbserver1.inventory.customers;
message Key { int32 id = 1; }
`

// wrappedOpProto has op and source.ts_ms in wrappers, and no before.
const wrappedOpProto = `syntax = "proto3";
package other;
import "google/protobuf/wrappers.proto";
message Row { int64 id = 1; }
message Src { google.protobuf.Int64Value ts_ms = 1; }
message Event {
  Row after = 1;
  google.protobuf.StringValue op = 2;
  Src source = 3;
}
`

const notEnvelopeProto = `syntax = "proto3";
package bad;
message A { int64 id = 1; }
message B { A after = 1; int64 op = 2; }
message D { message R { int64 id = 1; string _cdc = 2; } R after = 1; string op = 2; }
`

func tag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}

func msgField(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(tag(b, num, protowire.BytesType), m)
}

func strField(b []byte, num protowire.Number, s string) []byte {
	return protowire.AppendString(tag(b, num, protowire.BytesType), s)
}

func intField(b []byte, num protowire.Number, v int64) []byte {
	return protowire.AppendVarint(tag(b, num, protowire.VarintType), uint64(v))
}

// customerValue is an Envelope.Value.
func customerValue(id int32, name string) []byte {
	b := intField(nil, 1, int64(id))
	b = strField(b, 2, name)
	return msgField(b, 3, strField(nil, 1, name+"@acme.com"))
}

// protoEnvelope is an Envelope's bytes; a nil before or after is left
// out (null).
func protoEnvelope(op string, before, after []byte, ts int64) []byte {
	var b []byte
	if before != nil {
		b = msgField(b, 1, before)
	}
	if after != nil {
		b = msgField(b, 2, after)
	}
	src := strField(nil, 1, "postgresql")
	src = strField(src, 2, "inventory")
	src = intField(src, 3, ts)
	b = msgField(b, 3, src)
	b = strField(b, 4, op)
	return msgField(b, 5, intField(nil, 1, ts+5))
}

// TestKeyedDebezium reads Debezium's Protobuf events: c, r and u write
// after with the _cdc field, d deletes by before or the Kafka key, a
// tombstone by its Protobuf key; a truncate, an unknown op, bytes that
// are not an event and messages that are not envelopes are rejections.
func TestKeyedDebezium(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{
		1: {Type: "PROTOBUF", Text: debeziumProto},
		2: {Type: "PROTOBUF", Text: debeziumKeyProto},
		3: {Type: "PROTOBUF", Text: wrappedOpProto},
		4: {Type: "PROTOBUF", Text: notEnvelopeProto},
	})
	f, err := protofmt.Open(&config.Config{Envelope: true, Table: &config.Table{Format: "iceberg"},
		Format: config.Format{Type: protofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int64) []byte { return keyindex.AppendInt(nil, id) }
	protoKey := fakeregistry.Wire(2, []byte{0}, intField(nil, 1, 1001))
	first := []byte{0} // message indexes [0]
	wire := fakeregistry.Wire
	ev := func(op string, before, after []byte, ts int64) []byte {
		return wire(1, first, protoEnvelope(op, before, after, ts))
	}
	res := formattest.Check(t, k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)}), []formattest.Case{
		{Name: "create", Value: ev("c", nil, customerValue(1001, "sally"), 1733580000123), Want: key(1001), Op: 'c'},
		{Name: "snapshot", Value: ev("r", nil, customerValue(1002, "george"), 1733580000124), Want: key(1002), Op: 'r'},
		{Name: "update", Value: ev("u", customerValue(1001, "sally"), customerValue(1001, "sal"), 1733580000125), Want: key(1001), Op: 'u'},
		{Name: "delete", Value: ev("d", customerValue(1001, "sal"), nil, 1733580000126), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete without before", Key: protoKey, Value: ev("d", nil, nil, 1733580000127), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by a plain key", Key: []byte("1001"), Value: ev("d", nil, nil, 1733580000127), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "tombstone", Key: protoKey, Want: key(1001), Delete: true},
		{Name: "delete without before or key", Value: ev("d", nil, nil, 1), Reason: format.RejectKey, Err: "debezium delete without before"},
		{Name: "truncate", Value: ev("t", nil, nil, 1), Reason: format.RejectChange, Err: "truncate"},
		{Name: "unknown op", Value: ev("m", nil, nil, 1), Reason: format.RejectChange, Err: `unknown op "m"`},
		{Name: "create without after", Value: ev("c", nil, nil, 1), Reason: format.RejectChange, Err: "without after"},
		{Name: "cut short", Value: ev("c", nil, customerValue(1, "x"), 1)[:12], Reason: format.RejectDecode, Err: "debezium"},
		{Name: "after of the wrong wire type", Value: wire(1, first, intField(nil, 2, 5)), Reason: format.RejectDecode, Err: "not a message"},
		{Name: "op and source.ts_ms in wrappers", Value: wire(3, []byte{2, 4}, msgField(msgField(msgField(nil, 1, intField(nil, 1, 77)), 2, strField(nil, 1, "c")), 3, msgField(nil, 1, intField(nil, 1, 5)))), Want: key(77), Op: 'c'},
		{Name: "no after", Value: wire(4, []byte{0}, intField(nil, 1, 1)), Reason: format.RejectSchema, Err: "not a Debezium envelope: no field after"},
		{Name: "op not a string", Value: wire(4, []byte{2, 2}, nil), Reason: format.RejectSchema, Err: "op is a int64"},
		{Name: "a row with _cdc", Value: wire(4, []byte{2, 4}, nil), Reason: format.RejectSchema, Err: "_cdc"},
		{Name: "not the wire format", Value: []byte{1, 2}, Reason: format.RejectDecode, Err: "wire"},
	})
	if res.Rows != 4 {
		t.Fatalf("rows %d, want 4", res.Rows)
	}
	var b *format.Buffers
	for _, x := range res.Buffers {
		if x.Schema.Lookup("first_name") != nil {
			b = x
		}
	}
	if b == nil {
		t.Fatal("no buffers of the customers' rows")
	}
	cols := formattest.Columns(b)
	if cols["_cdc.op"] == nil || cols["_cdc.ts"] == nil || cols["_kafka.offset"] == nil || b.Schema.Lookup("before") != nil {
		t.Fatalf("files' schema %s", b.Schema)
	}
	if got := string(cols["_cdc.op"].Bytes); got != "cru" {
		t.Errorf("_cdc.op %q, want cru", got)
	}
	// source.ts_ms, a google.protobuf.Timestamp: in nanoseconds, as the
	// format writes its Timestamps (table.timestamp_precision: micros
	// narrows them all).
	if ts := cols["_cdc.ts"].Int64; len(ts) != 3 || ts[0] != 1733580000123000000 || ts[2] != 1733580000125000000 {
		t.Errorf("_cdc.ts %v", ts)
	}
	if ids := cols["id"].Int32; len(ids) != 3 || ids[0] != 1001 || ids[1] != 1002 || ids[2] != 1001 {
		t.Errorf("id %v", ids)
	}
	if names := string(cols["first_name"].Bytes); names != "sallygeorgesal" {
		t.Errorf("first_name %q", names)
	}
}

// TestKeyedDebeziumMicros: with table.timestamp_precision micros, _cdc.ts
// is in microseconds, as the rows' other Timestamps.
func TestKeyedDebeziumMicros(t *testing.T) {
	url := fakeregistry.Start(t, map[uint32]fakeregistry.Schema{1: {Type: "PROTOBUF", Text: debeziumProto}})
	f, err := protofmt.Open(&config.Config{Table: &config.Table{Format: "iceberg", TimestampMicros: true},
		Format: config.Format{Type: protofmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	created := msgField(nil, 4, intField(intField(nil, 1, 1733500000), 2, 123456789))
	row := append(customerValue(5, "ann"), created...)
	res := formattest.Check(t, k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)}), []formattest.Case{
		{Name: "create", Value: fakeregistry.Wire(1, []byte{0}, protoEnvelope("c", nil, row, -1500)), Want: keyindex.AppendInt(nil, 5), Op: 'c'},
	})
	cols := formattest.Columns(res.Only(t))
	// A time before the epoch: -1.5 s.
	if ts := cols["_cdc.ts"].Int64; len(ts) != 1 || ts[0] != -1_500_000 {
		t.Errorf("_cdc.ts %v, want [-1500000]", ts)
	}
	if c := cols["created"].Int64; len(c) != 1 || c[0] != 1733500000123456 {
		t.Errorf("created %v", c)
	}
}

// TestKeyedDebeziumProtoFile: Debezium events are read with a registry
// only.
func TestKeyedDebeziumProtoFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shop.proto")
	if err := os.WriteFile(path, []byte(shopProto), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := protofmt.Open(&config.Config{Format: config.Format{Type: protofmt.Name, Protobuf: &config.Protobuf{ProtoFile: path, Message: "shop.Customer"}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium}); err == nil || !strings.Contains(err.Error(), "with format.registry") {
		t.Fatalf("error %v", err)
	}
}
