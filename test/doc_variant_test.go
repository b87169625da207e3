package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
)

// docSQL returns the statements of the sql block in the section of a
// document under heading.
func docSQL(t *testing.T, doc, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(t), doc))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", doc, heading)
	}
	m := regexp.MustCompile("(?s)```sql\n(.*?)```").FindStringSubmatch(text[i:])
	if m == nil {
		t.Fatalf("%s: no sql block under %q", doc, heading)
	}
	var code []string // the block without its comment lines
	for _, l := range strings.Split(m[1], "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "--") {
			code = append(code, l)
		}
	}
	var stmts []string
	for _, s := range strings.Split(strings.Join(code, "\n"), ";") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	return stmts
}

// TestDocVariantQueries runs the DuckDB queries of docs/variant.md on the
// files of `pqsink demo --format variant`, as a reader of the page would,
// and checks what the page says of DuckDB 1.5 and unshredded decimals
// below 1 on a file written without shredding.
func TestDocVariantQueries(t *testing.T) {
	const records = 2000
	dir := t.TempDir()
	demo := exec.Command(pqsinkBinary(t), "demo", "--records", "2000", "--format", "variant", "--dir", "pqsink-demo")
	demo.Dir = dir
	if out, err := demo.CombinedOutput(); err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	db := duckdb.Start(t)

	stmts := docSQL(t, "docs/variant.md", "## Querying with DuckDB")
	if len(stmts) != 4 {
		t.Fatalf("docs/variant.md has %d DuckDB statements, the test knows 4:\n%s", len(stmts), strings.Join(stmts, "\n\n"))
	}
	results := make([]*duckdb.Result, len(stmts))
	for i, sql := range stmts {
		sql = strings.ReplaceAll(sql, "'pqsink-demo/", "'"+filepath.ToSlash(dir)+"/pqsink-demo/")
		res, err := db.Run(sql)
		if err != nil {
			t.Fatalf("%s\n: %v", sql, err)
		}
		results[i] = res
	}

	// Grouped by country: one row per country, all records counted.
	var total int64
	for _, row := range results[0].Rows {
		n, err := strconv.ParseInt(fmt.Sprint(row[1]), 10, 64) // a BIGINT comes as a string
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if len(results[0].Rows) > 30 || total != records {
		t.Errorf("by country: %d groups of %d records, want at most 30 of %d", len(results[0].Rows), total, records)
	}
	if len(results[1].Rows) == 0 || len(results[1].Rows) > 30 {
		t.Errorf("revenue by country: %d rows", len(results[1].Rows))
	}
	if got := results[2].Rows; len(got) != 1 || got[0][0] != "DECIMAL(9, 2)" {
		t.Errorf("variant_typeof(payload.amount): %v", got)
	}
	if len(results[3].Rows) != 5 {
		t.Errorf("as JSON: %d rows, want 5", len(results[3].Rows))
	}
	rc := results[3].Column("record")
	if rc < 0 {
		t.Fatalf("the JSON query has no column record (columns %q)", results[3].Columns)
	}
	for _, row := range results[3].Rows {
		s, _ := row[rc].(string)
		var rec struct {
			ID      *int64 `json:"id"`
			Country string
			Payload struct{ Nested struct{ Score *float64 } }
		}
		if err := json.Unmarshal([]byte(s), &rec); err != nil || rec.ID == nil || rec.Country == "" || rec.Payload.Nested.Score == nil {
			t.Errorf("record %q: %v", s, err)
		}
	}

	// What the page says of payload::JSON: an unshredded decimal below 1
	// loses its leading zero, DuckDB's JSON functions then refuse the
	// text, and casts give the value.
	in := filepath.Join(dir, "small.jsonl")
	if err := os.WriteFile(in, []byte(`{"score":0.857,"n":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small.parquet")
	if out, err := exec.Command(pqsinkBinary(t), "convert", "--quiet", "--variant", "--shred", "none", in, small).CombinedOutput(); err != nil {
		t.Fatalf("convert: %v\n%s", err, out)
	}
	from := " FROM read_parquet(" + duckdb.Quote(small) + ")"
	res := db.Query(t, "SELECT payload::JSON::VARCHAR AS j, payload.score::DOUBLE AS d, payload.score::DECIMAL(4,3)::VARCHAR AS dec, to_json(payload::STRUCT(score DOUBLE, n BIGINT))::VARCHAR AS s"+from)
	for col, want := range map[string]any{"j": `{"n":1,"score":.857}`, "dec": "0.857", "s": `{"score":0.857,"n":1}`} {
		if got := res.Value(0, col); got != want {
			t.Errorf("%s: %v, want %v", col, got, want)
		}
	}
	if d, err := duckdb.Float(res.Value(0, "d")); err != nil || d != 0.857 {
		t.Errorf("payload.score::DOUBLE: %v (%v), want 0.857", res.Value(0, "d"), err)
	}
	if _, err := db.Run("SELECT payload::JSON->>'score'" + from); err == nil || !strings.Contains(err.Error(), "Malformed JSON") {
		t.Errorf("payload::JSON->>'score': %v, want DuckDB's Malformed JSON", err)
	}
}
