package connector

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/format/all"
)

// TestKeyedFormat: table.key and format.envelope are checked against the
// format when the sink opens it; each refusal names what is wrong.
func TestKeyedFormat(t *testing.T) {
	dir := t.TempDir()
	sf := filepath.Join(dir, "row.schema")
	if err := os.WriteFile(sf, []byte("message row { required int64 id; required binary name (STRING); optional binary note (STRING); required group addr { required binary city (STRING); } }"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		typ      string
		key      []string
		envelope string
		err      string // "" when accepted
	}{
		{name: "json", typ: "json", key: []string{"id"}},
		{name: "json two fields", typ: "json", key: []string{"name", "id"}},
		{name: "json debezium", typ: "json", key: []string{"id"}, envelope: "debezium"},
		{name: "missing", typ: "json", key: []string{"nope"}, err: "key field nope: not a field of the schema"},
		{name: "optional", typ: "json", key: []string{"note"}, err: "key field note: optional"},
		{name: "group", typ: "json", key: []string{"addr"}, err: "key field addr: not a primitive field"},
		{name: "variant debezium", typ: "variant", key: []string{"id"}, envelope: "debezium", err: "format.envelope debezium: the variant format does not read it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Config{Path: "{topic}", Envelope: true, Table: &config.Table{Mode: config.ModeUpsert, Key: tc.key, FormatVersion: 3}}
			c.Format.Type, c.Format.Envelope = tc.typ, tc.envelope
			if tc.typ == "json" {
				c.Format.SchemaFile = sf
			} else {
				c.Format.Column, c.Format.Shred = "payload", "none"
			}
			f, err := all.Formats().Open(c, format.Env{Log: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			k, err := keyedFormat(f, c)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "table.mode upsert: ") {
					t.Errorf("error = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := k.(format.Keyed); !ok {
				t.Fatalf("%T is not format.Keyed", k)
			}
			s, err := k.FixedSchema()
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Lookup(format.CDCField) != nil; got != (tc.envelope != "") {
				t.Errorf("the %s column: %v, want %v", format.CDCField, got, tc.envelope != "")
			}
		})
	}
}
