package jsonschemafmt_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/jsonschema/jsonschemafmt"
	"github.com/pqsink/pqsink/table/keyindex"
)

const customersSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "id": {"type": "integer"},
    "first_name": {"type": "string"},
    "last_name": {"type": ["string", "null"]},
    "email": {"type": ["string", "null"]}
  },
  "required": ["id", "first_name"]
}`

func openFile(t *testing.T, text string) format.Format {
	t.Helper()
	path := filepath.Join(t.TempDir(), "customers.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := jsonschemafmt.Open(&config.Config{Format: config.Format{Type: jsonschemafmt.Name, SchemaFile: path}, Envelope: true, Table: &config.Table{Format: "iceberg"}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func openRegistry(t *testing.T, schemas map[uint32]fakeregistry.Schema) format.Format {
	t.Helper()
	url := fakeregistry.Start(t, schemas)
	f, err := jsonschemafmt.Open(&config.Config{Format: config.Format{Type: jsonschemafmt.Name, Registry: &config.Registry{URL: url, Timeout: 5 * time.Second}}}, format.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func event(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "format", "testdata", "debezium", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type change struct {
	name       string
	key, value []byte // value nil: a tombstone
	reason     string
	err        string
	want       []byte
	delete     bool
	op         byte
}

func check(t *testing.T, dec format.ChangeDecoder, cases []change) int {
	t.Helper()
	rows := 0
	var bufs map[any]*format.Buffers = map[any]*format.Buffers{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch, rej, err := dec.DecodeChange(context.Background(), c.key, c.value, 3)
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
			k := dec.BuffersKey(ch.Row)
			if bufs[k] == nil {
				if bufs[k], err = dec.NewBuffers(ch.Row); err != nil {
					t.Fatal(err)
				}
			}
			var env *rowgroup.Envelope
			if bufs[k].Schema.Lookup(rowgroup.EnvelopeField) != nil {
				env = &rowgroup.Envelope{Topic: "t"}
			}
			if err := dec.Fits(bufs[k], ch.Row).Append(ch.Row.Payload, env); err != nil {
				t.Fatalf("row %s: %v", ch.Row.Payload, err)
			}
			rows++
		})
	}
	return rows
}

// TestKeyedOpen: with a schema file, key fields are checked at open.
func TestKeyedOpen(t *testing.T) {
	f := openFile(t, customersSchema).(format.Keyer)
	for _, c := range []struct {
		opts format.KeyOptions
		err  string
	}{
		{format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium}, ""},
		{format.KeyOptions{Fields: []string{"email"}}, "key field email: optional"},
		{format.KeyOptions{Fields: []string{"nope"}}, "key field nope: not a field"},
	} {
		_, err := f.Keyed(c.opts)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.err)
		}
	}
	r := openRegistry(t, nil).(format.Keyer)
	if _, err := r.Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium}); err != nil {
		t.Errorf("debezium with a registry: %v", err)
	}
	if _, err := r.Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: "maxwell"}); err == nil || !strings.Contains(err.Error(), "does not read it") {
		t.Errorf("another envelope: error %v", err)
	}
}

// TestKeyedDebezium: Debezium's events whose rows are values of the
// schema file; after is validated against it.
func TestKeyedDebezium(t *testing.T) {
	k, err := openFile(t, customersSchema).(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}, Envelope: format.EnvelopeDebezium})
	if err != nil {
		t.Fatal(err)
	}
	fixed, _ := k.FixedSchema()
	if fixed.Lookup("_cdc", "op") == nil || fixed.Lookup("_kafka") == nil {
		t.Fatalf("files' schema %s lacks _cdc or _kafka", fixed)
	}
	key := func(id int64) []byte { return keyindex.AppendInt(nil, id) }
	rows := check(t, k.NewChangeDecoder(format.Partition{Schema: fixed, Log: slog.New(slog.DiscardHandler)}), []change{
		{name: "create", value: event(t, "create.json"), want: key(1001), op: 'c'},
		{name: "update, schemas.enable", value: event(t, "create_schemas.json"), want: key(1003), op: 'c'},
		{name: "delete", value: event(t, "delete.json"), want: key(1001), delete: true, op: 'd'},
		{name: "delete by the Kafka key", key: event(t, "key_schemas.json"), value: event(t, "delete_nobefore.json"), want: key(1001), delete: true, op: 'd'},
		{name: "tombstone", key: []byte("1001"), want: key(1001), delete: true},
		{name: "after not valid", value: []byte(`{"op":"c","after":{"id":1}}`), reason: format.RejectSchema, err: "debezium after"},
		{name: "truncate", value: event(t, "truncate.json"), reason: format.RejectChange, err: "truncate"},
	})
	if rows != 2 {
		t.Errorf("rows %d, want 2", rows)
	}
}

// TestKeyedRegistry: with a registry, each value's schema gives its key
// columns; a Kafka key in the wire format is read with its own schema,
// another with the newest schema of the partition's values.
func TestKeyedRegistry(t *testing.T) {
	const optionalID = `{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"},"first_name":{"type":"string"},"last_name":{"type":["string","null"]},"email":{"type":["string","null"]}},"required":["first_name"]}`
	const keyOnly = `{"type":"object","additionalProperties":false,"properties":{"id":{"type":"integer"}},"required":["id"]}`
	f := openRegistry(t, map[uint32]fakeregistry.Schema{
		1: {Type: "JSON", Text: customersSchema},
		2: {Type: "JSON", Text: optionalID},
		3: {Type: "JSON", Text: keyOnly},
	})
	k, err := f.(format.Keyer).Keyed(format.KeyOptions{Fields: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	dec := k.NewChangeDecoder(format.Partition{Log: slog.New(slog.DiscardHandler)})
	rows := check(t, dec, []change{
		{name: "plain key before any value", key: []byte("5"), reason: format.RejectKey, err: "before any value"},
		{name: "row", value: fakeregistry.Wire(1, nil, []byte(`{"id":5,"first_name":"a"}`)), want: keyindex.AppendInt(nil, 5)},
		{name: "plain key", key: []byte("5"), want: keyindex.AppendInt(nil, 5), delete: true},
		{name: "wire key", key: fakeregistry.Wire(3, nil, []byte(`{"id":5}`)), want: keyindex.AppendInt(nil, 5), delete: true},
		{name: "wire key of an unknown id", key: fakeregistry.Wire(9, nil, []byte(`{"id":5}`)), reason: format.RejectKey, err: "json schema id 9"},
		{name: "schema whose key field is optional", value: fakeregistry.Wire(2, nil, []byte(`{"id":6,"first_name":"a"}`)), reason: format.RejectKey, err: "json schema id 2: key field id: optional"},
	})
	if rows != 1 {
		t.Errorf("rows %d, want 1", rows)
	}
}
