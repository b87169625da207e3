package merge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/writer"
)

// benchInputs writes files of the events shape as the sink does with its
// default parquet settings: files of perFile rows, partition 0, one after
// the other.
func benchInputs(b *testing.B, files, perFile int) [][]byte {
	b.Helper()
	settings := writer.DefaultSettings()
	opts, err := settings.Options()
	if err != nil {
		b.Fatal(err)
	}
	s := eventsShape.schema(b)
	g := rowgroup.New(s)
	add := eventsShape.rows(b, g)
	var out [][]byte
	for f := range files {
		var buf bytes.Buffer
		w, err := writer.New(&buf, s, opts...)
		if err != nil {
			b.Fatal(err)
		}
		first := int64(f * perFile)
		for i := first; i < first+int64(perFile); i++ {
			env := &rowgroup.Envelope{Topic: "clicks", Offset: i, Timestamp: time.UnixMilli(1_790_000_000_000 + i)}
			if err := add(i, env); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.WriteRowGroup(g); err != nil {
			b.Fatal(err)
		}
		g.Reset()
		archive.Range{Topic: "clicks", First: first, Last: first + int64(perFile) - 1, Records: int64(perFile)}.Footer(w.SetKeyValue)
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// cpuTime is the CPU time the process has used, user and system: on a
// shared machine, rows per CPU second say more than rows per second of
// wall time, which depend on what else runs.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countWriter counts and drops what it is given.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkMerge measures the merge of small files of the sink's events
// shape into one, the merge of the same rows from two earlier merges'
// files whose ranges interleave (merge-runs), against reading the same files through the record
// reader (reader.Rows) and through the page decoder alone
// (reader.ChunkReader, what the merge reads with). MB/s are of input
// bytes; rows/cpu-s are rows per second of the process's CPU time (the
// garbage collector's included). Run with
//
//	go test ./merge -run XXX -bench . -benchtime 5x -count 3
func BenchmarkMerge(b *testing.B) {
	const files, perFile = 20, 10000
	in := benchInputs(b, files, perFile)
	var size int64
	for _, f := range in {
		size += int64(len(f))
	}
	rows := float64(files * perFile)
	inputs := func() []Input {
		var out []Input
		for i, f := range in {
			out = append(out, Input{Name: string(rune('a' + i)), R: bytes.NewReader(f), Size: int64(len(f))})
		}
		return out
	}
	b.Run("merge", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		var out int64
		cpu := cpuTime(b)
		for b.Loop() {
			var cw countWriter
			if _, err := Merge(context.Background(), inputs(), func(int) (io.Writer, error) { return &cw, nil }); err != nil {
				b.Fatal(err)
			}
			out = cw.n
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(rows*float64(b.N)/(cpuTime(b)-cpu).Seconds(), "rows/cpu-s")
		b.ReportMetric(float64(out)/float64(size), "out/in")
	})
	// The same rows in two earlier merges' files, the even inputs in
	// one and the odd in the other: their ranges interleave, and the
	// merge copies them as 20 runs, each a span of a row group.
	var halves [2][]Input
	for i, f := range in {
		halves[i%2] = append(halves[i%2], Input{Name: string(rune('a' + i)), R: bytes.NewReader(f), Size: int64(len(f))})
	}
	var compacted [][]byte
	for _, h := range halves {
		var buf bytes.Buffer
		if _, err := Merge(context.Background(), h, func(int) (io.Writer, error) { return &buf, nil }); err != nil {
			b.Fatal(err)
		}
		compacted = append(compacted, buf.Bytes())
	}
	b.Run("merge-runs", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			var cw countWriter
			var inputs []Input
			for i, f := range compacted {
				inputs = append(inputs, Input{Name: string(rune('a' + i)), R: bytes.NewReader(f), Size: int64(len(f))})
			}
			if _, err := Merge(context.Background(), inputs, func(int) (io.Writer, error) { return &cw, nil }); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(rows*float64(b.N)/(cpuTime(b)-cpu).Seconds(), "rows/cpu-s")
	})
	b.Run("record-reader", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		cpu := cpuTime(b)
		for b.Loop() {
			n := 0
			for _, x := range inputs() {
				f, err := reader.Open(x.R, x.Size)
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
					n++
				}
			}
			if n != files*perFile {
				b.Fatalf("%d rows", n)
			}
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(rows*float64(b.N)/(cpuTime(b)-cpu).Seconds(), "rows/cpu-s")
	})
	b.Run("page-decoder", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			for _, x := range inputs() {
				f, err := reader.Open(x.R, x.Size)
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
							if _, err := cr.Next(); errors.Is(err, io.EOF) {
								break
							} else if err != nil {
								b.Fatal(err)
							}
						}
						cr.Release()
					}
				}
			}
		}
		b.ReportMetric(rows*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}
