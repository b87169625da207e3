package connector

import (
	"context"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/rowgroup/protorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// With format.type protobuf, the values of a table's partition fields over
// payload columns come from each record's message, decoded with its own
// message type (format.message, or the one its schema id and indexes name
// in the registry) by a protorow.Lookup: as the Protobuf shredder writes
// the columns, so a proto3 field without presence that a message omits
// has its default value, as in the file, and a field the type lacks is
// the null partition. With table.timestamp_precision micros, a
// Timestamp's value is the microseconds its column holds.

// payloadLookups reports whether the format reads a table's partition
// values from each record's binary payload with its shredder's decoder
// (Avro, Protobuf) rather than from its JSON text.
func (f *format) payloadLookups() bool {
	return f.registry != nil || f.protoRegistry != nil || f.protoMessage != nil
}

// newProtoPart compiles the partition values of records of message type
// md, whose Parquet schema the table took as fitted (the registry's
// schemas). A type whose partition columns are not values (a message, a
// repeated field) is an error of the schema (schemaErr); any other error
// is a failure to reach the catalog.
func (tc *tableCommitter) newProtoPart(ctx context.Context, md protoreflect.MessageDescriptor, fitted *schema.Schema) (ap *payloadPart, schemaErr, err error) {
	return tc.newSchemaPart(ctx, fitted, func(paths [][]string) (payloadLookup, error) {
		return protorow.NewLookup(md, paths, tc.t.s.format.lookupOptions()...)
	})
}

// newFixedProtoPart compiles the partition values of records of
// format.message, the files' one type (format.proto_file): the table's
// schema, and its partition fields, are known from the start.
func (tc *tableCommitter) newFixedProtoPart(md protoreflect.MessageDescriptor) (*payloadPart, error) {
	look, err := protorow.NewLookup(md, tc.lookupPaths, tc.t.s.format.lookupOptions()...)
	if err != nil {
		return nil, err
	}
	spec := make([]table.PathField, len(tc.computed))
	for i, f := range tc.computed {
		spec[i] = *f
	}
	return tc.newPayloadPart(look, spec)
}
