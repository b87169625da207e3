package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProtobuf: format.type protobuf with a registry, or with proto_file,
// import_paths (resolved against the config's directory) and message;
// and the errors that name the key.
func TestProtobuf(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.proto"), []byte("syntax = \"proto3\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "imports"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{"DIR": dir})
	head := kafkaOK + storeOK

	c, err := Parse([]byte(head+"format: {type: protobuf, registry: {url: 'http://registry:8081'}}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Format.Registry == nil || c.Format.Registry.URL != "http://registry:8081" || c.Format.Protobuf == nil || c.Format.Protobuf.ProtoFile != "" {
		t.Errorf("registry: %+v", c.Format)
	}
	c, err = Parse([]byte(head+"format:\n  type: protobuf\n  proto_file: ${DIR}/events.proto\n  import_paths: ['${DIR}/imports']\n  message: shop.v1.Event\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Format.Protobuf
	if c.Format.Registry != nil || p == nil || p.ProtoFile != filepath.Join(dir, "events.proto") || !slices.Equal(p.ImportPaths, []string{filepath.Join(dir, "imports")}) || p.Message != "shop.v1.Event" {
		t.Errorf("proto_file: %+v %+v", c.Format, p)
	}
	if s := c.Redacted(); !strings.Contains(s, "proto_file: ") || !strings.Contains(s, "message: shop.v1.Event") {
		t.Errorf("printed config lacks the protobuf keys:\n%s", s)
	}

	for _, tc := range []struct{ name, format, want string }{
		{"neither", "{type: protobuf}", "format.registry: format.type protobuf needs format.registry"},
		{"both", "{type: protobuf, registry: {url: 'http://r:8081'}, proto_file: '${DIR}/events.proto', message: M}", "format.proto_file: give either"},
		{"no message", "{type: protobuf, proto_file: '${DIR}/events.proto'}", "format.message: required with format.proto_file"},
		{"message with registry", "{type: protobuf, registry: {url: 'http://r:8081'}, message: M}", "format.message: not used with format.registry"},
		{"file missing", "{type: protobuf, proto_file: '${DIR}/nope.proto', message: M}", "format.proto_file: "},
		{"import path missing", "{type: protobuf, proto_file: '${DIR}/events.proto', import_paths: ['${DIR}/nope'], message: M}", "format.import_paths: \"" + dir + "/nope\" is not a directory"},
		{"schema file", "{type: protobuf, registry: {url: 'http://r:8081'}, schema_file: x}", "format.schema_file: not used when format.type is protobuf"},
		{"proto_file for json", "{type: json, schema_file: '${DIR}/events.proto', proto_file: x}", "format.proto_file: not used when format.type is json"},
	} {
		_, err := Parse([]byte(head+"format: "+tc.format+"\n"), env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	c, err = Parse([]byte(head+"format: {type: protobuf, registry: {url: 'http://r:8081'}}\npath: '{field:a}/{partition}/{first_offset}.parquet'\ntime_field: ts\n"), env)
	if err != nil || c.Path != "{field:a}/{partition}/{first_offset}.parquet" || c.TimeField != "ts" {
		t.Errorf("{field:} in path and time_field: %v", err)
	}
}
