package reader

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"testing"
)

// pagesOf renders every page of a chunk: levels and values.
func pagesOf(t *testing.T, c *ChunkReader) []string {
	t.Helper()
	var out []string
	for {
		p, err := c.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		v := p.Values
		out = append(out, fmt.Sprintf("%d %v %v %v%v%v%v%v%v%q%v", p.NumValues, p.Rep, p.Def,
			v.Bool, v.Int32, v.Int64, v.Int96, v.Float, v.Double, v.Data, v.Offsets))
	}
}

// TestColumnChunkReusing reads every chunk of files of many kinds (dictionary
// and plain pages, every type, nested) with one reader's buffers passed from
// chunk to chunk and file to file, and compares the pages with those of
// readers of their own.
func TestColumnChunkReusing(t *testing.T) {
	var prev *ChunkReader
	for _, name := range []string{"alltypes_tiny_pages.parquet", "alltypes_dictionary.parquet", "nested_lists.snappy.parquet",
		"delta_byte_array.parquet", "alltypes_plain.parquet", "nullable.impala.parquet", "int32_with_null_pages.parquet"} {
		f := openFile(t, filepath.Join(testingDir, name))
		for g := range f.NumRowGroups() {
			for col := range f.Schema().Leaves() {
				fresh, err := f.ColumnChunk(g, col)
				if err != nil {
					t.Fatal(err)
				}
				want := pagesOf(t, fresh)
				fresh.Release()
				c, err := f.ColumnChunkReusing(prev, g, col)
				if err != nil {
					t.Fatal(err)
				}
				if got := pagesOf(t, c); !reflect.DeepEqual(got, want) || len(want) == 0 {
					t.Errorf("%s row group %d column %d: pages differ when read with reused buffers", name, g, col)
				}
				if c.held != c.capacity() || c.mem.used != c.held {
					t.Errorf("%s: %d bytes held, %d charged, buffers of %d", name, c.held, c.mem.used, c.capacity())
				}
				prev = c
			}
		}
	}
	prev.Release()
	// Buffers that do not fit the new reader's budget are dropped.
	big := openFile(t, filepath.Join(testingDir, "alltypes_tiny_pages.parquet"))
	c, err := big.ColumnChunk(0, 9)
	if err != nil {
		t.Fatal(err)
	}
	pagesOf(t, c)
	small := openFile(t, filepath.Join(testingDir, "alltypes_plain.parquet"), MaxMemory(64))
	d, err := small.ColumnChunkReusing(c, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d.capacity() != 0 || d.held != 0 {
		t.Errorf("buffers of %d bytes kept under a 64-byte budget", d.capacity())
	}
	if c.buf != nil || c.held != 0 {
		t.Error("the previous reader kept its buffers")
	}
}
