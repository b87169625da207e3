package jsonfile_test

import (
	"testing"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/formattest"
	"github.com/pqsink/pqsink/internal/testutil/changelog"
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
			table := formattest.Changelog(t, k.NewChangeDecoder(format.Partition{Schema: fixed}), g, 3000, nil)
			formattest.MatchFold(t, table, g.KeyFields(), g.Fold())
		})
	}
}
