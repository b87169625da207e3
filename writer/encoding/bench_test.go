package encoding

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// Benchmarks encode and decode 64Ki values per operation. b.SetBytes is the
// size of the values in memory, so MB/s compares across encodings; rows/s is
// reported as values/s.

const benchN = 1 << 16

func benchPair[T any](b *testing.B, name string, values []T, size int,
	encode func([]byte, []T) ([]byte, error), decode func([]T, []byte, int) ([]T, error)) {
	encoded, err := encode(nil, values)
	if err != nil {
		b.Fatal(err)
	}
	b.Run(name+"/encode", func(b *testing.B) {
		b.SetBytes(int64(len(values) * size))
		buf := make([]byte, 0, len(encoded))
		for b.Loop() {
			buf, _ = encode(buf[:0], values)
		}
		b.ReportMetric(float64(len(encoded))/float64(len(values)), "bytes/value")
	})
	b.Run(name+"/decode", func(b *testing.B) {
		b.SetBytes(int64(len(values) * size))
		out := make([]T, 0, len(values))
		for b.Loop() {
			out, err = decode(out[:0], encoded, len(values))
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodings(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 12))
	bools := make([]bool, benchN)
	small := make([]int32, benchN)
	ts := make([]int64, benchN)
	i64 := make([]int64, benchN)
	f64 := make([]float64, benchN)
	f32 := make([]float32, benchN)
	t := int64(1_700_000_000_000)
	for i := range benchN {
		bools[i] = rng.IntN(4) == 0
		small[i] = int32(rng.IntN(1000))
		t += int64(rng.IntN(50))
		ts[i] = t
		i64[i] = rng.Int64()
		f64[i] = rng.NormFloat64()
		f32[i] = rng.Float32()
	}
	benchPair(b, "PLAIN/BOOLEAN", bools, 1, Plain{}.EncodeBoolean, Plain{}.DecodeBoolean)
	benchPair(b, "PLAIN/INT64", i64, 8, Plain{}.EncodeInt64, Plain{}.DecodeInt64)
	benchPair(b, "PLAIN/DOUBLE", f64, 8, Plain{}.EncodeDouble, Plain{}.DecodeDouble)
	benchPair(b, "RLE/BOOLEAN", bools, 1, RLE{}.EncodeBoolean, RLE{}.DecodeBoolean)
	benchPair(b, "RLE_DICTIONARY/INT32", small, 4, RLEDictionary{}.EncodeInt32, RLEDictionary{}.DecodeInt32)
	benchPair(b, "DELTA_BINARY_PACKED/INT32", small, 4, DeltaBinaryPacked{}.EncodeInt32, DeltaBinaryPacked{}.DecodeInt32)
	benchPair(b, "DELTA_BINARY_PACKED/INT64-timestamps", ts, 8, DeltaBinaryPacked{}.EncodeInt64, DeltaBinaryPacked{}.DecodeInt64)
	benchPair(b, "DELTA_BINARY_PACKED/INT64-random", i64, 8, DeltaBinaryPacked{}.EncodeInt64, DeltaBinaryPacked{}.DecodeInt64)
	benchPair(b, "BYTE_STREAM_SPLIT/FLOAT", f32, 4, ByteStreamSplit{}.EncodeFloat, ByteStreamSplit{}.DecodeFloat)
	benchPair(b, "BYTE_STREAM_SPLIT/DOUBLE", f64, 8, ByteStreamSplit{}.EncodeDouble, ByteStreamSplit{}.DecodeDouble)
}

func BenchmarkByteArrays(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	var values [][]byte
	for i := range benchN {
		values = append(values, fmt.Appendf(nil, "https://example.com/users/%08d/profile?v=%d", i/4, rng.IntN(100)))
	}
	in := makeByteArrays(values...)
	for _, enc := range []Encoding{Plain{}, DeltaLengthByteArray{}, DeltaByteArray{}} {
		encoded, err := enc.EncodeByteArray(nil, in.data, in.offsets)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(enc.String()+"/encode", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			buf := make([]byte, 0, len(encoded))
			for b.Loop() {
				buf, _ = enc.EncodeByteArray(buf[:0], in.data, in.offsets)
			}
			b.ReportMetric(float64(len(encoded))/benchN, "bytes/value")
		})
		b.Run(enc.String()+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			data, offsets := make([]byte, 0, len(in.data)), make([]uint32, 0, benchN+1)
			for b.Loop() {
				if _, _, err := enc.DecodeByteArray(data, offsets[:0], encoded, benchN); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLevels(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, shape := range []string{"runs", "random"} {
		levels := make([]uint8, benchN)
		for i := range levels {
			if shape == "runs" {
				levels[i] = uint8(i / 100 % 2)
			} else {
				levels[i] = uint8(rng.IntN(4))
			}
		}
		encoded := AppendLevels(nil, levels, 2)
		b.Run(shape+"/encode", func(b *testing.B) {
			b.SetBytes(benchN)
			buf := make([]byte, 0, len(encoded))
			for b.Loop() {
				buf = AppendLevels(buf[:0], levels, 2)
			}
		})
		b.Run(shape+"/decode", func(b *testing.B) {
			b.SetBytes(benchN)
			out := make([]uint8, 0, benchN)
			for b.Loop() {
				out, _ = DecodeLevels(out[:0], encoded, 2, benchN)
			}
		})
	}
}

func BenchmarkUnpack(b *testing.B) {
	for _, width := range []int{1, 3, 8, 13, 20, 32, 64} {
		values := make([]uint64, 1024)
		for i := range values {
			values[i] = uint64(i*2654435761) & widthMask(width)
		}
		packed := pack(nil, values, width)
		b.Run(fmt.Sprintf("pack/%d", width), func(b *testing.B) {
			b.SetBytes(int64(len(values) * 8))
			buf := make([]byte, 0, len(packed))
			for b.Loop() {
				buf = pack(buf[:0], values, width)
			}
		})
		b.Run(fmt.Sprintf("unpack/%d", width), func(b *testing.B) {
			b.SetBytes(int64(len(values) * 8))
			out := make([]uint64, len(values))
			for b.Loop() {
				unpack(out, packed, width)
			}
		})
	}
}

// BenchmarkPlainShortByteArrays encodes PLAIN byte arrays of the lengths
// most string columns hold (the reference events' 16-character session
// ids, their user names and Kafka keys of a few bytes).
func BenchmarkPlainShortByteArrays(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		name   string
		format func(i int) []byte
	}{
		{"session16", func(int) []byte { return fmt.Appendf(nil, "%016x", rng.Uint64()) }},
		{"user", func(int) []byte { return fmt.Appendf(nil, "user_%d", rng.IntN(10000)) }},
		{"key", func(i int) []byte { return fmt.Appendf(nil, "%d", i%10000) }},
	} {
		var values [][]byte
		for i := range benchN {
			values = append(values, tc.format(i))
		}
		in := makeByteArrays(values...)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			buf := make([]byte, 0, len(in.data)+4*benchN)
			var cpu time.Duration
			for b.Loop() {
				if cpu == 0 { // b.Loop's first call starts the clock
					cpu = processCPU()
				}
				buf, _ = Plain{}.EncodeByteArray(buf[:0], in.data, in.offsets)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchN), "ns/value")
			// CPU time, which a busy machine's waits for a core leave out.
			b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N*benchN), "cpu-ns/value")
		})
	}
}

// processCPU is the process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
