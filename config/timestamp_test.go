package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTimestampPrecision: table.timestamp_precision is nanos (the
// default) or micros, which only format.type protobuf, avro and json
// take, and which the rendered config keeps.
func TestTimestampPrecision(t *testing.T) {
	const (
		proto = kafkaOK + storeOK + "format: {type: protobuf, registry: {url: 'http://r:8081'}}\n"
		tbl   = "table: {format: iceberg, namespace: n, catalog: {type: sql, uri: 'sqlite:///x.db'}%s}\n"
	)
	schemaFile := filepath.Join(t.TempDir(), "s.schema")
	if err := os.WriteFile(schemaFile, []byte("message m { required int64 ts (TIMESTAMP(NANOS,true)); }"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, text string
		micros     bool
		err        string
	}{
		{"default", proto + strings.Replace(tbl, "%s", "", 1), false, ""},
		{"nanos", proto + strings.Replace(tbl, "%s", ", timestamp_precision: nanos", 1), false, ""},
		{"micros", proto + strings.Replace(tbl, "%s", ", timestamp_precision: micros", 1), true, ""},
		{"MICROS", proto + strings.Replace(tbl, "%s", ", timestamp_precision: MICROS", 1), true, ""},
		{"millis", proto + strings.Replace(tbl, "%s", ", timestamp_precision: millis", 1), false, `table.timestamp_precision: "millis" is not one of nanos, micros`},
		{"micros with avro", kafkaOK + storeOK + "format: {type: avro, registry: {url: 'http://r:8081'}}\n" + strings.Replace(tbl, "%s", ", timestamp_precision: micros", 1), true, ""},
		{"micros with variant", kafkaOK + storeOK + "format: {type: variant}\n" + strings.Replace(tbl, "%s", ", timestamp_precision: micros", 1), false,
			"table.timestamp_precision: micros is for format.type protobuf (its google.protobuf.Timestamp fields), avro"},
		{"micros with json", kafkaOK + storeOK + "format: {type: json, schema_file: '" + schemaFile + "'}\n" + strings.Replace(tbl, "%s", ", timestamp_precision: micros", 1), true, ""},
		{"micros with json_schema", kafkaOK + storeOK + "format: {type: json_schema, registry: {url: 'http://r:8081'}}\n" + strings.Replace(tbl, "%s", ", timestamp_precision: micros", 1), false,
			"table.timestamp_precision: micros is for format.type protobuf (its google.protobuf.Timestamp fields), avro"},
		{"nanos with json", base + strings.Replace(tbl, "%s", ", timestamp_precision: nanos", 1), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.text), nil)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Table.TimestampMicros != c.micros {
				t.Errorf("TimestampMicros = %v, want %v", cfg.Table.TimestampMicros, c.micros)
			}
			again, err := Parse([]byte(cfg.Redacted()), nil)
			if err != nil {
				t.Fatalf("the rendered config: %v\n%s", err, cfg.Redacted())
			}
			if again.Table.TimestampMicros != c.micros {
				t.Errorf("rendered and read again, TimestampMicros = %v:\n%s", again.Table.TimestampMicros, cfg.Redacted())
			}
		})
	}
}
