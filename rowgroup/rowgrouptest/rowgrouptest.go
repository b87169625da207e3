// Package rowgrouptest gives tests a row group of a schema and the
// builder that fills it from JSON records, the pair that pqsink convert
// and the JSON sink use. It is imported only by tests.
package rowgrouptest

import (
	"testing"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// JSON returns an empty row group of s and a builder that appends JSON
// records to it, with opts for the shredder; it fails the test when s
// cannot take JSON.
func JSON(t testing.TB, s *schema.Schema, opts ...rowgroup.JSONOption) (*rowgroup.RowGroup, *rowgroup.Builder) {
	t.Helper()
	g := rowgroup.New(s)
	sh, err := rowgroup.NewJSONShredder(g, opts...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rowgroup.NewBuilder(g, sh)
	if err != nil {
		t.Fatal(err)
	}
	return g, b
}
