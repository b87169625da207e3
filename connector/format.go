package connector

import (
	"context"
	"fmt"

	"github.com/pqsink/pqsink/connector/pathfields"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup"
)

// The sink names no format: it opens the one format.type names from its
// registry (format/all by default), and each partition asks the format
// for its format.Decoder. What the sink computes of a record's schema (its
// path and table partition values) is compiled once per schema, when the
// format learns it (schemaCompiler), and kept in format.Schema.Values.

// maxSpares bounds the idle file buffers a partition keeps: with several
// schemas, buffers of another schema cannot be reused.
const maxSpares = 4

// schemaValues is what a partition compiled for the records of one schema
// that the format learned from them: how to compute a record's table
// partition values, or the object path's {field} values without a table.
type schemaValues struct {
	// tablePart computes the values of the table's partition fields over
	// payload columns from the record's binary payload (a Binary
	// format); nil without them.
	tablePart *payloadTablePart
	// tableVals computes them from the record's JSON text, with the
	// schema's columns; nil without them.
	tableVals *tablePartValues
	// pathFields computes the object path's {field} values and
	// time_field from the record's binary payload, without a table (a
	// Binary format); nil without them.
	pathFields *pathfields.Payload
}

// schemaCompiler compiles a partition's schemaValues: for a table's
// partition fields over payload columns (table), or the object path's
// {field} parts and time_field without a table (pathFields).
type schemaCompiler struct {
	table      *tablecommit.Committer
	textOpts   []rowgroup.JSONOption // the format's, with table
	pathFields *pathfields.Spec
}

// compile is format.Partition.Compile.
func (c schemaCompiler) compile(ctx context.Context, s *format.Schema) (schemaErr, err error) {
	v := &schemaValues{}
	if tc := c.table; tc != nil {
		if s.NewLookup != nil {
			part, schemaErr, err := newSchemaTablePart(ctx, tc, s.Parquet, func(paths [][]string) (payloadLookup, error) {
				return s.NewLookup(paths, true)
			})
			switch {
			case schemaErr != nil:
				return fmt.Errorf("partition fields: %w", schemaErr), nil
			case err != nil:
				return nil, err
			}
			v.tablePart = part
		} else {
			spec, err := tc.SpecFields(ctx, s.Parquet)
			if err != nil {
				return nil, err
			}
			if v.tableVals, err = newSchemaPartValues(tc, c.textOpts, spec, s.Parquet); err != nil {
				return err, nil
			}
		}
	}
	if c.pathFields != nil {
		var err error
		if v.pathFields, err = c.pathFields.Lookup(s); err != nil {
			return err, nil
		}
	}
	s.Values = v
	return nil, nil
}

// buffers takes idle buffers that the format says a file whose first
// record is d can reuse, or makes them.
func (p *partition) buffers(d format.Decoded) (*fileBuffers, error) {
	key := p.dec.BuffersKey(d)
	sp := p.spare
	for i := len(sp) - 1; i >= 0; i-- {
		if fb := sp[i]; fb.key == key {
			p.spare = append(sp[:i], sp[i+1:]...)
			return fb, nil
		}
	}
	if n := len(sp); n >= maxSpares {
		// Buffers of other schemas: let the oldest go.
		p.spare = append(sp[:0], sp[n-maxSpares+1:]...)
	}
	b, err := p.dec.NewBuffers(d)
	if err != nil {
		return nil, err
	}
	return &fileBuffers{Buffers: b, key: key}, nil
}
