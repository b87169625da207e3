package connector

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/pathfields"
)

// TestTablePartValues: a partition computes the path values of its
// table's partition fields over payload columns from each record's JSON:
// iceberg-go's transform of the value, the null partition for an absent
// or null field, a marker for an empty string, escaping, and an error for
// a value the column does not take. Two fields over one column read it
// once.
func TestTablePartValues(t *testing.T) {
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "s.schema")
	if err := os.WriteFile(schemaPath, []byte("message m { required int64 n; optional binary p (STRING); }"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`kafka: {brokers: [127.0.0.1:1], group: g, topics: [t]}
store: {url: "file://%s/warehouse"}
format: {type: json, schema_file: %s}
table:
  format: iceberg
  catalog: {type: sql, uri: "sqlite://%s/catalog.db"}
  namespace: kafka
  partition_by: ["bucket[4](n)", "truncate[2](p)", "truncate[10](n)"]
`, dir, schemaPath, dir)
	cfg, err := config.Parse([]byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tc, err := s.tables.ForTopic(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if want := "kafka/t/data/n_bucket={field:n}/p_trunc={field:p}/n_trunc={field:n}/{topic}+{partition}+{first_offset}.parquet"; tc.Template().String() != want {
		t.Errorf("path %s, want %s", tc.Template(), want)
	}
	if len(tc.LookupPaths()) != 2 {
		t.Errorf("the records' columns read: %v, want n and p", tc.LookupPaths())
	}
	v, err := newTablePartValues(tc, s.format.TextOptions())
	if err != nil {
		t.Fatal(err)
	}
	bucket := func(n int64) string {
		return fmt.Sprint(iceberg.BucketTransform{NumBuckets: 4}.Apply(iceberg.Optional[iceberg.Literal]{Val: iceberg.NewLiteral(n), Valid: true}).Val.Any())
	}
	l := pathfields.NewJSON(tc.LookupPaths())
	for _, c := range []struct {
		doc  string
		want []string // nil: an error
	}{
		{`{"n":5,"p":"abc"}`, []string{bucket(5), "ab", "0"}},
		{`{"n":-17,"p":"é€x"}`, []string{bucket(-17), "é€", "-20"}},
		{`{"n":123456789012,"p":"a/b"}`, []string{bucket(123456789012), "a%2F", "123456789010"}},
		{`{"n":7}`, []string{bucket(7), archive.HiveNull, "0"}},
		{`{"n":7,"p":null}`, []string{bucket(7), archive.HiveNull, "0"}},
		{`{"p":"",  "n":8}`, []string{bucket(8), "", "0"}},
		{`{"n":"8","p":"a"}`, nil},
		{`{"n":8.5,"p":"a"}`, nil},
		{`{"n":8,"p":3}`, nil},
	} {
		t.Run(c.doc, func(t *testing.T) {
			if err := l.Lookup([]byte(c.doc)); err != nil {
				t.Fatal(err)
			}
			vals := make([]string, len(tc.Computed()))
			err := v.values(l, vals)
			switch {
			case c.want == nil && err == nil:
				t.Errorf("values %q, want an error", vals)
			case c.want != nil && (err != nil || strings.Join(vals, "|") != strings.Join(c.want, "|")):
				t.Errorf("values %q (%v), want %q", vals, err, c.want)
			}
		})
	}
}
