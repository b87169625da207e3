package jsonfile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/format/jsonfile"
	"github.com/pqsink/pqsink/table/keyindex"
)

const customers = `message customers {
  required int32 id;
  required binary first_name (STRING);
  optional binary last_name (STRING);
  optional binary email (STRING);
}`

// open opens the json format of schema text, in a table's files when
// table (microsecond timestamps).
func open(t *testing.T, text string, table bool) format.Format {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schema.txt")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Format: config.Format{Type: jsonfile.Name, SchemaFile: path}, Envelope: true}
	if table {
		cfg.Table = &config.Table{Format: "iceberg"}
	}
	f, err := jsonfile.Open(cfg, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func event(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "debezium", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKeyedOpen: key fields and envelopes the format cannot read are
// refused when the format is opened for an upsert table.
func TestKeyedOpen(t *testing.T) {
	f := open(t, customers, true)
	for _, c := range []struct {
		opts format.KeyOptions
		err  string
	}{
		{format.KeyOptions{Fields: []string{"id"}}, ""},
		{format.KeyOptions{Fields: []string{"id", "first_name"}, Envelope: format.EnvelopeDebezium}, ""},
		{format.KeyOptions{Fields: []string{"email"}}, "format.schema_file: key field email: optional"},
		{format.KeyOptions{Fields: []string{"nope"}}, "key field nope: not a field of the schema"},
		{format.KeyOptions{Fields: []string{"_kafka"}}, "key field _kafka: not a primitive field"},
		{format.KeyOptions{}, "no key fields"},
		{format.KeyOptions{Fields: []string{"id"}, Envelope: "maxwell"}, "format.envelope maxwell: the json format does not read it"},
	} {
		_, err := f.(format.Keyer).Keyed(c.opts)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.err)
		}
	}
	g := open(t, `message m { required int64 id; optional group _cdc { optional binary op (STRING); } }`, false)
	if _, err := g.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium}); err == nil || !strings.Contains(err.Error(), "_cdc is the change events' column") {
		t.Errorf("a schema file with the change column: error %v", err)
	}
}

// run decodes each record as a change, checks it, and appends each row to
// one file's buffers; it returns them (nil without a row).
func run(t *testing.T, k format.Keyed, cases []formattest.Case) *format.Buffers {
	t.Helper()
	fixed, err := k.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	res := formattest.Check(t, k.NewChangeDecoder(format.Partition{Schema: fixed}), cases)
	if res.Rows == 0 {
		return nil
	}
	return res.Only(t)
}

// TestKeyedChanges: values are rows with their key, tombstones delete by
// the Kafka key; keys that cannot be read are rejections with reason key.
func TestKeyedChanges(t *testing.T) {
	k, err := open(t, customers, true).(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"first_name", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	sally := keyindex.AppendInt(keyindex.AppendString(nil, "Sally"), 1001)
	buf := run(t, k, []formattest.Case{
		{Name: "row", Value: []byte(`{"id":1001,"first_name":"Sally","email":"s@acme.com"}`), Want: sally},
		{Name: "tombstone", Key: []byte(`{"id":1001,"first_name":"Sally"}`), Want: sally, Delete: true},
		{Name: "tombstone with a connect key", Key: []byte(`{"schema":{"type":"struct"},"payload":{"first_name":"Sally","id":1001}}`), Want: sally, Delete: true},
		{Name: "row without a key field", Value: []byte(`{"first_name":"Sally"}`), Reason: format.RejectKey, Err: "row key: key field id is missing"},
		{Name: "key field null", Value: []byte(`{"id":null,"first_name":"Sally"}`), Reason: format.RejectKey, Err: "key field id is null"},
		{Name: "key field of another type", Value: []byte(`{"id":"x","first_name":"Sally"}`), Reason: format.RejectKey, Err: "key field id"},
		{Name: "tombstone without a Kafka key", Reason: format.RejectKey, Err: "tombstone: the row key of the Kafka key: the record has no Kafka key"},
		{Name: "tombstone with a plain key for two fields", Key: []byte(`1001`), Reason: format.RejectKey, Err: "not a JSON object with the key fields first_name, id"},
		{Name: "tombstone with a key missing a field", Key: []byte(`{"id":1001}`), Reason: format.RejectKey, Err: "key field first_name is missing"},
		{Name: "bad JSON", Value: []byte(`{"id":`), Reason: format.RejectKey},
	})
	if buf == nil || buf.Group.NumRows() != 1 {
		t.Fatalf("rows %v, want 1", buf)
	}
}

// TestKeyedPlainKey: a one-field key's tombstone may have the field's
// plain bytes as its Kafka key.
func TestKeyedPlainKey(t *testing.T) {
	k, err := open(t, customers, false).(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, k, []formattest.Case{
		{Name: "row", Value: []byte(`{"id":-5,"first_name":"A"}`), Want: keyindex.AppendInt(nil, -5)},
		{Name: "digits", Key: []byte(`-5`), Want: keyindex.AppendInt(nil, -5), Delete: true},
		{Name: "JSON object", Key: []byte(`{"id":-5}`), Want: keyindex.AppendInt(nil, -5), Delete: true},
		{Name: "not digits", Key: []byte(`five`), Reason: format.RejectKey, Err: `the Kafka key "five" is not the decimal digits of a 32-bit integer`},
	})
}

// TestKeyedDebezium reads Debezium's events as its PostgreSQL connector
// writes them through Kafka Connect's JsonConverter: c, r and u write
// after with the change column, d deletes by before or the Kafka key, a
// tombstone deletes, a truncate and an unknown op are rejections.
func TestKeyedDebezium(t *testing.T) {
	k, err := open(t, customers, true).(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	key := func(id int64) []byte { return keyindex.AppendInt(nil, id) }
	buf := run(t, k, []formattest.Case{
		{Name: "create", Value: []byte(event(t, "create.json")), Want: key(1001), Op: 'c'},
		{Name: "snapshot", Value: []byte(event(t, "read.json")), Want: key(1002), Op: 'r'},
		{Name: "update", Value: []byte(event(t, "update.json")), Want: key(1001), Op: 'u'},
		{Name: "schemas.enable", Value: []byte(event(t, "create_schemas.json")), Want: key(1003), Op: 'c'},
		{Name: "delete by before", Value: []byte(event(t, "delete.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by the Kafka key", Key: []byte(event(t, "key.json")), Value: []byte(event(t, "delete_nobefore.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by a connect Kafka key", Key: []byte(event(t, "key_schemas.json")), Value: []byte(event(t, "delete_nobefore.json")), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "tombstone", Key: []byte(event(t, "key_schemas.json")), Want: key(1001), Delete: true},
		{Name: "truncate", Value: []byte(event(t, "truncate.json")), Reason: format.RejectChange, Err: "truncate"},
		{Name: "unknown op", Value: []byte(`{"op":"m","after":{"id":1}}`), Reason: format.RejectChange, Err: `unknown op "m"`},
		{Name: "not JSON", Value: []byte(`{"op":`), Reason: format.RejectDecode},
		{Name: "after without the key", Value: []byte(`{"op":"c","after":{"first_name":"x"}}`), Reason: format.RejectKey, Err: "debezium after: row key: key field id is missing"},
		{Name: "delete without before or Kafka key", Value: []byte(event(t, "delete_nobefore.json")), Reason: format.RejectKey, Err: "debezium delete without before"},
		{Name: "delete whose before lacks the key", Value: []byte(`{"op":"d","before":{"email":"x"}}`), Reason: format.RejectKey, Err: "the row key of before: key field id is missing"},
	})
	if buf == nil || buf.Group.NumRows() != 4 {
		t.Fatalf("rows %v, want 4", buf)
	}
	cols := formattest.Columns(buf)
	op, ts := cols["_cdc.op"], cols["_cdc.ts"]
	if op == nil || ts == nil {
		t.Fatalf("no _cdc columns in %s", buf.Schema)
	}
	if string(op.Bytes) != "cruc" {
		t.Errorf("_cdc.op %q, want cruc", op.Bytes)
	}
	// source.ts_ms in microseconds, as a table's timestamps are.
	if len(ts.Int64) != 4 || ts.Int64[0] != 1733580000123000 || ts.Int64[3] != 1733580000999000 {
		t.Errorf("_cdc.ts %v", ts.Int64)
	}
	// Decode, as a Decoder, takes rows and refuses deletes.
	if _, rej, _ := k.NewDecoder(format.Partition{Schema: buf.Schema}).Decode(context.Background(), []byte(event(t, "delete.json")), 1); rej == nil || rej.Reason != format.RejectChange {
		t.Errorf("Decode of a delete: %v", rej)
	}
}
