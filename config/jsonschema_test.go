package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestJSONSchemaFormat: format.type json_schema takes a registry or a
// schema_file, exactly one, and refuses the keys of the other types.
func TestJSONSchemaFormat(t *testing.T) {
	dir := testDir(t)
	writeFiles(t, dir, "event.schema.json")
	env := envOf(map[string]string{"DIR": dir})
	for _, tc := range []struct {
		name, format string
		want         string // substring of the error; "" for a valid config
	}{
		{"registry", "{type: json_schema, registry: {url: 'http://registry:8081'}}", ""},
		{"schema file", "{type: json_schema, schema_file: '${DIR}/event.schema.json'}", ""},
		{"lossy numbers", "{type: json_schema, schema_file: '${DIR}/event.schema.json', lossy_numbers: true}", ""},
		{"neither", "{type: json_schema}", "format.registry: required when format.type is json_schema"},
		{"both", "{type: json_schema, schema_file: '${DIR}/event.schema.json', registry: {url: 'http://r:8081'}}", "format.schema_file: not used with format.registry"},
		{"missing file", "{type: json_schema, schema_file: '${DIR}/nope.json'}", "format.schema_file: "},
		{"bad registry url", "{type: json_schema, registry: {url: 'r:8081'}}", "format.registry.url: want a URL"},
		{"column", "{type: json_schema, registry: {url: 'http://r:8081'}, column: c}", "format.column: not used when format.type is json_schema"},
		{"ignore unknown", "{type: json_schema, registry: {url: 'http://r:8081'}, ignore_unknown_fields: true}", "format.ignore_unknown_fields: not used when format.type is json_schema"},
		{"compatibility", "{type: json_schema, registry: {url: 'http://r:8081'}, schema_compatibility: backward}", "format.schema_compatibility: not used when format.type is json_schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(kafkaOK+storeOK+"format: "+tc.format+"\n"), env)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.Format.Type != "json_schema" || (c.Format.Registry == nil) == (c.Format.SchemaFile == "") {
					t.Errorf("format %+v: want type json_schema and one of registry, schema_file", c.Format)
				}
				if c.Format.SchemaFile != "" && c.Format.SchemaFile != filepath.Join(dir, "event.schema.json") {
					t.Errorf("schema_file %q", c.Format.SchemaFile)
				}
				// The printed config keeps the format's keys: it loads back
				// to the same format section.
				again, err := Parse([]byte(c.Redacted()), nil)
				if err != nil {
					t.Fatalf("Parse(Redacted()): %v\n%s", err, c.Redacted())
				}
				if !reflect.DeepEqual(again.Format, c.Format) {
					t.Errorf("printed and read again: %+v, want %+v\n%s", again.Format, c.Format, c.Redacted())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// With a registry too, path fields and time_field are read from the
	// JSON after the wire format's header.
	c, err := Parse([]byte(kafkaOK+storeOK+"format: {type: json_schema, registry: {url: 'http://r:8081'}}\ntime_field: ts\npath: '{field:a.b}/{partition}/{first_offset}.parquet'\n"), env)
	if err != nil || c.TimeField != "ts" {
		t.Errorf("time_field and {field:} with a registry: %v", err)
	}
}
