package merge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/writer"
)

// FuzzMergeRuns merges an earlier merge's file (runs of two partitions,
// small pages, with and without a page index in the seeds), as the fuzzer
// changes it, with a file whose runs interleave with its own, so that the
// changed file is copied in spans of row groups and pages: never a panic,
// and a merge that succeeds writes a file that reads back whole.
func FuzzMergeRuns(f *testing.F) {
	dir := f.TempDir()
	var firsts, seconds []string
	for p := range int32(2) {
		firsts = append(firsts, writeInput(f, dir, nestedShape, spec{p: p, first: 0, n: 30, perGroup: 12}))
		seconds = append(seconds, writeInput(f, dir, nestedShape, spec{p: p, first: 30, n: 20, opts: deltaPages}))
	}
	earlier := func(name string, paths []string, opts ...Option) []byte {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			f.Fatal(err)
		}
		merged, _, err := mergeFiles(f, sub, paths, opts...)
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(merged[0])
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	next := earlier("next", seconds)
	f.Add(earlier("index", firsts, WriterOptions(writer.PageSize(300), writer.DataPageVersion(1))))
	f.Add(earlier("no-index", firsts, WriterOptions(writer.PageSize(300), writer.PageIndex(false))))
	f.Fuzz(func(t *testing.T, data []byte) {
		outs, files, err := mergeBytes(context.Background(), [][]byte{data, next}, MemoryLimit(64<<20))
		if err != nil {
			if strings.HasPrefix(err.Error(), "panic") {
				t.Fatal(err)
			}
			return
		}
		r, err := reader.Open(bytes.NewReader(files[0]), int64(len(files[0])))
		if err != nil {
			t.Fatalf("the merged file: %v", err)
		}
		if r.NumRows() != outs[0].Rows {
			t.Fatalf("the merged file has %d rows, the merge says %d", r.NumRows(), outs[0].Rows)
		}
		rows, err := r.Rows()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for {
			if _, err := rows.Next(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("the merged file, row %d: %v", n, err)
			}
			n++
		}
		if n != outs[0].Rows {
			t.Fatalf("read %d rows of the merged file's %d", n, outs[0].Rows)
		}
	})
}
