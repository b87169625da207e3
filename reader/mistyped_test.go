package reader

import (
	"path/filepath"
	"testing"
)

// TestMetaSkipsMistypedField: dict-page-offset-zero.parquet (parquet-mr 1.12.0, Impala build) has a list
// in ColumnMetaData field 15, which today's parquet.thrift declares as
// bloom_filter_length (i32). Thrift readers (Apache Thrift's generated code,
// parquet-java, Arrow, DuckDB) skip a field whose wire type is not the
// declared one, and so does package meta.
func TestMetaSkipsMistypedField(t *testing.T) {
	f := openFile(t, filepath.Join(testingDir, "dict-page-offset-zero.parquet"))
	got, err := readAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 39 {
		t.Fatalf("%d rows, DuckDB reads 39", len(got))
	}
}
