package writer_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/test/crossread"
	"github.com/pqsink/pqsink/writer"
)

// TestHugeValueMemory writes row groups that hold one huge BYTE_ARRAY value
// (a VARIANT value of one huge JSON line, a long string) and bounds what
// the writer allocates for it, a bound on its peak heap, as a multiple of
// the value: the PLAIN page and the compressed page, once each. It also
// bounds what the writer holds afterwards (a sink keeps its writers
// pooled), and reads each file back with pqsink, parquet-go and arrow-go.
//
// Before the writer skipped trials and the dictionary for such a page,
// borrowed its bounds from the column and let go of scratch buffers, it
// allocated 7-18× the value and held 2-5× it afterwards.
func TestHugeValueMemory(t *testing.T) {
	size := 24 << 20 // over the scratch the writer keeps (8 MiB), so that it is let go
	if testing.Short() {
		size = 10 << 20
	}
	rnd := rand.New(rand.NewPCG(7, 11))
	huge := make([]byte, size) // hex digits: zstd and snappy find something to compress
	for i := range huge {
		huge[i] = "0123456789abcdef"[rnd.IntN(16)]
	}
	schemas := []string{
		"message m { required binary value; }",
		"message m { optional binary s (STRING); required int64 n; }",
	}
	type config struct {
		codec    meta.CompressionCodec
		version  int
		parallel int
	}
	var configs []config
	for _, codec := range []meta.CompressionCodec{meta.CodecSnappy, meta.CodecZstd, meta.CodecUncompressed} {
		for _, version := range []int{1, 2} {
			configs = append(configs, config{codec, version, 1})
		}
	}
	configs = append(configs, config{meta.CodecSnappy, 1, 2}, config{meta.CodecZstd, 2, 2})

	for si, text := range schemas {
		s := schema.MustParse(text)
		g := rowgroup.New(s)
		// A small value, the huge one, and (where the column allows) a
		// null and another small one: the huge value shares its page.
		g.Column(0).AppendBytes(0, []byte("first"))
		g.Column(0).AppendBytes(0, huge)
		rows := 2
		if g.Column(0).MaxDef() > 0 {
			g.Column(0).Null(0, 0)
			g.Column(0).AppendBytes(0, []byte("last"))
			rows = 4
		}
		for i := range rows {
			if len(g.Columns()) > 1 {
				g.Column(1).AppendInt64(0, int64(i))
			}
			g.EndRow()
		}
		want := [][]crossread.Chunk{crossread.FromRowGroup(g)}
		for _, cfg := range configs {
			name := fmt.Sprintf("schema %d, %s, page v%d, parallelism %d", si, cfg.codec, cfg.version, cfg.parallel)
			var out bytes.Buffer
			out.Grow(2 * size) // the file's own bytes are not the writer's memory
			w, err := writer.New(&out, s, writer.Compression(cfg.codec, 0), writer.DataPageVersion(cfg.version), writer.Parallelism(cfg.parallel))
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := w.WriteRowGroup(g); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			runtime.ReadMemStats(&after)
			if _, err := w.Close(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			alloc := float64(after.TotalAlloc-before.TotalAlloc) / float64(size)
			held := float64(w.Held()) / float64(size)
			t.Logf("%s: %.2f× the value allocated, %.3f× held after", name, alloc, held)
			if alloc > 3 {
				t.Errorf("%s: the writer allocated %.2f× the huge value, want at most 3×", name, alloc)
			}
			if held > 0.1 {
				t.Errorf("%s: the writer holds %.2f× the huge value after writing it, want at most 0.1×", name, held)
			}

			path := filepath.Join(t.TempDir(), "huge.parquet")
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			for reader, read := range map[string]func(string) ([][]crossread.Chunk, error){
				"pqsink":     crossread.PQSink,
				"parquet-go": crossread.ParquetGo,
				"arrow-go":   crossread.Arrow,
			} {
				got, err := read(path)
				if err != nil {
					t.Fatalf("%s: %s: %v", name, reader, err)
				}
				compareChunks(t, name+": "+reader, s, want, got)
			}
		}
	}
}
