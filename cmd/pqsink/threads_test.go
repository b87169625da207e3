package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertThreads converts the same input with --threads 1 and 4, by
// every convert path, and wants the same file byte for byte.
func TestConvertThreads(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "m.schema", testSchema)
	var in strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&in, `{"id":%d,"name":"user-%d","ts":%d,"price":"%d.%02d","tags":["t%d","u%d"]}`+"\n", i, i%97, 1714979289123+int64(i)*1000, i%1000, i%100, i%7, i%13)
	}
	input := writeFile(t, dir, "in.jsonl", in.String())
	tests := []struct {
		name string
		args []string
	}{
		{"schema", []string{"--schema", schemaFile}},
		{"schema v2 snappy", []string{"--schema", schemaFile, "--page-version", "2", "--codec", "snappy"}},
		{"variant", []string{"--variant"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var files [][]byte
			for _, threads := range []string{"1", "4"} {
				out := filepath.Join(dir, tt.name+"-"+threads+".parquet")
				args := append([]string{"convert", "--quiet", "--row-group-size", "64KiB", "--threads", threads}, tt.args...)
				if code, _, stderr := pqsink(t, "", append(args, input, out)...); code != 0 {
					t.Fatalf("--threads %s: exit %d: %s", threads, code, stderr)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, b)
			}
			if !bytes.Equal(files[0], files[1]) {
				t.Errorf("--threads 4 wrote %d bytes that differ from the %d of --threads 1", len(files[1]), len(files[0]))
			}
		})
	}
	if code, _, stderr := pqsink(t, "", "convert", "--threads", "-1", "--schema", schemaFile, input, filepath.Join(dir, "x.parquet")); code != 2 || !strings.Contains(stderr, "--threads") {
		t.Errorf("--threads -1: exit %d, %q; want a usage error", code, stderr)
	}
}
