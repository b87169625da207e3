package test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	pqreader "github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/variant"
	"github.com/pqsink/pqsink/writer"
)

// variantCase is one way of writing the corpus.
type variantCase struct {
	name  string
	shape func(t *testing.T) *variant.Shape
	// wantLeaves are typed_value columns the file must have, proving that
	// the case really shreds where it should.
	wantLeaves []string
	opts       []writer.Option
}

func variantCases() []variantCase {
	forced := func(t *testing.T) *variant.Shape {
		s, err := variant.ParseShapePaths(variantForcedShape)
		if err != nil {
			t.Fatal(err)
		}
		return &s
	}
	return []variantCase{
		{name: "unshredded", shape: func(*testing.T) *variant.Shape { return &variant.Shape{} }},
		{name: "auto", shape: func(*testing.T) *variant.Shape { return nil }, wantLeaves: []string{
			"payload.typed_value.id.typed_value",
			"payload.typed_value.price.typed_value",
			"payload.typed_value.user.typed_value.geo.typed_value.lat.typed_value",
			"payload.typed_value.user.typed_value.tags.typed_value.list.element.typed_value",
			"payload.typed_value.items.typed_value.list.element.typed_value.sku.typed_value",
		}},
		{name: "forced", shape: forced, wantLeaves: []string{
			"payload.typed_value.deep.typed_value.list.element.typed_value.list.element.typed_value",
			"payload.typed_value.nest.typed_value.d.typed_value.d.typed_value.d.typed_value",
			"payload.typed_value.missing.typed_value.field.typed_value",
		}},
		{name: "forced-v2-small-rowgroups", shape: forced, opts: []writer.Option{writer.DataPageVersion(2), writer.PageRowLimit(7)}},
	}
}

// writeVariantFile converts lines with convert.RunVariant.
func writeVariantFile(t *testing.T, dir string, c variantCase, lines []string) string {
	t.Helper()
	path := filepath.Join(dir, c.name+".parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := convert.VariantOptions{Shape: c.shape(t)}
	opts.Writer = c.opts
	if strings.Contains(c.name, "small-rowgroups") {
		opts.RowGroupSize = 4 << 10
	}
	var verbose bytes.Buffer
	opts.Verbose = &verbose
	st, err := convert.RunVariant(context.Background(), strings.NewReader(strings.Join(lines, "\n")+"\n"), f, opts)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	if st.Rows != int64(len(lines)) {
		t.Fatalf("%s: %d rows written, want %d", c.name, st.Rows, len(lines))
	}
	if strings.Contains(c.name, "small-rowgroups") && st.RowGroups < 3 {
		t.Fatalf("%s: %d row groups, want several", c.name, st.RowGroups)
	}
	have := map[string]bool{}
	for _, l := range st.Metadata.Schema {
		have[l.Name] = true
	}
	s := verbose.String()
	for _, leaf := range c.wantLeaves {
		// The printed schema names every group on the path.
		parts := strings.Split(leaf, ".")
		for _, p := range parts {
			if !have[p] {
				t.Errorf("%s: schema lacks %q (for %s):\n%s", c.name, p, leaf, s)
			}
		}
	}
	t.Logf("%s: %d rows, %d row groups, %d bytes\n%s", c.name, st.Rows, st.RowGroups, st.OutBytes, firstLines(s, 3))
	return path
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], "\n")
}

// TestVariantConvertReaders writes the corpus unshredded, with inferred
// shredding and with a forced shape, and reads every file back with
// DuckDB (payload::JSON), arrow-go's pqarrow (its VARIANT extension
// array, shredded columns included) and pqsink's own reader; each must
// give back, line by line, JSON equal to the input.
func TestVariantConvertReaders(t *testing.T) {
	lines := variantCorpus()
	dir := t.TempDir()
	db := duckdb.Start(t)
	for _, c := range variantCases() {
		t.Run(c.name, func(t *testing.T) {
			path := writeVariantFile(t, dir, c, lines)
			if c.name != "unshredded" {
				checkLeafPaths(t, path, c.wantLeaves)
			}
			t.Run("duckdb", func(t *testing.T) {
				res := db.Query(t, "SELECT payload::JSON::VARCHAR AS j FROM read_parquet("+duckdb.Quote(path)+", file_row_number = true) ORDER BY file_row_number")
				got := make([][]byte, len(res.Rows))
				for i, row := range res.Rows {
					s, _ := row[0].(string)
					got[i] = fixDuckJSON([]byte(s))
				}
				compareVariantLines(t, lines, got)
			})
			t.Run("arrow-go", func(t *testing.T) {
				compareVariantLines(t, lines, readVariantArrow(t, path))
			})
			t.Run("pqsink-reader", func(t *testing.T) {
				compareVariantLines(t, lines, readVariantPqsink(t, path))
			})
		})
	}
}

func compareVariantLines(t *testing.T, want []string, got [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	bad := 0
	for i := range want {
		ok, err := jsonEqual([]byte(want[i]), got[i])
		if err != nil || !ok {
			bad++
			if bad <= 5 {
				t.Errorf("row %d differs (%v):\n got %.400s\nwant %.400s", i, err, got[i], want[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d rows differ in all", bad)
	}
}

func readVariantArrow(t *testing.T, path string) [][]byte {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go read: %v", err)
	}
	defer tbl.Release()
	var out [][]byte
	for _, chunk := range tbl.Column(0).Data().Chunks() {
		va, ok := chunk.(*extensions.VariantArray)
		if !ok {
			t.Fatalf("arrow-go reads payload as %T (%v), not a VARIANT array", chunk, chunk.DataType())
		}
		for i := 0; i < va.Len(); i++ {
			v, err := va.Value(i)
			if err != nil {
				t.Fatalf("arrow-go row %d: %v", len(out), err)
			}
			// arrow-go rebuilds the Variant (shredded columns included);
			// its bytes are rendered by pqsink's renderer, because
			// arrow-go's MarshalJSON (v18.8.0) prints empty arrays as
			// null and mangles decimal16 values.
			b, err := variant.AppendJSON(nil, v.Metadata().Bytes(), v.Bytes())
			if err != nil {
				t.Fatalf("arrow-go row %d: %v", len(out), err)
			}
			out = append(out, b)
		}
	}
	return out
}

func readVariantPqsink(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pqreader.Open(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := f.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for {
		rec, err := rows.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("pqsink reader row %d: %v", len(out), err)
		}
		pv, ok := rec.Field("payload")
		if !ok {
			t.Fatalf("pqsink reader row %d: no payload", len(out))
		}
		v, err := pv.Variant()
		if err != nil {
			t.Fatalf("pqsink reader row %d: %v", len(out), err)
		}
		b, err := v.AppendJSON(nil)
		if err != nil {
			t.Fatalf("pqsink reader row %d: %v", len(out), err)
		}
		out = append(out, b)
	}
	return out
}

// checkLeafPaths checks that the file's leaf columns include want.
func checkLeafPaths(t *testing.T, path string, want []string) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	have := map[string]bool{}
	sc := rdr.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		have[sc.Column(i).Path()] = true
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("no column %s; columns: %s", w, fmt.Sprint(sortedKeys(have)))
		}
	}
}
