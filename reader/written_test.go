package reader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
)

// writtenSQL is a table with a column of every type DuckDB writes to
// Parquet, nulls, nesting and a Variant that DuckDB shreds.
const writtenSQL = `SELECT
  i::INTEGER AS i, (i * 1000000007)::BIGINT AS big, (i % 256)::UTINYINT AS u8, (i * 3)::UBIGINT AS u64,
  (i / 3)::DOUBLE AS d, (i / 7)::FLOAT AS f, CASE WHEN i % 3 = 0 THEN NULL ELSE 'str' || i END AS s,
  (i * 1.25)::DECIMAL(9,2) AS dec9, (i * 12345.678)::DECIMAL(18,3) AS dec18, (i * 1e10 + 0.5)::DECIMAL(38,4) AS dec38,
  DATE '2024-01-01' + i::INTEGER AS dt, TIMESTAMP '2024-01-01 00:00:00.123456' + INTERVAL (i) SECOND AS ts,
  TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i) MINUTE AS tstz, TIMESTAMP_NS '2024-01-01 00:00:00.123456789' AS tsns,
  TIME '01:02:03.5' + INTERVAL (i) SECOND AS tm, ('00000000-0000-0000-0000-' || lpad(i::VARCHAR, 12, '0'))::UUID AS id,
  INTERVAL (i) DAY + INTERVAL (i % 5) MONTH AS iv, ('\xAA\x00' || i::VARCHAR)::BLOB AS blob, i % 2 = 0 AS flag,
  CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, i + 1] END AS l, {'a': i, 'b': ['s' || i, NULL]} AS st,
  MAP {i: 's' || i, i + 1: NULL} AS m, [{'x': i}, NULL] AS los,
  CASE WHEN i % 5 = 0 THEN i::VARIANT ELSE ('{"k":' || i || ',"t":"x","arr":[1,' || i || ']}')::JSON::VARIANT END AS v
FROM range(0, 2500) t(i)`

// TestDuckDBWrittenFiles has DuckDB write the table with every codec and
// both page versions, and compares our rows with DuckDB's.
func TestDuckDBWrittenFiles(t *testing.T) {
	db := duckdb.Start(t)
	dir := t.TempDir()
	for _, codec := range []string{"uncompressed", "snappy", "gzip", "zstd", "brotli", "lz4_raw"} {
		for _, version := range []string{"V1", "V2"} {
			name := codec + "-" + version
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(dir, name+".parquet")
				db.Query(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, COMPRESSION %s, PARQUET_VERSION %s, ROW_GROUP_SIZE 1000)",
					writtenSQL, duckdb.Quote(path), codec, version))
				want := db.ReadParquet(t, path)
				f := openFile(t, path)
				if f.NumRowGroups() < 2 {
					t.Errorf("%d row groups; the test wants several", f.NumRowGroups())
				}
				got, err := readAll(f)
				if err != nil {
					t.Fatal(err)
				}
				compareWithDuckDB(t, got, want)
			})
		}
	}
}

// sameVariant compares a Variant's JSON with DuckDB's rendering of it.
func sameVariant(v Value, d any) error {
	var ours any
	dec := json.NewDecoder(bytes.NewReader(v.AppendJSON(nil)))
	dec.UseNumber()
	if err := dec.Decode(&ours); err != nil {
		return err
	}
	if a, b := canonical(ours), canonical(d); a != b {
		return fmt.Errorf("variant %s vs %s", a, b)
	}
	return nil
}

// canonical renders decoded JSON with sorted keys, and numbers as strings
// of their text, since the DuckDB harness writes 64-bit integers as strings.
func canonical(x any) string {
	b, _ := json.Marshal(numbersAsStrings(x))
	return string(b)
}

func numbersAsStrings(x any) any {
	switch x := x.(type) {
	case json.Number:
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = numbersAsStrings(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = numbersAsStrings(e)
		}
		return out
	}
	return x
}
