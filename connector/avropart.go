package connector

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/table"
)

// With format.type avro, the values of a table's partition fields over
// payload columns come from each record's Avro binary, read with its own
// writer schema: an avrorow.Lookup of the fields' columns (the writer
// schema projected onto them) converts each value as the Avro shredder
// writes the column, and the field's table.PathField transforms it, with
// the writer schema's column as its Leaf. A field that the writer schema
// lacks, or that is null, is the null partition. The values depend on the
// record's bytes and its schema id alone, so that a replay chooses the
// same files. Protobuf does the same with a protorow.Lookup of the
// record's message type (protopart.go).

// payloadLookup reads the values of the table's partition columns from a
// record's payload, as the format's shredder writes them:
// avrorow.Lookup, protorow.Lookup.
type payloadLookup interface {
	Read(body []byte) error
	Value(i int) []byte
	Leaf(i int) *schema.Node
}

// payloadPart computes the partition values of records of one schema.
type payloadPart struct {
	look   payloadLookup
	fields []table.PathField // the table's computed fields, each with the schema's column as Leaf
	at     []int             // the path of look each field reads (tableCommitter.lookupAt)
	buf    []byte
}

// specFields returns the partition fields of the view's spec, without
// Leaf (the columns are each writer schema's), as the table is once it
// has taken the files' schema fitted (Fit): their source types are the
// table's then, which a value of the schema fits. Read once per schema,
// not once per partition.
func (tc *tableCommitter) specFields(ctx context.Context, fitted *schema.Schema) ([]table.PathField, error) {
	key := fitted.String()
	tc.specMu.Lock()
	defer tc.specMu.Unlock()
	if f, ok := tc.spec[key]; ok {
		return f, nil
	}
	spec, err := tc.h.PathSpec(ctx, tc.specID)
	if err != nil {
		return nil, err
	}
	fields := spec.Fields
	if tc.spec == nil || len(tc.spec) >= maxSpecSchemas {
		tc.spec = map[string][]table.PathField{}
	}
	tc.spec[key] = fields
	return fields, nil
}

// maxSpecSchemas bounds the schemas specFields remembers, as the table's
// handle bounds the schemas it fitted.
const maxSpecSchemas = 256

// newAvroPart compiles the partition values of records of writer schema
// w, whose Parquet schema the table took as fitted. A schema whose partition
// columns are not values (a record, a list, a union of several types)
// is an error of the schema (schemaErr); any other error is a failure to
// reach the catalog.
func (tc *tableCommitter) newAvroPart(ctx context.Context, w *avro.Schema, fitted *schema.Schema) (ap *payloadPart, schemaErr, err error) {
	return tc.newSchemaPart(ctx, fitted, func(paths [][]string) (payloadLookup, error) {
		return avrorow.NewLookup(w, paths, tc.t.s.format.avroLookupOptions()...)
	})
}

// newSchemaPart compiles the partition values of records of one schema
// (an Avro writer schema, a Protobuf message type), whose Parquet schema
// the table took as fitted, with the lookup that newLookup makes of the
// partition columns (tc.lookupPaths) in that schema. An error of newLookup, or a field no
// longer in the table's spec, is an error of the schema (schemaErr); any
// other error is a failure to reach the catalog.
func (tc *tableCommitter) newSchemaPart(ctx context.Context, fitted *schema.Schema, newLookup func(paths [][]string) (payloadLookup, error)) (ap *payloadPart, schemaErr, err error) {
	look, schemaErr := newLookup(tc.lookupPaths)
	if schemaErr != nil {
		return nil, schemaErr, nil
	}
	spec, err := tc.specFields(ctx, fitted)
	if err != nil {
		return nil, nil, err
	}
	ap, schemaErr = tc.newPayloadPart(look, spec)
	return ap, schemaErr, nil
}

// newPayloadPart computes the values of the table's computed partition
// fields, of spec (the table's), with look's columns.
func (tc *tableCommitter) newPayloadPart(look payloadLookup, spec []table.PathField) (*payloadPart, error) {
	ap := &payloadPart{look: look, at: tc.lookupAt}
	for i, c := range tc.computed {
		f, err := specField(spec, c.Name)
		if err != nil {
			return nil, err
		}
		f.Leaf = look.Leaf(tc.lookupAt[i])
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
func (ap *payloadPart) values(body []byte, vals []string) error {
	if err := ap.look.Read(body); err != nil {
		return &rejection{rejectDecode, fmt.Errorf("partition fields: %w", err)}
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

// keepsPaths reports whether records written with w, read as r by Avro's
// resolution rules (a file's reader schema under schema_compatibility:
// backward), keep the values of the fields at paths: the partition of a
// record follows its writer schema, and its file's columns must hold the
// values its path says. A field that r adds with a default other than
// null, that r renames with an alias, or an enum whose symbols r lacks
// some of (read as r's default symbol), would change them.
func keepsPaths(w, r *avro.Type, paths [][]string) bool {
	for _, p := range paths {
		if !keepsPath(w, r, p) {
			return false
		}
	}
	return true
}

func keepsPath(w, r *avro.Type, p []string) bool {
	w, r = nonNull(w), nonNull(r)
	if len(p) == 0 {
		if w.Kind == avro.Enum && r.Kind == avro.Enum {
			for _, s := range w.Symbols {
				if !slices.Contains(r.Symbols, s) {
					return false
				}
			}
		}
		return true
	}
	if w.Kind != avro.Record || r.Kind != avro.Record {
		return w.Kind == r.Kind
	}
	wf, rf := recordField(w, p[0]), recordField(r, p[0])
	switch {
	case wf == nil && rf == nil:
		return true
	case rf == nil:
		return false
	case wf == nil:
		for _, a := range rf.Aliases {
			if recordField(w, a) != nil {
				return false
			}
		}
		return bytes.Equal(bytes.TrimSpace(rf.Default), []byte("null"))
	}
	return keepsPath(wf.Type, rf.Type, p[1:])
}

// nonNull is the type of t's values that are not null: t's other branch
// when t is a union of null and one type.
func nonNull(t *avro.Type) *avro.Type {
	if i, ok := t.Nullable(); ok && len(t.Branches) == 2 {
		return t.Branches[1-i]
	}
	return t
}

func recordField(t *avro.Type, name string) *avro.Field {
	for _, f := range t.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}
