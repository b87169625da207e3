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

// protobufInput is --input-format protobuf: length-delimited messages of
// --message in --proto-file.
var protobufInput = inputKind{
	formats: []string{"protobuf"},
	ownFlags: func(f inputFlags) bool {
		return f.protoFile != "" || f.message != "" || len(f.importPaths) > 0
	},
	ownFlagsErr: "--proto-file, --message and --import-path are for --input-format protobuf",
	open:        protoInput,
}

// protoInput checks the flags of --input-format protobuf and loads the
// message type.
func protoInput(ctx context.Context, f inputFlags) (convertInput, error) {
	if f.variant || f.parquetSchema != "" || f.avroSchema != "" {
		return nil, usagef("--input-format protobuf takes its schema from --proto-file and --message: no --schema, --avro-schema or --variant")
	}
	if f.protoFile == "" || f.message == "" {
		return nil, usagef("--input-format protobuf needs --proto-file FILE and --message NAME")
	}
	md, err := protobuf.LoadFile(ctx, f.protoFile, f.importPaths, f.message)
	if err != nil {
		return nil, err
	}
	return &protoConvert{message: md}, nil
}

func (p *protoConvert) run(ctx context.Context, in io.Reader, out io.Writer, opts convert.Options) (convert.Stats, error) {
	opts.Schema = nil
	return convert.RunProtobuf(ctx, in, out, p.message, opts)
}
