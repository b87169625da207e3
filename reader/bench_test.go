package reader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqgo "github.com/parquet-go/parquet-go"
)

// benchFiles are scanned whole by each reader. Compare readers with
//
//	go test ./reader -run XXX -bench . -count 10 > b.txt && benchstat -col /reader b.txt
var benchFiles = []string{
	"alltypes_tiny_pages.parquet",       // 13 columns, 7300 rows, tiny pages, page index
	"lz4_raw_compressed_larger.parquet", // 10000 strings, LZ4_RAW
	"overflow_i16_page_cnt.parquet",     // 40000 booleans in 40000 pages
	"delta_byte_array.parquet",          // 9 DELTA_BYTE_ARRAY string columns
	"nested_lists.snappy.parquet",       // nested lists
}

func benchData(b *testing.B, name string) []byte {
	data, err := os.ReadFile(filepath.Join(testingDir, name))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkScan(b *testing.B) {
	for _, name := range benchFiles {
		data := benchData(b, name)
		b.Run("file="+name+"/reader=pqsink", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				f, err := Open(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					b.Fatal(err)
				}
				r, err := f.Rows()
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					rows++
				}
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run("file="+name+"/reader=pqsink-columns", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := Open(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					b.Fatal(err)
				}
				for g := range f.NumRowGroups() {
					for c := range f.Schema().Leaves() {
						cr, err := f.ColumnChunk(g, c)
						if err != nil {
							b.Fatal(err)
						}
						for {
							_, err := cr.Next()
							if errors.Is(err, io.EOF) {
								break
							}
							if err != nil {
								b.Fatal(err)
							}
						}
					}
				}
			}
		})
		b.Run("file="+name+"/reader=arrow-go", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				pf, err := file.NewParquetReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
				if err != nil {
					b.Fatal(err)
				}
				tbl, err := fr.ReadTable(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				tbl.Release()
				pf.Close()
			}
		})
		b.Run("file="+name+"/reader=parquet-go", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			buf := make([]pqgo.Row, 256)
			for b.Loop() {
				f, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
				if err != nil {
					b.Fatal(err)
				}
				for _, rg := range f.RowGroups() {
					rr := rg.Rows()
					for {
						n, err := rr.ReadRows(buf)
						_ = n
						if errors.Is(err, io.EOF) {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
					}
					rr.Close()
				}
			}
		})
	}
}
