package jsonfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/testutil/changelog"
	"github.com/pqsink/pqsink/table/keyindex"
)

// items is the schema of internal/testutil/changelog's rows.
const items = `message items {
  optional binary tenant (STRING);
  required int64 id;
  required binary name (STRING);
  required int64 version;
  required double score;
  required boolean active;
  optional binary note (STRING);
}`

// TestKeyedChangelog reads a generated changelog as changes, keeps each
// key's last row, and compares that table with the changelog's fold:
// rows and tombstones, and Debezium events with their tombstones, with
// one key field and two.
func TestKeyedChangelog(t *testing.T) {
	for _, c := range []struct {
		name     string
		envelope string
		opts     []changelog.Option
	}{
		{"rows and tombstones", "", nil},
		{"rows, two key fields", "", []changelog.Option{changelog.CompositeKey(), changelog.Mix(1, 1, 2)}},
		{"debezium", format.EnvelopeDebezium, []changelog.Option{changelog.Debezium(), changelog.Tombstones(), changelog.Snapshot(20)}},
		{"debezium, two key fields", format.EnvelopeDebezium, []changelog.Option{changelog.Debezium(), changelog.CompositeKey()}},
		{"debezium without before, JsonConverter's schemas", format.EnvelopeDebezium, []changelog.Option{changelog.Debezium(), changelog.NoBefore(), changelog.ConnectSchemas(), changelog.Tombstones()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := changelog.New(11, 40, c.opts...)
			schemaText := items
			if len(g.KeyFields()) == 2 {
				schemaText = `message items { required binary tenant (STRING); required int64 id; required binary name (STRING);
  required int64 version; required double score; required boolean active; optional binary note (STRING); }`
			}
			k, err := open(t, schemaText, true).(format.Keyer).Keyed(format.KeyOptions{Fields: g.KeyFields(), Envelope: c.envelope})
			if err != nil {
				t.Fatal(err)
			}
			fixed, err := k.FixedSchema()
			if err != nil {
				t.Fatal(err)
			}
			dec := k.NewChangeDecoder(format.Partition{Schema: fixed})
			table := map[string][]byte{} // row key → the row's JSON
			for i := range 3000 {
				ev := g.Next()
				ch, rej, err := dec.DecodeChange(context.Background(), ev.Key, ev.Value, int64(i))
				if err != nil || rej != nil {
					t.Fatalf("event %d (%s %s): %v %v", i, ev.Key, ev.Value, rej, err)
				}
				if ch.Delete {
					delete(table, string(ch.Key))
					continue
				}
				text := ch.Row.Text
				if text == nil {
					text = ch.Row.Payload
				}
				table[string(ch.Key)] = append([]byte(nil), text...)
			}
			fold := g.Fold()
			if len(fold) == 0 || len(table) != len(fold) {
				t.Fatalf("%d keys read, the fold has %d", len(table), len(fold))
			}
			for _, row := range fold {
				var key []byte
				if tenant, ok := row["tenant"].(string); ok && len(g.KeyFields()) == 2 {
					key = keyindex.AppendString(key, tenant)
				}
				key = keyindex.AppendInt(key, row["id"].(int64))
				text, ok := table[string(key)]
				if !ok {
					t.Fatalf("the fold's row %v is not in the table read", row)
				}
				want, err := json.Marshal(row)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := decodeJSON(t, text), decodeJSON(t, want); !reflect.DeepEqual(got, want) {
					t.Fatalf("key %x: row read %v, the fold's %v", key, got, want)
				}
			}
		})
	}
}

// decodeJSON decodes a JSON object, its numbers as their text.
func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}
