package writer_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// TestParallelismSameBytes writes the same row groups with one goroutine
// and with several, and wants the same file byte for byte, for every
// codec and page version, with bloom filters and two files through Reset.
func TestParallelismSameBytes(t *testing.T) {
	s := schema.MustParse(flatSchema)
	tests := []struct {
		name string
		opts []writer.Option
	}{
		{"zstd", []writer.Option{writer.Compression(meta.CodecZstd, 0)}},
		{"snappy v2", []writer.Option{writer.Compression(meta.CodecSnappy, 0), writer.DataPageVersion(2)}},
		{"gzip", []writer.Option{writer.Compression(meta.CodecGzip, 0)}},
		{"lz4_raw small pages", []writer.Option{writer.Compression(meta.CodecLZ4Raw, 0), writer.PageSize(512), writer.PageRowLimit(100)}},
		{"brotli bloom", []writer.Option{writer.Compression(meta.CodecBrotli, 1), writer.BloomFilter("name", 0.01)}},
		{"uncompressed no dictionary", []writer.Option{writer.Compression(meta.CodecUncompressed, 0), writer.Dictionary(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Writers share codecs, as the sink's do, so that one codec
			// serves goroutines of several writers at once.
			codecs := writer.NewCodecs()
			write := func(t *testing.T, n int) [][]byte {
				g := rowgroup.New(s)
				var files [][]byte
				var out bytes.Buffer
				w, err := writer.New(&out, s, append(tt.opts, writer.Parallelism(n), writer.SharedCodecs(codecs))...)
				if err != nil {
					t.Fatal(err)
				}
				for file := range 2 {
					if file > 0 {
						out = bytes.Buffer{}
						if err := w.Reset(&out); err != nil {
							t.Fatal(err)
						}
					}
					for _, rows := range []int{3000, 1, 700} {
						g.Reset()
						fillFlat(g, rows)
						if err := w.WriteRowGroup(g); err != nil {
							t.Fatal(err)
						}
					}
					if _, err := w.Close(); err != nil {
						t.Fatal(err)
					}
					files = append(files, bytes.Clone(out.Bytes()))
				}
				return files
			}
			want := write(t, 1)
			check := func(t *testing.T, n int, got [][]byte) {
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Errorf("file %d with parallelism %d: %d bytes differ from the %d bytes of parallelism 1", i, n, len(got[i]), len(want[i]))
					}
				}
			}
			for _, n := range []int{2, 4, 64} {
				check(t, n, write(t, n))
			}
			// Writers at once, each with goroutines of its own, on the
			// same codecs.
			t.Run("concurrent writers", func(t *testing.T) {
				for k := range 3 {
					t.Run(fmt.Sprint(k), func(t *testing.T) {
						t.Parallel()
						check(t, 3, write(t, 3))
					})
				}
			})
		})
	}
}

// TestParallelismOption rejects what cannot be a number of goroutines.
func TestParallelismOption(t *testing.T) {
	s := schema.MustParse(flatSchema)
	for _, n := range []int{0, -1} {
		if _, err := writer.New(&bytes.Buffer{}, s, writer.Parallelism(n)); err == nil {
			t.Errorf("Parallelism(%d): no error", n)
		}
	}
}
