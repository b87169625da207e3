package jsonschemafmt_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/fakeregistry"
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

func openRegistry(t testing.TB, schemas map[uint32]fakeregistry.Schema) format.Format {
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
	rows := formattest.Check(t, k.NewChangeDecoder(format.Partition{Schema: fixed, Log: slog.New(slog.DiscardHandler)}), []formattest.Case{
		{Name: "create", Value: event(t, "create.json"), Want: key(1001), Op: 'c'},
		{Name: "update, schemas.enable", Value: event(t, "create_schemas.json"), Want: key(1003), Op: 'c'},
		{Name: "delete", Value: event(t, "delete.json"), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "delete by the Kafka key", Key: []byte(event(t, "key_schemas.json")), Value: event(t, "delete_nobefore.json"), Want: key(1001), Delete: true, Op: 'd'},
		{Name: "tombstone", Key: []byte("1001"), Want: key(1001), Delete: true},
		{Name: "after not valid", Value: []byte(`{"op":"c","after":{"id":1}}`), Reason: format.RejectSchema, Err: "debezium after"},
		{Name: "truncate", Value: event(t, "truncate.json"), Reason: format.RejectChange, Err: "truncate"},
	})
	if rows.Rows != 2 {
		t.Errorf("rows %d, want 2", rows.Rows)
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
	rows := formattest.Check(t, dec, []formattest.Case{
		{Name: "plain key before any value", Key: []byte("5"), Reason: format.RejectKey, Err: "before any value"},
		{Name: "row", Value: fakeregistry.Wire(1, nil, []byte(`{"id":5,"first_name":"a"}`)), Want: keyindex.AppendInt(nil, 5)},
		{Name: "plain key", Key: []byte("5"), Want: keyindex.AppendInt(nil, 5), Delete: true},
		{Name: "wire key", Key: fakeregistry.Wire(3, nil, []byte(`{"id":5}`)), Want: keyindex.AppendInt(nil, 5), Delete: true},
		{Name: "wire key of an unknown id", Key: fakeregistry.Wire(9, nil, []byte(`{"id":5}`)), Reason: format.RejectKey, Err: "json schema id 9"},
		{Name: "schema whose key field is optional", Value: fakeregistry.Wire(2, nil, []byte(`{"id":6,"first_name":"a"}`)), Reason: format.RejectKey, Err: "json schema id 2: key field id: optional"},
	})
	if rows.Rows != 1 {
		t.Errorf("rows %d, want 1", rows.Rows)
	}
}
