package reader

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

const testingDir = "testdata/parquet-testing"

// openFile opens a Parquet file of the package's testdata.
func openFile(t testing.TB, path string, opts ...Option) *File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(data), int64(len(data)), opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", filepath.Base(path), err)
	}
	return f
}

// readAll reads every record of f.
func readAll(f *File, opts ...RowsOption) ([]Value, error) {
	rows, err := f.Rows(opts...)
	if err != nil {
		return nil, err
	}
	var out []Value
	for {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

// readBytes opens data and reads every record to JSON, returning the first
// error.
func readBytes(data []byte, opts ...Option) ([]byte, error) {
	f, err := Open(bytes.NewReader(data), int64(len(data)), opts...)
	if err != nil {
		return nil, err
	}
	rows, err := f.Rows()
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		v, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = v.AppendJSON(out)
		out = append(out, '\n')
	}
}

func testingFiles(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testingDir, "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test files in %s: %v", testingDir, err)
	}
	return paths
}

func readTestFile(path string) ([]byte, error) { return os.ReadFile(path) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
