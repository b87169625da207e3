package connector

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/table"
)

// A table's partition fields over payload columns are {field} parts of
// its files' path whose values the partition computes from each record:
// the column's value as the JSON shredder writes it, transformed as
// Iceberg defines the field's transform (table.PathField). The values
// are part of the record's path identity, so that a file holds one
// partition tuple, the one its path says and the table is given.

// setComputed records the partition fields whose values the records give,
// in the order of the template's {field} parts, and the distinct columns
// to look up in each record (two fields may share a column, as
// bucket[8](id) and truncate[100](id) do).
func (tc *tableCommitter) setComputed(fields []*table.PathField) {
	tc.computed = fields
	tc.lookupAt = make([]int, len(fields))
	for i, f := range fields {
		path := strings.Split(f.Column, ".")
		j := slices.IndexFunc(tc.lookupPaths, func(p []string) bool { return slices.Equal(p, path) })
		if j < 0 {
			j = len(tc.lookupPaths)
			tc.lookupPaths = append(tc.lookupPaths, path)
		}
		tc.lookupAt[i] = j
	}
}

// tablePartValues computes one partition's values of its table's
// computed partition fields.
type tablePartValues struct {
	tc    *tableCommitter
	convs []*rowgroup.ScalarConverter
	buf   []byte
}

func newTablePartValues(tc *tableCommitter) (*tablePartValues, error) {
	v := &tablePartValues{tc: tc}
	for _, f := range tc.computed {
		c, err := rowgroup.NewScalarConverter(f.Leaf, tc.t.s.format.jsonOpts...)
		if err != nil {
			return nil, fmt.Errorf("table %s: partition field %s: %w", tc.h.Name(), f.Name, err)
		}
		v.convs = append(v.convs, c)
	}
	return v, nil
}

// values sets vals[i], for each computed field, to its escaped path value
// for the record whose columns l looked up: the null partition when the
// column is absent or null.
func (v *tablePartValues) values(l *fieldLookup, vals []string) error {
	for i, f := range v.tc.computed {
		j := v.tc.lookupAt[i]
		var plain []byte
		if l.found[j] && l.kinds[j] != jsonscan.Null {
			var err error
			if plain, err = v.convs[i].Plain(l.kinds[j], []byte(l.vals[j])); err != nil {
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
