package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/pqsink/pqsink/meta"
)

// allCodecs lists every supported codec with the levels worth exercising.
var allCodecs = []struct {
	codec  meta.CompressionCodec
	levels []int
}{
	{meta.CodecUncompressed, []int{0}},
	{meta.CodecSnappy, []int{0}},
	{meta.CodecGzip, []int{0, 1, 9}},
	{meta.CodecBrotli, []int{0, 1, 11}},
	{meta.CodecZstd, []int{0, 1, 7, 22}},
	{meta.CodecLZ4Raw, []int{0, 9}},
	{meta.CodecLZ4, []int{0, 3}},
}

// testInputs are the page bodies round-tripped through every codec.
func testInputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	// Column-like data: a PLAIN INT64 column of millisecond timestamps
	// that rise by a random step, as Kafka record timestamps do.
	ints := make([]byte, 4<<20)
	ts := uint64(1_700_000_000_000)
	for i := 0; i < len(ints); i += 8 {
		ts += uint64(rng.IntN(1000))
		binary.LittleEndian.PutUint64(ints[i:], ts)
	}
	text := []byte(strings.Repeat("kafka record payload with some text, ", 2000))[:64<<10]
	return map[string][]byte{
		"empty":          {},
		"one byte":       {42},
		"64KiB text":     text,
		"4MiB columnar":  ints,
		"1MiB random":    random,
		"4MiB zeros":     make([]byte, 4<<20),
		"odd size 70001": random[:70001],
	}
}

func mustNew(t testing.TB, c meta.CompressionCodec, level int) Codec {
	t.Helper()
	codec, err := New(c, Level(level))
	if err != nil {
		t.Fatalf("New(%v, Level(%d)): %v", c, level, err)
	}
	if codec.Codec() != c {
		t.Fatalf("New(%v).Codec() = %v", c, codec.Codec())
	}
	return codec
}

func TestRoundTrip(t *testing.T) {
	inputs := testInputs()
	prefix := []byte("prefix")
	for _, tc := range allCodecs {
		for _, level := range tc.levels {
			codec := mustNew(t, tc.codec, level)
			for name, src := range inputs {
				if level != 0 && len(src) > 1<<17 {
					continue // the slow top levels get the small inputs only
				}
				t.Run(fmt.Sprintf("%v/%d/%s", tc.codec, level, name), func(t *testing.T) {
					enc, err := codec.Encode(bytes.Clone(prefix), src)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.HasPrefix(enc, prefix) {
						t.Fatal("Encode clobbered dst")
					}
					enc = enc[len(prefix):]
					dec, err := codec.Decode(bytes.Clone(prefix), enc, len(src))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(dec[:len(prefix)], prefix) || !bytes.Equal(dec[len(prefix):], src) {
						t.Fatalf("round trip of %d bytes differs (%d compressed)", len(src), len(enc))
					}
					// A fresh codec of the same kind reads it too:
					// nothing depends on per-instance state.
					dec, err = mustNew(t, tc.codec, 0).Decode(nil, enc, len(src))
					if err != nil || !bytes.Equal(dec, src) {
						t.Fatalf("fresh codec: err %v, equal %v", err, bytes.Equal(dec, src))
					}
				})
			}
		}
	}
}

// TestCompresses guards against a codec silently storing data: zeros must
// shrink a lot under every real codec.
func TestCompresses(t *testing.T) {
	src := make([]byte, 1<<20)
	for _, tc := range allCodecs[1:] {
		enc, err := mustNew(t, tc.codec, 0).Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > len(src)/16 { // Snappy tops out near 21:1
			t.Errorf("%v: 1 MiB of zeros compressed to %d bytes", tc.codec, len(enc))
		}
	}
}

// TestZstdWindow checks that a frame larger than the encoder's window
// declares that window, not the encoder's default 8 MiB, and still
// decodes.
func TestZstdWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	src := make([]byte, 3*zstdWindow)
	for i := range src {
		src[i] = byte(r.IntN(16))
	}
	c := mustNew(t, meta.CodecZstd, 0)
	enc, err := c.Encode(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(enc); err != nil {
		t.Fatal(err)
	}
	if h.WindowSize == 0 || h.WindowSize > zstdWindow {
		t.Errorf("a %d-byte frame declares a window of %d bytes, want at most %d", len(src), h.WindowSize, zstdWindow)
	}
	dec, err := c.Decode(nil, enc, len(src))
	if err != nil || !bytes.Equal(dec, src) {
		t.Errorf("round trip: %v", err)
	}
}

// TestZstdEntropyCodesLiterals wants zstd, at every level, to shrink data
// in which it finds no match but whose bytes are skewed: 4-bit dictionary
// indices of ten values, as a dictionary-encoded page holds them, carry
// 3.32 bits a value of information.
func TestZstdEntropyCodesLiterals(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]byte, 10_000)
	for i := range src {
		src[i] = byte(r.IntN(10) | r.IntN(10)<<4)
	}
	for _, level := range []int{0, 1, 3, 7} {
		enc, err := mustNew(t, meta.CodecZstd, level).Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(enc) > len(src)*7/8 {
			t.Errorf("level %d: %d bytes of 4-bit values compressed to %d", level, len(src), len(enc))
		}
	}
}

func TestDecodeSizeMismatch(t *testing.T) {
	src := []byte(strings.Repeat("0123456789abcdef", 64)) // 1 KiB
	for _, tc := range allCodecs {
		codec := mustNew(t, tc.codec, 0)
		enc, err := codec.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{len(src) - 1, len(src) + 1, 0, 2 * len(src)} {
			dst := []byte("keep")
			out, err := codec.Decode(dst, enc, size)
			if err == nil {
				t.Errorf("%v: %d bytes decoded with size %d: no error", tc.codec, len(src), size)
				continue
			}
			if size > len(src) && !errors.Is(err, ErrSizeMismatch) {
				t.Errorf("%v: size %d: error %v is not ErrSizeMismatch", tc.codec, size, err)
			}
			if string(out) != "keep" {
				t.Errorf("%v: size %d: failed Decode returned %q, want dst unchanged", tc.codec, size, out)
			}
		}
		for _, size := range []int{-1, MaxSize + 1} {
			if _, err := codec.Decode(nil, enc, size); err == nil {
				t.Errorf("%v: size %d accepted", tc.codec, size)
			}
		}
	}
}

// TestDecodeEmpty covers pages whose body is empty: a v2 page of nulls only
// may have nothing to decompress, and no codec may try.
func TestDecodeEmpty(t *testing.T) {
	for _, tc := range allCodecs {
		out, err := mustNew(t, tc.codec, 0).Decode([]byte("x"), nil, 0)
		if err != nil || string(out) != "x" {
			t.Errorf("%v: Decode(empty, 0) = %q, %v", tc.codec, out, err)
		}
		if tc.codec != meta.CodecUncompressed {
			if _, err := mustNew(t, tc.codec, 0).Decode(nil, nil, 10); err == nil {
				t.Errorf("%v: empty input accepted for 10 bytes", tc.codec)
			}
		}
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		codec meta.CompressionCodec
		level int
		want  string
	}{
		{meta.CodecLZO, 0, "unsupported"},
		{meta.CompressionCodec(42), 0, "unsupported"},
		{meta.CodecSnappy, 1, "takes no compression level"},
		{meta.CodecUncompressed, 3, "takes no compression level"},
		{meta.CodecZstd, 23, "out of range 1–22"},
		{meta.CodecZstd, -1, "out of range"},
		{meta.CodecGzip, 10, "out of range 1–9"},
		{meta.CodecBrotli, 12, "out of range 1–11"},
		{meta.CodecLZ4Raw, 10, "out of range 1–9"},
	}
	for _, tt := range tests {
		_, err := New(tt.codec, Level(tt.level))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v, Level(%d)): error %v, want it to mention %q", tt.codec, tt.level, err, tt.want)
		}
	}
	if _, err := New(meta.CodecLZO); !errors.Is(err, ErrUnsupported) {
		t.Errorf("LZO: %v, want ErrUnsupported", err)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in    string
		codec meta.CompressionCodec
		level int
		err   string
	}{
		{in: "zstd", codec: meta.CodecZstd},
		{in: "zstd:3", codec: meta.CodecZstd, level: 3},
		{in: " ZSTD:19 ", codec: meta.CodecZstd, level: 19},
		{in: "snappy", codec: meta.CodecSnappy},
		{in: "gzip:9", codec: meta.CodecGzip, level: 9},
		{in: "lz4_raw", codec: meta.CodecLZ4Raw},
		{in: "lz4raw", codec: meta.CodecLZ4Raw},
		{in: "lz4_raw:9", codec: meta.CodecLZ4Raw, level: 9},
		{in: "brotli:5", codec: meta.CodecBrotli, level: 5},
		{in: "none", codec: meta.CodecUncompressed},
		{in: "uncompressed", codec: meta.CodecUncompressed},
		{in: "lz4", err: "deprecated; use lz4_raw"},
		{in: "lzo", err: "unknown codec"},
		{in: "", err: "unknown codec"},
		{in: "zstd:", err: "not a non-zero integer"},
		{in: "zstd:0", err: "not a non-zero integer"},
		{in: "zstd:high", err: "not a non-zero integer"},
		{in: "zstd:23", err: "out of range"},
		{in: "gzip:10", err: "out of range"},
		{in: "snappy:1", err: "takes no compression level"},
	}
	for _, tt := range tests {
		codec, level, err := Parse(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "allowed: none, uncompressed, snappy") {
				t.Errorf("Parse(%q): error %v, want %q and the allowed values", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || codec != tt.codec || level != tt.level {
			t.Errorf("Parse(%q) = %v, %d, %v; want %v, %d", tt.in, codec, level, err, tt.codec, tt.level)
			continue
		}
		// Whatever Parse accepts, New accepts.
		if _, err := New(codec, Level(level)); err != nil {
			t.Errorf("New after Parse(%q): %v", tt.in, err)
		}
	}
}

// TestConcurrent shares one codec between goroutines; run with -race.
func TestConcurrent(t *testing.T) {
	inputs := testInputs()
	srcs := [][]byte{inputs["64KiB text"], inputs["odd size 70001"], inputs["one byte"]}
	for _, tc := range allCodecs {
		codec := mustNew(t, tc.codec, 0)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				var enc, dec []byte
				for i := range 20 {
					src := srcs[(g+i)%len(srcs)]
					var err error
					if enc, err = codec.Encode(enc[:0], src); err != nil {
						errs <- err
						return
					}
					if dec, err = codec.Decode(dec[:0], enc, len(src)); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(dec, src) {
						errs <- fmt.Errorf("%v: concurrent round trip differs", tc.codec)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

func TestGzipConcatenatedMembers(t *testing.T) {
	codec := mustNew(t, meta.CodecGzip, 0)
	parts := [][]byte{[]byte("first member, "), []byte("second member, "), {}, bytes.Repeat([]byte("third "), 1000)}
	var src, want []byte
	for _, p := range parts {
		var err error
		if src, err = codec.Encode(src, p); err != nil {
			t.Fatal(err)
		}
		want = append(want, p...)
	}
	got, err := codec.Decode(nil, src, len(want))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %q…, want %q…", got[:min(40, len(got))], want[:40])
	}
	// Trailing garbage after the last member is corruption, not padding.
	if _, err := codec.Decode(nil, append(bytes.Clone(src), 1, 2, 3), len(want)); err == nil {
		t.Error("trailing garbage accepted")
	}
	// A flipped CRC byte in the last member's trailer is caught.
	bad := bytes.Clone(src)
	bad[len(bad)-5] ^= 1
	if _, err := codec.Decode(nil, bad, len(want)); err == nil {
		t.Error("corrupt CRC accepted")
	}
}

func TestLZ4HadoopFrames(t *testing.T) {
	codec := mustNew(t, meta.CodecLZ4, 0)
	src := testInputs()["4MiB columnar"][:3*hadoopFrameSize+1000]
	enc, err := codec.Encode(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	// Walk the framing: four frames, of 128 KiB input except the last.
	var frames []int
	for rest := enc; len(rest) > 0; {
		if len(rest) < 8 {
			t.Fatalf("%d stray bytes after %d frames", len(rest), len(frames))
		}
		raw, comp := beUint32(rest), beUint32(rest[4:])
		frames = append(frames, raw)
		rest = rest[8+comp:]
	}
	if fmt.Sprint(frames) != fmt.Sprint([]int{hadoopFrameSize, hadoopFrameSize, hadoopFrameSize, 1000}) {
		t.Fatalf("frames of %v bytes", frames)
	}
	if _, n, ok := decodeHadoop(nil, enc, len(src)); !ok || n != len(src) {
		t.Fatal("our own framing does not parse as Hadoop framing")
	}

	// A frame whose raw length is covered by two chunks, which Hadoop's
	// block stream allows.
	lz := mustNew(t, meta.CodecLZ4Raw, 0)
	a, _ := lz.Encode(nil, src[:500])
	b, _ := lz.Encode(nil, src[500:1200])
	var twoChunks []byte
	twoChunks = beAppend(twoChunks, 1200)
	twoChunks = append(beAppend(twoChunks, len(a)), a...)
	twoChunks = append(beAppend(twoChunks, len(b)), b...)
	if got, err := codec.Decode(nil, twoChunks, 1200); err != nil || !bytes.Equal(got, src[:1200]) {
		t.Errorf("two chunks in a frame: err %v", err)
	}

	// A bare LZ4 block labelled LZ4 falls back to LZ4_RAW.
	raw, _ := lz.Encode(nil, src)
	if _, _, ok := decodeHadoop(nil, raw, len(src)); ok {
		t.Fatal("raw block parses as Hadoop framing")
	}
	if got, err := codec.Decode(nil, raw, len(src)); err != nil || !bytes.Equal(got, src) {
		t.Errorf("raw fallback: err %v", err)
	}

	// Framing that is cut short fails both ways.
	if _, err := codec.Decode(nil, enc[:len(enc)-10], len(src)); err == nil {
		t.Error("truncated frames accepted")
	}
}

func beUint32(b []byte) int { return int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3]) }

func beAppend(b []byte, v int) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func BenchmarkEncode(b *testing.B) {
	benchInputs := testInputs()
	for _, tc := range allCodecs {
		codec := mustNew(b, tc.codec, 0)
		for _, name := range []string{"4MiB columnar", "1MiB random"} {
			src := benchInputs[name]
			b.Run(fmt.Sprintf("%v/%s", tc.codec, name), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				var dst []byte
				for b.Loop() {
					var err error
					if dst, err = codec.Encode(dst[:0], src); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(dst))/float64(len(src)), "ratio")
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	benchInputs := testInputs()
	for _, tc := range allCodecs {
		codec := mustNew(b, tc.codec, 0)
		for _, name := range []string{"4MiB columnar", "1MiB random"} {
			src := benchInputs[name]
			enc, err := codec.Encode(nil, src)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%v/%s", tc.codec, name), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				var dst []byte
				for b.Loop() {
					if dst, err = codec.Decode(dst[:0], enc, len(src)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseError: the fields of Parse's error tell what is wrong.
func TestParseError(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ParseError
	}{
		{"zstdd", ParseError{Setting: "zstdd", Name: "zstdd"}},
		{"LZ4", ParseError{Setting: "LZ4", Name: "lz4", Hint: "the Hadoop-framed LZ4 codec is deprecated; use lz4_raw"}},
		{"zstd:23", ParseError{Setting: "zstd:23", Name: "zstd", Level: "23", Known: true, MinLevel: 1, MaxLevel: 22}},
		{"snappy:1", ParseError{Setting: "snappy:1", Name: "snappy", Level: "1", Known: true}},
		{"lz4raw:x", ParseError{Setting: "lz4raw:x", Name: "lz4raw", Level: "x", Known: true, MinLevel: 1, MaxLevel: 9}},
	} {
		_, _, err := Parse(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): %v, want a *ParseError", tc.in, err)
			continue
		}
		got := *pe
		got.msg = ""
		if got != tc.want {
			t.Errorf("Parse(%q): %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := strings.Join(Names(), ","); got != "none,snappy,gzip,zstd,lz4_raw,brotli" {
		t.Errorf("Names() = %s", got)
	}
}
