package connector

import (
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/connector/pathfields"
	"github.com/pqsink/pqsink/connector/tablecommit"
	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// A table's partition fields over payload columns are {field} parts of
// its files' path (tablecommit.Path) whose values the partition computes
// from each record:
// the column's value as the JSON shredder writes it, transformed as
// Iceberg defines the field's transform (table.PathField). The values
// are part of the record's path identity, so that a file holds one
// partition tuple, the one its path says and the table is given.

// tablePartValues computes one partition's values of its table's
// computed partition fields, from a record's JSON.
type tablePartValues struct {
	at     []int              // which looked-up column each field reads (tablecommit.Committer.LookupAt)
	fields []*table.PathField // the view's computed fields, or a schema's copies of them
	convs  []*rowgroup.ScalarConverter
	buf    []byte
}

// newTablePartValues computes the values of the partition fields of the
// view tc from records read with the text options opts.
func newTablePartValues(tc *tablecommit.Committer, opts []rowgroup.JSONOption) (*tablePartValues, error) {
	v := &tablePartValues{at: tc.LookupAt(), fields: tc.Computed()}
	for _, f := range tc.Computed() {
		c, err := rowgroup.NewScalarConverter(f.Leaf, opts...)
		if err != nil {
			return nil, fmt.Errorf("table %s: partition field %s: %w", tc.Name(), f.Name, err)
		}
		v.convs = append(v.convs, c)
	}
	return v, nil
}

// newSchemaPartValues computes the values of the view's computed
// partition fields for records of one JSON Schema from a registry, whose
// Parquet schema the table took as fitted: each field is the table's
// (spec, read once the table has taken the schema) on fitted's column;
// opts are the text options the records are read with. A
// column that fitted lacks (a property the schema does not declare) is
// the null partition, as in its files; one that is not a scalar is an
// error of the schema.
func newSchemaPartValues(tc *tablecommit.Committer, opts []rowgroup.JSONOption, spec []table.PathField, fitted *schema.Schema) (*tablePartValues, error) {
	v := &tablePartValues{at: tc.LookupAt()}
	for _, c := range tc.Computed() {
		f, err := specField(spec, c.Name)
		if err != nil {
			return nil, err
		}
		f.Leaf = fitted.Lookup(strings.Split(c.Column, ".")...)
		var conv *rowgroup.ScalarConverter
		if f.Leaf != nil {
			if !f.Leaf.IsLeaf() || f.Leaf.MaxRep > 0 {
				return nil, fmt.Errorf("partition field %s: column %s is not a value outside lists and maps", f.Name, c.Column)
			}
			if conv, err = rowgroup.NewScalarConverter(f.Leaf, opts...); err != nil {
				return nil, fmt.Errorf("partition field %s: %w", f.Name, err)
			}
		}
		v.fields = append(v.fields, &f)
		v.convs = append(v.convs, conv)
	}
	return v, nil
}

// values sets vals[i], for each computed field, to its escaped path value
// for the record whose columns l looked up: the null partition when the
// column is absent or null, or not a column of the record's schema.
func (v *tablePartValues) values(l *pathfields.JSON, vals []string) error {
	for i, f := range v.fields {
		j := v.at[i]
		var plain []byte
		if l.Found(j) && l.Kind(j) != jsonscan.Null && v.convs[i] != nil {
			var err error
			if plain, err = v.convs[i].Plain(l.Kind(j), []byte(l.Value(j))); err != nil {
				return fmt.Errorf("partition field %s: %w", f.Name, err)
			}
		}
		var err error
		if v.buf, err = f.AppendValue(v.buf[:0], plain); err != nil {
			return err
		}
		vals[i] = string(v.buf)
	}
	return nil
}
