package connector

import (
	"context"
	"fmt"
	"slices"

	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// With a Binary format (format.Format.Binary: Avro, Protobuf), the values
// of a table's partition fields over payload columns come from each
// record's payload, read with its own schema: a format.Lookup of the
// fields' columns (the schema projected onto them) converts each value as
// the format's shredder writes the column, and the field's
// table.PathField transforms it, with the schema's column as its Leaf. A
// field that the schema lacks, or that is null, is the null partition.
// The values depend on the record's bytes and its schema alone, so that a
// replay chooses the same files.

// payloadLookup reads the values of the table's partition columns from a
// record's payload, as the format's shredder writes them.
type payloadLookup = format.Lookup

// payloadTablePart computes the values of a table's partition fields
// (its table partition) from the binary payload of records of one schema;
// pathfields.Payload (package connector/pathfields) is its counterpart
// for the object path template's {field} parts without a table.
type payloadTablePart struct {
	look   payloadLookup
	fields []table.PathField // the table's computed fields, each with the schema's column as Leaf
	at     []int             // the path of look each field reads (tablecommit.Committer.LookupAt)
	buf    []byte
}

// newSchemaTablePart compiles the partition values of records of one schema
// (an Avro writer schema, a Protobuf message type), whose Parquet schema
// the table took as fitted, with the lookup that newLookup makes of the
// partition columns (tc.LookupPaths) in that schema. An error of newLookup, or a field no
// longer in the table's spec, is an error of the schema (schemaErr); any
// other error is a failure to reach the catalog.
func newSchemaTablePart(ctx context.Context, tc *tablecommit.Committer, fitted *schema.Schema, newLookup func(paths [][]string) (payloadLookup, error)) (ap *payloadTablePart, schemaErr, err error) {
	look, schemaErr := newLookup(tc.LookupPaths())
	if schemaErr != nil {
		return nil, schemaErr, nil
	}
	spec, err := tc.SpecFields(ctx, fitted)
	if err != nil {
		return nil, nil, err
	}
	ap, schemaErr = newPayloadTablePart(tc, look, spec)
	return ap, schemaErr, nil
}

// newPayloadTablePart computes the values of the table's computed partition
// fields, of spec (the table's), with look's columns.
func newPayloadTablePart(tc *tablecommit.Committer, look payloadLookup, spec []table.PathField) (*payloadTablePart, error) {
	ap := &payloadTablePart{look: look, at: tc.LookupAt()}
	for i, c := range tc.Computed() {
		f, err := specField(spec, c.Name)
		if err != nil {
			return nil, err
		}
		f.Leaf = look.Leaf(tc.LookupAt()[i])
		ap.fields = append(ap.fields, f)
	}
	return ap, nil
}

// specField is the field of spec named name: a computed partition field
// as the table's spec has it now.
func specField(spec []table.PathField, name string) (table.PathField, error) {
	j := slices.IndexFunc(spec, func(f table.PathField) bool { return f.Name == name })
	if j < 0 {
		return table.PathField{}, fmt.Errorf("partition field %s is no longer in the table's spec", name)
	}
	return spec[j], nil
}

// values sets vals[i], for each computed field, to its escaped path value
// for the record's payload (the bytes after the wire format's header). A
// record that does not decode as far as the fields is a rejection with
// the reason the shredder would give it (decode).
func (ap *payloadTablePart) values(body []byte, vals []string) error {
	if err := ap.look.Read(body); err != nil {
		return &rejection{Reason: rejectDecode, Err: fmt.Errorf("partition fields: %w", err)}
	}
	for i := range ap.fields {
		var err error
		if ap.buf, err = ap.fields[i].AppendValue(ap.buf[:0], ap.look.Value(ap.at[i])); err != nil {
			return err
		}
		vals[i] = string(ap.buf)
	}
	return nil
}

// newFixedTablePart compiles the partition values of records of the format's
// one schema (format.Format.Fixed): the table's schema, and its partition
// fields, are known from the start.
func newFixedTablePart(tc *tablecommit.Committer, fixed *format.Schema) (*payloadTablePart, error) {
	look, err := fixed.NewLookup(tc.LookupPaths(), true)
	if err != nil {
		return nil, err
	}
	spec := make([]table.PathField, len(tc.Computed()))
	for i, f := range tc.Computed() {
		spec[i] = *f
	}
	return newPayloadTablePart(tc, look, spec)
}
