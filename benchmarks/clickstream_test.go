package benchmarks

import (
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrowpq "github.com/apache/arrow-go/v18/parquet"
	arrowcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqgo "github.com/parquet-go/parquet-go"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

const clickRows = 1_000_000

// countingDiscard counts bytes, to report the file size without keeping it.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

func report(b *testing.B, rows int, size int64) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size), "file_bytes")
}

// reportCPU reports rows per CPU second, given the CPU time of the loop.
func reportCPU(b *testing.B, rows int, cpu time.Duration) {
	b.ReportMetric(float64(rows)*float64(b.N)/cpu.Seconds(), "rows/cpu-s")
}

// processCPU is the CPU time (user and system) the process has used. On a
// machine shared with other work, rows per CPU second varies less than
// rows per second of wall-clock time; it counts the garbage collector's
// work too, on whatever thread it runs.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchWriters runs one sub-benchmark per library, each writing all rows
// to a counting sink per iteration.
func benchWriters(b *testing.B, rows int, writers map[string]func(io.Writer) error) {
	for _, lib := range []string{"pqsink", "parquet-go", "arrow-go"} {
		write := writers[lib]
		// Each library starts on a collected heap: the garbage of
		// generating the rows, or of the library before, is not
		// charged to whichever runs next.
		runtime.GC()
		b.Run("lib="+lib, func(b *testing.B) {
			var size int64
			var cpu time.Duration
			for b.Loop() {
				if cpu == 0 { // b.Loop's first call starts the clock
					cpu = processCPU()
				}
				out := &countingDiscard{}
				if err := write(out); err != nil {
					b.Fatal(err)
				}
				size = out.n
			}
			report(b, rows, size)
			reportCPU(b, rows, processCPU()-cpu)
		})
	}
}

// parquetGoWriter returns a function that writes rows, file after file,
// through one parquet-go generic writer (Reset between files) with ZSTD, in
// batches of 4096 and row groups of 512K rows.
func parquetGoWriter[T any](data []T) func(io.Writer) error {
	var w *pqgo.GenericWriter[T]
	return func(out io.Writer) error {
		if w == nil {
			w = pqgo.NewGenericWriter[T](out, pqgo.Compression(&pqzstd.Codec{Level: pqzstd.SpeedDefault}), pqgo.MaxRowsPerRowGroup(512*1024))
		} else {
			w.Reset(out)
		}
		return writeParquetGo(w, data)
	}
}

func writeParquetGo[T any](w *pqgo.GenericWriter[T], data []T) error {
	for i := 0; i < len(data); i += 4096 {
		if _, err := w.Write(data[i:min(i+4096, len(data))]); err != nil {
			return err
		}
	}
	return w.Close()
}

func BenchmarkClickstream(b *testing.B) {
	data := Clicks(clickRows)
	benchWriters(b, len(data), map[string]func(io.Writer) error{
		"pqsink":     pqsinkWriter(ClickSchema, func(g *rowgroup.RowGroup, w *writer.Writer) error { return writeClicks(g, w, data) }),
		"parquet-go": parquetGoWriter(data),
		"arrow-go":   func(w io.Writer) error { return writeArrow(w, data) },
	})
}

// pqsinkWriter returns a function that writes files one after the other
// through one row group and one writer (Reset between files), as a sink
// does, with ZSTD; fill stripes the rows and writes full row groups.
func pqsinkWriter(schemaText string, fill func(*rowgroup.RowGroup, *writer.Writer) error) func(io.Writer) error {
	s := schema.MustParse(schemaText)
	g := rowgroup.New(s)
	var w *writer.Writer
	return func(out io.Writer) error {
		var err error
		if w == nil {
			// Level 3, parquet-go's SpeedDefault, not pqsink's default (1):
			// the same codec work on both sides.
			w, err = writer.New(out, s, writer.Compression(meta.CodecZstd, 3))
		} else {
			err = w.Reset(out)
		}
		if err != nil {
			return err
		}
		g.Reset()
		if err := fill(g, w); err != nil {
			return err
		}
		if err := w.WriteRowGroup(g); err != nil {
			return err
		}
		_, err = w.Close()
		return err
	}
}

// sizeCheckRows is how many rows pass between the fill loops' checks of
// the row group's size, as in the connector: RowGroup.Size sums over the
// columns, and parquet-go's side counts rows rather than bytes, so a check
// per row would charge our side for a harness cost that neither a sink nor
// parquet-go pays.
const sizeCheckRows = 32

// writeClicks stripes the rows into g column by column and writes each
// full row group (128 MiB, the default target), checked every
// sizeCheckRows rows.
func writeClicks(g *rowgroup.RowGroup, w *writer.Writer, data []Click) error {
	c := g.Columns()
	for i := range data {
		d := &data[i]
		c[0].AppendBytes(0, []byte(d.EventID))
		c[1].AppendInt64(0, d.UserID)
		c[2].AppendBytes(0, []byte(d.SessionID))
		c[3].AppendBytes(0, []byte(d.EventType))
		c[4].AppendBytes(0, []byte(d.PageURL))
		if d.Referrer != nil {
			c[5].AppendBytes(0, []byte(*d.Referrer))
		} else {
			c[5].Null(0, 0)
		}
		c[6].AppendBytes(0, []byte(d.Country))
		c[7].AppendBytes(0, []byte(d.Device))
		c[8].AppendInt64(0, d.TS)
		if d.Duration != nil {
			c[9].AppendInt32(0, *d.Duration)
		} else {
			c[9].Null(0, 0)
		}
		c[10].AppendDouble(0, d.Price)
		c[11].AppendBool(0, d.IsBot)
		g.EndRow()
		if i%sizeCheckRows == sizeCheckRows-1 && g.Size() >= 128<<20 {
			if err := w.WriteRowGroup(g); err != nil {
				return err
			}
			g.Reset()
		}
	}
	return nil
}

// newArrowWriter is pqarrow's file writer as the benchmarks configure it:
// ZSTD, dictionaries, statistics, row groups of 512K rows.
func newArrowWriter(out io.Writer, sc *arrow.Schema) (*pqarrow.FileWriter, error) {
	props := arrowpq.NewWriterProperties(
		arrowpq.WithCompression(arrowcompress.Codecs.Zstd),
		arrowpq.WithDictionaryDefault(true),
		arrowpq.WithStats(true),
		arrowpq.WithMaxRowGroupLength(512*1024),
	)
	return pqarrow.NewFileWriter(sc, out, props, pqarrow.DefaultWriterProps())
}

// writeArrow builds records of 64K rows and writes them through pqarrow
// with dictionary encoding and ZSTD, in row groups of 512K rows.
func writeArrow(out io.Writer, data []Click) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "event_id", Type: arrow.BinaryTypes.String},
		{Name: "user_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "session_id", Type: arrow.BinaryTypes.String},
		{Name: "event_type", Type: arrow.BinaryTypes.String},
		{Name: "page_url", Type: arrow.BinaryTypes.String},
		{Name: "referrer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "country", Type: arrow.BinaryTypes.String},
		{Name: "device", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64},
		{Name: "is_bot", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	fw, err := newArrowWriter(out, sc)
	if err != nil {
		return err
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bld.Release()
	const batch = 64 * 1024
	for i := 0; i < len(data); i += batch {
		for _, d := range data[i:min(i+batch, len(data))] {
			bld.Field(0).(*array.StringBuilder).Append(d.EventID)
			bld.Field(1).(*array.Int64Builder).Append(d.UserID)
			bld.Field(2).(*array.StringBuilder).Append(d.SessionID)
			bld.Field(3).(*array.StringBuilder).Append(d.EventType)
			bld.Field(4).(*array.StringBuilder).Append(d.PageURL)
			if d.Referrer != nil {
				bld.Field(5).(*array.StringBuilder).Append(*d.Referrer)
			} else {
				bld.Field(5).AppendNull()
			}
			bld.Field(6).(*array.StringBuilder).Append(d.Country)
			bld.Field(7).(*array.StringBuilder).Append(d.Device)
			bld.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(d.TS))
			if d.Duration != nil {
				bld.Field(9).(*array.Int32Builder).Append(*d.Duration)
			} else {
				bld.Field(9).AppendNull()
			}
			bld.Field(10).(*array.Float64Builder).Append(d.Price)
			bld.Field(11).(*array.BooleanBuilder).Append(d.IsBot)
		}
		rec := bld.NewRecordBatch()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}
