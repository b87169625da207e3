package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

// jsonSchemaConvert is JSON Lines validated by a JSON Schema
// (--json-schema), whose mapping is the Parquet schema.
type jsonSchemaConvert struct {
	path   string
	schema *jsonschema.Schema
}

// jsonSchemaInput checks --json-schema against the other flags of JSON
// Lines and compiles its file, whose relative $refs load files beside it;
// nil when the flag is not given.
func jsonSchemaInput(f inputFlags) (convertInput, error) {
	if f.jsonSchema == "" {
		return nil, nil
	}
	if f.variant || f.parquetSchema != "" || f.avroSchema != "" {
		return nil, usagef("--json-schema gives the schema: no --schema, --avro-schema or --variant with it")
	}
	text, err := os.ReadFile(f.jsonSchema)
	if err != nil {
		return nil, err
	}
	s, err := jsonschema.Compile(text, jsonschema.Base(f.jsonSchema), jsonschema.LocalFiles())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.jsonSchema, err)
	}
	return &jsonSchemaConvert{path: f.jsonSchema, schema: s}, nil
}

// refuseJSONSchema refuses --json-schema with an --input-format that is
// not JSON Lines.
func refuseJSONSchema(f inputFlags) error {
	if f.jsonSchema != "" {
		return usagef("--json-schema reads JSON Lines: --input-format json, not %q", f.format)
	}
	return nil
}

func (j *jsonSchemaConvert) run(ctx context.Context, in io.Reader, out io.Writer, opts convert.Options) (convert.Stats, error) {
	return convert.RunJSONSchema(ctx, in, out, j.schema, opts)
}

func (j *jsonSchemaConvert) schemaFile() string { return j.path }
