package test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/test/crossread"
)

// TestHostileWriterExtremes writes what once made files pqsink's own
// reader refused: one record with a list of 4.2 Mi elements (over the old
// 4 Mi-per-page cap) and one with a 30 MB string, and reads the file back
// with pqsink's reader, DuckDB, arrow-go and parquet-go. --page-rows is
// bounded.
func TestHostileWriterExtremes(t *testing.T) {
	const n = 4_200_000
	var in bytes.Buffer
	in.WriteString(`{"id":1,"l":[`)
	for i := range n {
		if i > 0 {
			in.WriteByte(',')
		}
		in.WriteString(strconv.Itoa(i % 100))
	}
	in.WriteString("]}\n")
	in.WriteString(`{"id":2,"s":"` + strings.Repeat("y", 30<<20) + `"}` + "\n")
	dir := t.TempDir()
	schemaPath := writeTemp(t, "s.schema", []byte(`message m {
  required int32 id;
  optional group l (LIST) { repeated group list { required int32 element; } }
  optional binary s (STRING);
}`))
	out := filepath.Join(dir, "out.parquet")
	r := runChild(t, nil, "convert", "--schema", schemaPath, writeTemp(t, "in.jsonl", in.Bytes()), out)
	if r.code != 0 {
		t.Fatalf("convert: exit %d: %s", r.code, r.stderr)
	}
	r = runChild(t, nil, "inspect", "rows", "--columns", "id", out)
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Fatalf("inspect: exit %d: %s", r.code, r.stderr)
	}
	r = runChild(t, nil, "inspect", "rows", "--json", out)
	if r.code != 0 || !strings.Contains(r.stdout, `,99,0,1,`) {
		t.Fatalf("inspect rows: exit %d: %.300s", r.code, r.stderr)
	}

	db := duckdb.Start(t)
	res := db.Query(t, "SELECT id, len(l), length(s) FROM read_parquet("+duckdb.Quote(out)+") ORDER BY id")
	if got := fmt.Sprint(res.Rows); len(res.Rows) != 2 || !strings.Contains(got, strconv.Itoa(n)) || !strings.Contains(got, strconv.Itoa(30<<20)) {
		t.Errorf("DuckDB: %s", got)
	}
	for name, read := range map[string]func(string) ([][]crossread.Chunk, error){"arrow-go": crossread.Arrow, "parquet-go": crossread.ParquetGo} {
		groups, err := read(out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(groups) != 1 || len(groups[0][1].Values) != n || len(groups[0][2].Values) != 1 {
			t.Errorf("%s: %d row groups", name, len(groups))
		}
	}

	r = runChild(t, nil, "convert", "--schema", schemaPath, "--page-rows", "100000000", writeTemp(t, "in2.jsonl", []byte(`{"id":1}`)), out)
	if r.code != 2 || !strings.Contains(r.stderr, "--page-rows") {
		t.Errorf("--page-rows 1e8: exit %d: %s", r.code, r.stderr)
	}
}
