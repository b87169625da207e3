package reader

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpectCSV compares the files that come with an _expect.csv with it.
// An empty CSV field is a null.
func TestExpectCSV(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(testingDir, "*_expect.csv"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no _expect.csv files: %v", err)
	}
	for _, csvPath := range paths {
		name := strings.TrimSuffix(filepath.Base(csvPath), "_expect.csv")
		t.Run(name, func(t *testing.T) {
			fh, err := os.Open(csvPath)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			want, err := csv.NewReader(fh).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(openFile(t, filepath.Join(testingDir, name+".parquet")))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want)-1 {
				t.Fatalf("%d rows, CSV has %d", len(got), len(want)-1)
			}
			for i, rec := range got {
				j := 0
				for _, v := range rec.Fields() {
					cell := want[i+1][j]
					var s string
					switch {
					case v.IsNull():
						s = ""
					case v.Kind() == KindBytes:
						s = string(v.Bytes())
					default:
						s = string(v.AppendJSON(nil))
					}
					if s != cell {
						t.Fatalf("row %d, column %s: %q, CSV has %q", i, want[0][j], s, cell)
					}
					j++
				}
			}
		})
	}
}

// TestLZ4Files checks the LZ4 files DuckDB cannot read against their
// LZ4_RAW twins, which hold the same rows (parquet-testing README) and
// which TestAgainstDuckDB compares with DuckDB.
func TestLZ4Files(t *testing.T) {
	for _, tc := range []struct{ lz4, raw string }{
		{"hadoop_lz4_compressed.parquet", "lz4_raw_compressed.parquet"},
		{"non_hadoop_lz4_compressed.parquet", "lz4_raw_compressed.parquet"},
		{"hadoop_lz4_compressed_larger.parquet", "lz4_raw_compressed_larger.parquet"},
	} {
		t.Run(tc.lz4, func(t *testing.T) {
			got := jsonLines(t, filepath.Join(testingDir, tc.lz4))
			want := jsonLines(t, filepath.Join(testingDir, tc.raw))
			if len(got) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("rows differ from %s:\n got %.300q\nwant %.300q", tc.raw, got, want)
			}
		})
	}
	// A fact checked by hand with parquet-cli: the first row.
	got := jsonLines(t, filepath.Join(testingDir, "hadoop_lz4_compressed.parquet"))
	if want := `{"c0":1593604800,"c1":"YWJj","v11":42}`; got[0] != want {
		t.Errorf("first row %s, want %s", got[0], want)
	}
}

// jsonLines reads a file's rows as JSON lines, checking that each is valid
// JSON.
func jsonLines(t *testing.T, path string) []string {
	t.Helper()
	recs, err := readAll(openFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		b := r.AppendJSON(nil)
		if !json.Valid(b) {
			t.Fatalf("row %d: invalid JSON %s", i, b)
		}
		out[i] = string(b)
	}
	return out
}
