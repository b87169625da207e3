package test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/avroevents"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/writer"
)

// The end-to-end figures of issue 9: 1M records of the reference shape
// (internal/events) converted into a zstd Parquet file, from an Avro
// object container file and from JSON Lines, beside goavro decoding the
// same container's records into native values (and nothing more).
//
//	go test ./test -run '^$' -bench 'AvroEvents|JSONEvents' -benchtime 3x

const benchRecords = 1_000_000

var benchInputs = sync.OnceValues(func() (jsonl, container []byte) {
	gen := events.New(7, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	var recs [][]byte
	var line []byte
	for range benchRecords {
		line = gen.Append(line[:0])
		jsonl = append(append(jsonl, line...), '\n')
		a, err := avroevents.Append(nil, line)
		if err != nil {
			panic(err)
		}
		recs = append(recs, a)
	}
	s := avro.MustParse(avroevents.Schema)
	// Blocks of 4,000 records (about 440 KB), as Java's writer makes them
	// with a sync interval of that size.
	return jsonl, containerBytes(nil, s.String(), "null", recs, 4000)
})

func benchConvert(b *testing.B, in []byte, run func(io.Reader, io.Writer, convert.Options) (convert.Stats, error), opts convert.Options) {
	opts.Writer = append(opts.Writer, writer.Compression(meta.CodecZstd, 0))
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	var out int64
	for range b.N {
		st, err := run(bytes.NewReader(in), io.Discard, opts)
		if err != nil {
			b.Fatal(err)
		}
		if st.Rows != benchRecords {
			b.Fatalf("%d rows", st.Rows)
		}
		out = st.OutBytes
	}
	b.ReportMetric(float64(b.N*benchRecords)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(out), "out-bytes")
}

func BenchmarkConvertAvroEvents(b *testing.B) {
	_, container := benchInputs()
	benchConvert(b, container, func(r io.Reader, w io.Writer, o convert.Options) (convert.Stats, error) {
		return convert.RunAvro(context.Background(), r, w, o)
	}, convert.Options{})
}

func BenchmarkConvertJSONEvents(b *testing.B) {
	jsonl, _ := benchInputs()
	benchConvert(b, jsonl, func(r io.Reader, w io.Writer, o convert.Options) (convert.Stats, error) {
		return convert.Run(context.Background(), r, w, o)
	}, convert.Options{Schema: schema.MustParse(events.Schema)})
}

// BenchmarkGoavroAvroEvents: goavro's NativeFromBinary over the records of
// the same container (its blocks read by avro.ContainerReader).
func BenchmarkGoavroAvroEvents(b *testing.B) {
	_, container := benchInputs()
	b.SetBytes(int64(len(container)))
	b.ResetTimer()
	for range b.N {
		cr, err := avro.NewContainerReader(bytes.NewReader(container))
		if err != nil {
			b.Fatal(err)
		}
		codec := cr.Schema().Codec()
		n := 0
		for {
			blk, err := cr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			data := blk.Data
			for range blk.Count {
				if _, data, err = codec.NativeFromBinary(data); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		if n != benchRecords {
			b.Fatalf("%d records", n)
		}
	}
	b.ReportMetric(float64(b.N*benchRecords)/b.Elapsed().Seconds(), "rows/s")
}
