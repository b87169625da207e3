package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/schema/avro"
)

// avroConvert is an Avro input: a container file, or JSON lines of an
// Avro schema.
type avroConvert struct {
	container bool
	schema    *avro.Schema
}

// avroContainerInput is --input-format avro: an Avro object container
// file, whose writer schema gives the Parquet schema.
var avroContainerInput = inputKind{
	formats: []string{"avro"},
	open: func(_ context.Context, f inputFlags) (convertInput, error) {
		if f.avroSchema != "" || f.variant || f.parquetSchema != "" {
			return nil, usagef("--input-format avro takes its schema from the file: no --schema, --avro-schema or --variant")
		}
		return &avroConvert{container: true}, nil
	},
}

// avroJSONInput checks --avro-schema against the other flags of JSON
// Lines and parses its file; nil when the flag is not given.
func avroJSONInput(f inputFlags) (convertInput, error) {
	if f.avroSchema == "" {
		return nil, nil
	}
	if f.variant || f.parquetSchema != "" {
		return nil, usagef("--avro-schema gives the schema: no --schema or --variant with it")
	}
	text, err := os.ReadFile(f.avroSchema)
	if err != nil {
		return nil, err
	}
	s, err := avro.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.avroSchema, err)
	}
	return &avroConvert{schema: s}, nil
}

func (a *avroConvert) run(ctx context.Context, in io.Reader, out io.Writer, opts convert.Options) (convert.Stats, error) {
	opts.Schema = nil
	if a.container {
		return convert.RunAvro(ctx, in, out, opts)
	}
	return convert.RunAvroJSON(ctx, in, out, a.schema, opts)
}
