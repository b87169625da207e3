package main

import (
	"context"
	"io"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/schema/protobuf"
)

// protoConvert is a Protobuf input: length-delimited messages of one type.
type protoConvert struct {
	message protoreflect.MessageDescriptor
}

// protoFlags are convert's flags of a Protobuf input.
type protoFlags struct {
	format, file, message string
	importPaths           []string
	// the flags of other inputs, refused with protobuf
	variant                   bool
	parquetSchema, avroSchema string
}

// protoInput checks --input-format protobuf and its flags, and returns nil
// for any other input format.
func protoInput(ctx context.Context, f protoFlags) (*protoConvert, error) {
	if f.format != "protobuf" {
		if f.file != "" || f.message != "" || len(f.importPaths) > 0 {
			return nil, usagef("--proto-file, --message and --import-path are for --input-format protobuf")
		}
		return nil, nil
	}
	if f.variant || f.parquetSchema != "" || f.avroSchema != "" {
		return nil, usagef("--input-format protobuf takes its schema from --proto-file and --message: no --schema, --avro-schema or --variant")
	}
	if f.file == "" || f.message == "" {
		return nil, usagef("--input-format protobuf needs --proto-file FILE and --message NAME")
	}
	md, err := protobuf.LoadFile(ctx, f.file, f.importPaths, f.message)
	if err != nil {
		return nil, err
	}
	return &protoConvert{message: md}, nil
}

func (p *protoConvert) run(ctx context.Context, in io.Reader, out io.Writer, opts convert.Options) (convert.Stats, error) {
	opts.Schema = nil
	return convert.RunProtobuf(ctx, in, out, p.message, opts)
}
