package jsonschemafmt_test

import (
	"log/slog"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/changelog"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/table/keyindex"
)

// debeziumEnvelope is the schema of Debezium's events of the customers
// table, shaped as Kafka Connect's JsonSchemaConverter registers it:
// before and after a oneOf of null and the row's object; the envelope
// itself admits other members (a VARIANT root, which the files do not
// hold).
const debeziumEnvelope = `{"type":"object","title":"dbserver1.inventory.customers.Envelope","properties":{
"before":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/Value"}]},
"after":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/Value"}]},
"source":{"type":"object","properties":{"connector":{"type":"string"},"ts_ms":{"type":"integer"}},"required":["ts_ms"]},
"op":{"type":"string"},
"ts_ms":{"oneOf":[{"type":"null"},{"type":"integer"}]}},
"required":["op","source"],
"definitions":{"Value":{"type":"object","title":"dbserver1.inventory.customers.Value","additionalProperties":false,
"properties":{"id":{"type":"integer","connect.type":"int32"},"first_name":{"oneOf":[{"type":"null"},{"type":"string"}]},"last_name":{"oneOf":[{"type":"null"},{"type":"string"}]},"email":{"oneOf":[{"type":"null"},{"type":"string"}]}},
"required":["id"]}}}`

// TestKeyedDebeziumRegistry: with a registry, the schema of a value's id
// is the envelope's, validated against, and the files' rows are after's,
// with _cdc; a schema without an object after is unusable.
func TestKeyedDebeziumRegistry(t *testing.T) {
	const keySchema = `{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"}},"required":["id"]}`
	const openAfter = `{"type":"object","properties":{"after":{"type":"object"},"op":{"type":"string"}}}`
	const rowWithCDC = `{"type":"object","properties":{"after":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"_cdc":{"type":"string"}},"required":["id"]},"op":{"type":"string"}}}`
	f := openRegistry(t, map[uint32]fakeregistry.Schema{
		1: {Type: "JSON", Text: debeziumEnvelope},
		2: {Type: "JSON", Text: keySchema},
		3: {Type: "JSON", Text: openAfter},
		4: {Type: "JSON", Text: rowWithCDC},
	})
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := k.FixedSchema(); s != nil {
		t.Fatalf("a registry's format has a fixed schema %s", s)
	}
	key := func(id int64) []byte { return keyindex.AppendInt(nil, id) }
	wire := func(id uint32, text string) []byte { return fakeregistry.Wire(id, nil, []byte(text)) }
	res := formattest.Check(t, k.NewChangeDecoder(format.Partition{Log: discard()}), []formattest.Case{
		{Name: "plain key before any value", Key: []byte("1001"), Reason: format.RejectKey, Err: "before any value"},
		{Name: "create", Value: fakeregistry.Wire(1, nil, event(t, "create.json")), Want: key(1001), Op: 'c'},
		{Name: "snapshot", Value: fakeregistry.Wire(1, nil, event(t, "read.json")), Want: key(1002), Op: 'r'},
		{Name: "update", Value: fakeregistry.Wire(1, nil, event(t, "update.json")), Want: key(1001), Op: 'u'},
		{Name: "delete", Value: fakeregistry.Wire(1, nil, event(t, "delete.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by the wire Kafka key", Key: wire(2, `{"id":1001}`), Value: fakeregistry.Wire(1, nil, event(t, "delete_nobefore.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by the plain Kafka key", Key: []byte("1001"), Value: fakeregistry.Wire(1, nil, event(t, "delete_nobefore.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "tombstone", Key: wire(2, `{"id":1002}`), Want: key(1002), Delete: true},
		{Name: "tombstone of a JSON key", Key: []byte(`{"id":1003}`), Want: key(1003), Delete: true},
		{Name: "delete without before or key", Value: fakeregistry.Wire(1, nil, event(t, "delete_nobefore.json")), Reason: format.RejectKey, Err: "debezium delete without before"},
		{Name: "tombstone without key", Reason: format.RejectKey, Err: "no Kafka key"},
		{Name: "truncate", Value: fakeregistry.Wire(1, nil, event(t, "truncate.json")), Reason: format.RejectChange, Err: "truncate"},
		{Name: "unknown op", Value: wire(1, `{"op":"x","source":{"ts_ms":1},"after":{"id":1,"first_name":"a"}}`), Reason: format.RejectChange, Err: `unknown op "x"`},
		{Name: "create without after", Value: wire(1, `{"op":"c","source":{"ts_ms":1},"after":null}`), Reason: format.RejectChange, Err: "without after"},
		{Name: "after not valid", Value: wire(1, `{"op":"c","source":{"ts_ms":1},"after":{"id":"one"}}`), Reason: format.RejectSchema, Err: "/after"},
		{Name: "not JSON", Value: wire(1, `{"op":`), Reason: format.RejectDecode, Err: "not JSON"},
		{Name: "not the wire format", Value: []byte(`{"op":"c"}`), Reason: format.RejectDecode, Err: "wire format"},
		{Name: "unknown schema id", Value: wire(9, `{}`), Reason: format.RejectDecode, Err: "json schema id 9"},
		{Name: "after admits undeclared members", Value: wire(3, `{"op":"c","after":{"id":1}}`), Reason: format.RejectSchema, Err: "not a Debezium envelope"},
		{Name: "rows with a _cdc property", Value: wire(4, `{"op":"c","after":{"id":1}}`), Reason: format.RejectSchema, Err: "_cdc"},
	})
	if res.Rows != 3 {
		t.Fatalf("rows %d, want 3", res.Rows)
	}
	b := res.Only(t)
	cols := formattest.Columns(b)
	for _, c := range []string{"id", "first_name", "email", "_cdc.op", "_cdc.ts"} {
		if cols[c] == nil {
			t.Fatalf("files' schema %s lacks %s", b.Schema, c)
		}
	}
	if b.Schema.Lookup("before") != nil || b.Schema.Lookup("op") != nil {
		t.Fatalf("files' schema %s has the envelope's members", b.Schema)
	}
	if got := string(cols["_cdc.op"].Bytes); got != "cru" {
		t.Errorf("_cdc.op %q, want cru", got)
	}
	if ids := cols["id"].Int64; len(ids) != 3 || ids[0] != 1001 || ids[1] != 1002 || ids[2] != 1001 {
		t.Errorf("id %v", ids)
	}
	if ts := cols["_cdc.ts"].Int64; len(ts) != 3 || ts[0] != 1733580000123 {
		t.Errorf("_cdc.ts %v", ts)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestKeyedDebeziumRegistryChangelog reads a generated changelog of
// Debezium events in the JSON Schema wire format, with Debezium's
// tombstones and JSON Kafka keys, and compares the table it leaves with
// the changelog's fold.
func TestKeyedDebeziumRegistryChangelog(t *testing.T) {
	const itemsEnvelope = `{"type":"object","properties":{
"before":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/Value"}]},
"after":{"oneOf":[{"type":"null"},{"$ref":"#/definitions/Value"}]},
"source":{"type":"object","properties":{"ts_ms":{"type":"integer"}}},
"op":{"type":"string"},"ts_ms":{"type":"integer"}},
"required":["op"],
"definitions":{"Value":{"type":"object","additionalProperties":false,"properties":{
"id":{"type":"integer"},"name":{"type":"string"},"version":{"type":"integer"},"score":{"type":"number"},
"active":{"type":"boolean"},"note":{"oneOf":[{"type":"null"},{"type":"string"}]}},
"required":["id","name","version","score","active"]}}}`
	f := openRegistry(t, map[uint32]fakeregistry.Schema{7: {Type: "JSON", Text: itemsEnvelope}})
	g := changelog.New(5, 30, changelog.Debezium(), changelog.Tombstones(), changelog.Snapshot(10))
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: g.KeyFields(), Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	wire := func(ev changelog.Event) ([]byte, []byte) {
		if ev.Value == nil {
			return ev.Key, nil
		}
		return ev.Key, fakeregistry.Wire(7, nil, ev.Value)
	}
	table := formattest.Changelog(t, k.NewChangeDecoder(format.Partition{Log: discard()}), g, 2000, wire)
	formattest.MatchFold(t, table, g.KeyFields(), g.Fold())
}
