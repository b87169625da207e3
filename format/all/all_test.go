package all

import (
	"slices"
	"testing"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/meta"
)

// TestFormats: every format.type the config accepts is registered, in the
// order the config names them.
func TestFormats(t *testing.T) {
	want := []string{"json", "variant", "avro", "protobuf", "json_schema"}
	if got := Formats().Names(); !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
}

// TestReplayers: the replay sides claim the footers of their formats'
// files, by the key that names their records' schema, and no other.
func TestReplayers(t *testing.T) {
	entry := func(k, v string) meta.KeyValue { return meta.KeyValue{Key: k, Value: &v} }
	rps := Formats().Replayers(&config.Config{}, format.ReplayEnv{})
	if len(rps) != 1 || rps[0].Label() != "Protobuf" {
		t.Fatalf("%d replayers, want Protobuf's only", len(rps))
	}
	cases := []struct {
		name string
		kv   []meta.KeyValue
		want string
	}{
		{"a .proto file's message", []meta.KeyValue{entry("pqsink.protobuf.message", "a.M")}, "pqsink.protobuf.message"},
		{"a registry's message", []meta.KeyValue{entry("pqsink.protobuf.message", "a.M"), entry("pqsink.protobuf.schema_id", "7"), entry("pqsink.protobuf.message_indexes", "0")}, "pqsink.protobuf.message"},
		{"a schema id without a message", []meta.KeyValue{entry("pqsink.protobuf.schema_id", "7")}, ""},
		{"Avro", []meta.KeyValue{entry("avro.schema", `"string"`)}, ""},
		{"JSON of a schema file", []meta.KeyValue{entry("pqsink.json.timestamp_units", `{}`)}, ""},
		{"no footer", nil, ""},
	}
	for _, c := range cases {
		if got := rps[0].Claims(c.kv); got != c.want {
			t.Errorf("%s: Claims = %q, want %q", c.name, got, c.want)
		}
	}
}
