package main

import (
	"context"
	"io"
	"slices"

	"github.com/pqsink/pqsink/convert"
)

// convertInput is an input of pqsink convert that gives its own schema
// (an Avro container file or schema, a .proto message, a JSON Schema): it
// converts in into out.
type convertInput interface {
	run(ctx context.Context, in io.Reader, out io.Writer, opts convert.Options) (convert.Stats, error)
}

// schemaFiler is a convertInput whose schema's file --errors file:PATH
// must not name (a JSON Schema's).
type schemaFiler interface {
	schemaFile() string
}

// inputFlags are convert's flags that choose and describe its input.
type inputFlags struct {
	format             string // --input-format
	protoFile, message string
	importPaths        []string
	jsonSchema         string
	avroSchema         string
	parquetSchema      string // --schema
	variant            bool
}

// inputKind is one kind of input of pqsink convert, in a file of its own
// (convert_avro.go, convert_protobuf.go, convert_jsonschema.go): the
// --input-format values that choose it, the flags only it takes, and how
// it checks its flags and opens its schema.
type inputKind struct {
	// formats are the --input-format values of the kind.
	formats []string
	// ownFlags reports whether a flag that only this kind takes is given.
	ownFlags func(f inputFlags) bool
	// ownFlagsErr is the error when ownFlags are given with another
	// --input-format.
	ownFlagsErr string
	// jsonLines reports whether the input is JSON Lines, which
	// --json-schema reads.
	jsonLines bool
	// open checks the flags of the kind and opens its input: nil for JSON
	// Lines of --schema or --variant, which convert reads itself.
	open func(ctx context.Context, f inputFlags) (convertInput, error)
}

// inputKinds are convert's kinds of input, in the order their flags are
// checked.
var inputKinds = []inputKind{protobufInput, avroContainerInput, jsonLinesInput}

// openInput checks the input flags and opens the input they choose: nil
// for JSON Lines of --schema or --variant.
func openInput(ctx context.Context, f inputFlags) (convertInput, error) {
	var kind *inputKind
	for i, k := range inputKinds {
		switch {
		case slices.Contains(k.formats, f.format):
			kind = &inputKinds[i]
		case k.ownFlags != nil && k.ownFlags(f):
			return nil, usagef("%s", k.ownFlagsErr)
		}
	}
	if kind == nil {
		return nil, usagef("--input-format %q: want jsonl or avro", f.format)
	}
	in, err := kind.open(ctx, f)
	if err != nil {
		return nil, err
	}
	if !kind.jsonLines {
		if err := refuseJSONSchema(f); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// jsonLinesInput is JSON Lines: of --schema, into a VARIANT (--variant),
// or of an Avro schema in Avro's JSON encoding (--avro-schema), or
// validated by a JSON Schema (--json-schema).
var jsonLinesInput = inputKind{
	formats:   []string{"jsonl", "json"},
	jsonLines: true,
	open: func(_ context.Context, f inputFlags) (convertInput, error) {
		// Each schema flag of JSON Lines refuses the others, so one at
		// most opens an input; they are checked in order.
		var chosen convertInput
		for _, open := range []func(inputFlags) (convertInput, error){avroJSONInput, jsonSchemaInput} {
			in, err := open(f)
			if err != nil {
				return nil, err
			}
			if in != nil {
				chosen = in
			}
		}
		return chosen, nil
	},
}
