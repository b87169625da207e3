package tablecommit

import (
	"context"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
)

// What a partition reads of the view it writes by.

// Name is the table's name.
func (tc *Committer) Name() string { return tc.h.Name() }

// Table is the table's handle.
func (tc *Committer) Table() *table.Handle { return tc.h }

// SpecID is the id of the partition spec the view's files follow.
func (tc *Committer) SpecID() int { return tc.specID }

// Template is the template of the view's files' keys (Path).
func (tc *Committer) Template() *archive.Template { return tc.tmpl }

// Computed are the partition fields whose values the records give, in
// the order of the template's {field} parts.
func (tc *Committer) Computed() []*table.PathField { return tc.computed }

// LookupPaths are the distinct columns the computed fields read.
func (tc *Committer) LookupPaths() [][]string { return tc.lookupPaths }

// LookupAt says, for each computed field, which of LookupPaths it reads.
func (tc *Committer) LookupAt() []int { return tc.lookupAt }

// Current is the view new files follow: the table's default spec's, or
// partition_by's. A partition that writes by another moves to it at its
// next clean point.
func (tc *Committer) Current() *Committer { return tc.cur.Load() }

// setComputed records the partition fields whose values the records give,
// in the order of the template's {field} parts, and the distinct columns
// to look up in each record (two fields may share a column, as
// bucket[8](id) and truncate[100](id) do).
func (tc *Committer) setComputed(fields []*table.PathField) {
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

// SpecFields returns the partition fields of the view's spec, without
// Leaf (the columns are each writer schema's), as the table is once it
// has taken the files' schema fitted (Fit): their source types are the
// table's then, which a value of the schema fits. Read once per schema,
// not once per partition.
func (tc *Committer) SpecFields(ctx context.Context, fitted *schema.Schema) ([]table.PathField, error) {
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

// maxSpecSchemas bounds the schemas SpecFields remembers, as the table's
// handle bounds the schemas it fitted.
const maxSpecSchemas = 256
