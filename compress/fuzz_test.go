package compress

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
)

// fuzzMaxSize caps the declared size the fuzzer may ask for, so a run stays
// within memory while still far exceeding what the inputs can back.
const fuzzMaxSize = 8 << 20

// fuzzDecode is the shared fuzz body: Decode of arbitrary bytes under an
// arbitrary declared size must not panic, must leave dst's prefix alone, and
// on success must produce exactly size bytes that survive a round trip.
func fuzzDecode(f *testing.F, c meta.CompressionCodec) {
	codec, err := New(c)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "a", "hello, parquet", strings.Repeat("abc", 1000)} {
		enc, err := codec.Encode(nil, []byte(s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc, uint32(len(s)))
		f.Add(enc, uint32(len(s)+1))
	}
	// Seed with the real pages of this codec found in testdata.
	files, _ := filepath.Glob("testdata/*.parquet")
	for _, file := range files {
		for _, p := range filePages(f, filepath.Base(file)) {
			if p.codec == c && p.size <= fuzzMaxSize && len(p.src) < 64<<10 {
				f.Add(p.src, uint32(p.size))
			}
		}
	}
	prefix := []byte("dst")
	f.Fuzz(func(t *testing.T, src []byte, size uint32) {
		n := int(size % fuzzMaxSize)
		out, err := codec.Decode(bytes.Clone(prefix), src, n)
		if !bytes.HasPrefix(out, prefix) {
			t.Fatalf("dst prefix lost: %q", out[:min(len(out), 8)])
		}
		if err != nil {
			if len(out) != len(prefix) {
				t.Fatalf("failed Decode grew dst to %d bytes", len(out))
			}
			return
		}
		got := out[len(prefix):]
		if len(got) != n {
			t.Fatalf("Decode succeeded with %d bytes, size %d", len(got), n)
		}
		enc, err := codec.Encode(nil, got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := codec.Decode(nil, enc, n)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("re-encoded data does not round trip: %v", err)
		}
	})
}

func FuzzDecodeSnappy(f *testing.F) { fuzzDecode(f, meta.CodecSnappy) }
func FuzzDecodeGzip(f *testing.F)   { fuzzDecode(f, meta.CodecGzip) }
func FuzzDecodeBrotli(f *testing.F) { fuzzDecode(f, meta.CodecBrotli) }
func FuzzDecodeZstd(f *testing.F)   { fuzzDecode(f, meta.CodecZstd) }
func FuzzDecodeLZ4Raw(f *testing.F) { fuzzDecode(f, meta.CodecLZ4Raw) }
func FuzzDecodeLZ4(f *testing.F)    { fuzzDecode(f, meta.CodecLZ4) }
