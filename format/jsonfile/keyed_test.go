package jsonfile_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/jsonfile"
	"github.com/pqsink/pqsink/rowgroup"
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

// change is a record and what DecodeChange makes of it.
type change struct {
	name   string
	key    string // the Kafka key
	value  *string
	reason string // "": a change
	err    string // in the rejection
	want   []byte // the row key
	delete bool
	op     byte
}

func str(s string) *string { return &s }

// run decodes each record as a change, checks it, and appends each row to
// one file's buffers; it returns them.
func run(t *testing.T, k format.Keyed, cases []change) *format.Buffers {
	t.Helper()
	fixed, err := k.FixedSchema()
	if err != nil {
		t.Fatal(err)
	}
	dec := k.NewChangeDecoder(format.Partition{Schema: fixed})
	var buf *format.Buffers
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var value []byte
			if c.value != nil {
				value = []byte(*c.value)
			}
			var key []byte
			if c.key != "" {
				key = []byte(c.key)
			}
			ch, rej, err := dec.DecodeChange(context.Background(), key, value, 7)
			if err != nil {
				t.Fatal(err)
			}
			if c.reason != "" {
				if rej == nil || rej.Reason != c.reason || !strings.Contains(rej.Error(), c.err) {
					t.Fatalf("change %+v, rejection %v, want reason %s containing %q", ch, rej, c.reason, c.err)
				}
				return
			}
			if rej != nil {
				t.Fatalf("rejected: %s: %v", rej.Reason, rej)
			}
			if !bytes.Equal(ch.Key, c.want) || ch.Delete != c.delete || ch.Op != c.op {
				t.Fatalf("key %x delete %v op %q, want %x %v %q", ch.Key, ch.Delete, ch.Op, c.want, c.delete, c.op)
			}
			if ch.Delete {
				return
			}
			if buf == nil {
				if buf, err = dec.NewBuffers(ch.Row); err != nil {
					t.Fatal(err)
				}
			}
			if err := dec.Fits(buf, ch.Row).Append(ch.Row.Payload, &rowgroup.Envelope{Topic: "t"}); err != nil {
				t.Fatalf("row %s: %v", ch.Row.Payload, err)
			}
		})
	}
	return buf
}

// TestKeyedChanges: values are rows with their key, tombstones delete by
// the Kafka key; keys that cannot be read are rejections with reason key.
func TestKeyedChanges(t *testing.T) {
	k, err := open(t, customers, true).(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"first_name", "id"}})
	if err != nil {
		t.Fatal(err)
	}
	sally := keyindex.AppendInt(keyindex.AppendString(nil, "Sally"), 1001)
	buf := run(t, k, []change{
		{name: "row", value: str(`{"id":1001,"first_name":"Sally","email":"s@acme.com"}`), want: sally},
		{name: "tombstone", key: `{"id":1001,"first_name":"Sally"}`, want: sally, delete: true},
		{name: "tombstone with a connect key", key: `{"schema":{"type":"struct"},"payload":{"first_name":"Sally","id":1001}}`, want: sally, delete: true},
		{name: "row without a key field", value: str(`{"first_name":"Sally"}`), reason: format.RejectKey, err: "row key: key field id is missing"},
		{name: "key field null", value: str(`{"id":null,"first_name":"Sally"}`), reason: format.RejectKey, err: "key field id is null"},
		{name: "key field of another type", value: str(`{"id":"x","first_name":"Sally"}`), reason: format.RejectKey, err: "key field id"},
		{name: "tombstone without a Kafka key", reason: format.RejectKey, err: "tombstone: the row key of the Kafka key: the record has no Kafka key"},
		{name: "tombstone with a plain key for two fields", key: `1001`, reason: format.RejectKey, err: "not a JSON object with the key fields first_name, id"},
		{name: "tombstone with a key missing a field", key: `{"id":1001}`, reason: format.RejectKey, err: "key field first_name is missing"},
		{name: "bad JSON", value: str(`{"id":`), reason: format.RejectKey},
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
	run(t, k, []change{
		{name: "row", value: str(`{"id":-5,"first_name":"A"}`), want: keyindex.AppendInt(nil, -5)},
		{name: "digits", key: `-5`, want: keyindex.AppendInt(nil, -5), delete: true},
		{name: "JSON object", key: `{"id":-5}`, want: keyindex.AppendInt(nil, -5), delete: true},
		{name: "not digits", key: `five`, reason: format.RejectKey, err: `the Kafka key "five" is not the decimal digits of a 32-bit integer`},
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
	buf := run(t, k, []change{
		{name: "create", value: str(event(t, "create.json")), want: key(1001), op: 'c'},
		{name: "snapshot", value: str(event(t, "read.json")), want: key(1002), op: 'r'},
		{name: "update", value: str(event(t, "update.json")), want: key(1001), op: 'u'},
		{name: "schemas.enable", value: str(event(t, "create_schemas.json")), want: key(1003), op: 'c'},
		{name: "delete by before", value: str(event(t, "delete.json")), want: key(1001), delete: true, op: 'd'},
		{name: "delete by the Kafka key", key: event(t, "key.json"), value: str(event(t, "delete_nobefore.json")), want: key(1001), delete: true, op: 'd'},
		{name: "delete by a connect Kafka key", key: event(t, "key_schemas.json"), value: str(event(t, "delete_nobefore.json")), want: key(1001), delete: true, op: 'd'},
		{name: "tombstone", key: event(t, "key_schemas.json"), want: key(1001), delete: true},
		{name: "truncate", value: str(event(t, "truncate.json")), reason: format.RejectChange, err: "truncate"},
		{name: "unknown op", value: str(`{"op":"m","after":{"id":1}}`), reason: format.RejectChange, err: `unknown op "m"`},
		{name: "not JSON", value: str(`{"op":`), reason: format.RejectDecode},
		{name: "after without the key", value: str(`{"op":"c","after":{"first_name":"x"}}`), reason: format.RejectKey, err: "debezium after: row key: key field id is missing"},
		{name: "delete without before or Kafka key", value: str(event(t, "delete_nobefore.json")), reason: format.RejectKey, err: "debezium delete without before"},
		{name: "delete whose before lacks the key", value: str(`{"op":"d","before":{"email":"x"}}`), reason: format.RejectKey, err: "the row key of before: key field id is missing"},
	})
	if buf == nil || buf.Group.NumRows() != 4 {
		t.Fatalf("rows %v, want 4", buf)
	}
	var op, ts *rowgroup.Column
	for _, c := range buf.Group.Columns() {
		switch c.Leaf.PathString() {
		case "_cdc.op":
			op = c
		case "_cdc.ts":
			ts = c
		}
	}
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
