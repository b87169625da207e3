package main

import (
	"fmt"
	"os"

	"github.com/pqsink/pqsink/schema/jsonschema"
)

// jsonSchemaInput checks --json-schema against the other flags and
// compiles its file, whose relative $refs load files beside it; nil when
// the flag is not given.
func jsonSchemaInput(path, format string, variant bool, parquetSchema, avroSchema string) (*jsonschema.Schema, error) {
	if path == "" {
		return nil, nil
	}
	switch {
	case format != "jsonl" && format != "json":
		return nil, usagef("--json-schema reads JSON Lines: --input-format json, not %q", format)
	case variant || parquetSchema != "" || avroSchema != "":
		return nil, usagef("--json-schema gives the schema: no --schema, --avro-schema or --variant with it")
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := jsonschema.Compile(text, jsonschema.Base(path), jsonschema.LocalFiles())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
