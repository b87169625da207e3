package all

import (
	"slices"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/meta"
)

// TestFormats: every format.type the config accepts is registered, in the
// order the config names them, and no other.
func TestFormats(t *testing.T) {
	want := []string{"json", "variant", "avro", "protobuf", "json_schema"}
	if got := config.FormatTypes(); !slices.Equal(got, want) {
		t.Errorf("the config takes format.type %v, want %v", got, want)
	}
	if got := Formats().Names(); !slices.Equal(got, config.FormatTypes()) {
		t.Errorf("registered %v, the config takes %v", got, config.FormatTypes())
	}
}

// TestReplayers: the replay sides claim the footers of their formats'
// files, by the key that names their records' schema, and no other.
func TestReplayers(t *testing.T) {
	entry := func(k, v string) meta.KeyValue { return meta.KeyValue{Key: k, Value: &v} }
	rps := Formats().Replayers(&config.Config{}, format.ReplayEnv{})
	var labels []string
	for _, rp := range rps {
		labels = append(labels, rp.Label())
	}
	if want := []string{"Protobuf", "JSON Schema", "Avro"}; !slices.Equal(labels, want) {
		t.Fatalf("replayers %v, want %v", labels, want)
	}
	// claims is the key each replayer claims a footer by, "" for none.
	claims := func(kv []meta.KeyValue) []string {
		var out []string
		for _, rp := range rps {
			out = append(out, rp.Claims(kv))
		}
		return out
	}
	cases := []struct {
		name string
		kv   []meta.KeyValue
		want []string
	}{
		{"a .proto file's message", []meta.KeyValue{entry("pqsink.protobuf.message", "a.M")}, []string{"pqsink.protobuf.message", "", ""}},
		{"a registry's message", []meta.KeyValue{entry("pqsink.protobuf.message", "a.M"), entry("pqsink.protobuf.schema_id", "7"), entry("pqsink.protobuf.message_indexes", "0")}, []string{"pqsink.protobuf.message", "", ""}},
		{"a schema id without a message", []meta.KeyValue{entry("pqsink.protobuf.schema_id", "7")}, []string{"", "", ""}},
		{"a JSON Schema", []meta.KeyValue{entry("json.schema", `{"type":"object"}`)}, []string{"", "json.schema", ""}},
		{"a registry's JSON Schema", []meta.KeyValue{entry("json.schema", `{}`), entry("json.schema.id", "3")}, []string{"", "json.schema", ""}},
		// The sink's Avro files keep the Avro schema; one beside a JSON
		// Schema makes the file Avro's.
		{"Avro beside a JSON Schema", []meta.KeyValue{entry("json.schema", `{}`), entry("avro.schema", `"string"`)}, []string{"", "", "avro.schema"}},
		{"Avro", []meta.KeyValue{entry("avro.schema", `"string"`)}, []string{"", "", "avro.schema"}},
		{"JSON of a schema file", []meta.KeyValue{entry("pqsink.json.timestamp_units", `{}`)}, []string{"", "", ""}},
		{"an empty Avro schema", []meta.KeyValue{entry("avro.schema", "")}, []string{"", "", ""}},
		{"no footer", nil, []string{"", "", ""}},
	}
	for _, c := range cases {
		if got := claims(c.kv); !slices.Equal(got, c.want) {
			t.Errorf("%s: Claims = %q, want %q", c.name, got, c.want)
		}
	}
}
