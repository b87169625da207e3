package reader

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

// convertLines writes the JSON Lines that lines produces with pqsink
// convert's engine, zstd-compressed, and opens the file.
func convertLines(t testing.TB, schemaText string, maxRecord int64, lines func(w *bufio.Writer), opts ...Option) *File {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<20)
		lines(w)
		pw.CloseWithError(w.Flush())
	}()
	var out bytes.Buffer
	_, err := convert.Run(context.Background(), pr, &out, convert.Options{
		Schema:         schema.MustParse(schemaText),
		Writer:         []writer.Option{writer.Compression(meta.CodecZstd, 0)},
		MaxRecordBytes: maxRecord,
	})
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(out.Bytes()), int64(out.Len()), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

const hugeListSchema = `message m {
  optional group tags (LIST) {
    repeated group list {
      optional binary element (STRING);
    }
  }
}`

// hugeListLines writes a record of a list of n short strings, "s0" to
// "s<n-1>", and a record of a short list.
func hugeListLines(n int) func(w *bufio.Writer) {
	return func(w *bufio.Writer) {
		w.WriteString(`{"tags":[`)
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `"s%d"`, i)
		}
		w.WriteString("]}\n{\"tags\":[\"a\",null,\"b\"]}\n")
	}
}

// largeStringsSchema is the shape of parquet-testing's large_string_map.
const largeStringsSchema = `message m {
  optional group m (MAP) {
    repeated group key_value {
      required binary key (STRING);
      optional int32 value;
    }
  }
}`

// largeStringsLines writes two records of a map whose key is a string of
// size bytes and a digit.
func largeStringsLines(size int) func(w *bufio.Writer) {
	return func(w *bufio.Writer) {
		s := strings.Repeat("a", size)
		for i := range 2 {
			fmt.Fprintf(w, "{\"m\":{\"%s%d\":%d}}\n", s, i, i)
		}
	}
}

// benchRecords reads every record of f, b.N times, and reports the heap
// in use after each record's assembly, at most.
func benchRecords(b *testing.B, f *File) {
	b.ReportAllocs()
	var peak uint64
	var ms runtime.MemStats
	runtime.GC() // writing the file left garbage
	for b.Loop() {
		rows, err := f.Rows()
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := rows.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
}

// BenchmarkHugeList assembles a record of a 5M-element list of short
// strings (under a 4 GiB budget, which the reader once needed for it).
// Compare two builds with
//
//	go test ./reader -run XXX -bench 'HugeList|LargeStrings' -count 6 > new.txt && benchstat old.txt new.txt
func BenchmarkHugeList(b *testing.B) {
	f := convertLines(b, hugeListSchema, 128<<20, hugeListLines(5_000_000), MaxMemory(4<<30))
	benchRecords(b, f)
}

// BenchmarkLargeStrings reads two records of a 64 MiB string each.
func BenchmarkLargeStrings(b *testing.B) {
	f := convertLines(b, largeStringsSchema, 65<<20, largeStringsLines(64<<20), MaxMemory(4<<30))
	benchRecords(b, f)
}
