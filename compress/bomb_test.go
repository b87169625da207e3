package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/pqsink/pqsink/meta"
)

const gib = 1 << 30

// zstdRLEBomb builds by hand a zstd frame of RLE blocks that decodes to
// total bytes of zeros (a multiple of 128 KiB; 1 GiB from 32 KiB): each
// 4-byte block stands for 128 KiB. With withSize the frame header declares
// the total; without, the decoder only learns it block by block.
func zstdRLEBomb(total int, withSize bool) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if withSize {
		// Frame_Header_Descriptor: 4-byte Frame_Content_Size, then a
		// Window_Descriptor of 2^(10+7) = 128 KiB.
		b = append(b, 0x80, 0x38)
		b = binary.LittleEndian.AppendUint32(b, uint32(total))
	} else {
		b = append(b, 0x00, 0x38)
	}
	const block = 128 << 10
	for i := range total / block {
		last := 0
		if i == total/block-1 {
			last = 1
		}
		h := block<<3 | 1<<1 | last // Block_Size, Block_Type RLE, Last_Block
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

// gzipBomb concatenates 1024 gzip members of 1 MiB of zeros each.
func gzipBomb(t *testing.T) []byte {
	member, err := mustNew(t, meta.CodecGzip, 9).Encode(nil, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(member, gib>>20)
}

// TestDecompressionBomb decodes inputs that expand to far more than their
// declared 1000 bytes. Each must fail quickly without allocating more than
// a few MiB, however large the expansion.
func TestDecompressionBomb(t *testing.T) {
	zeros := make([]byte, 16<<20)
	bombs := []struct {
		name  string
		codec meta.CompressionCodec
		src   []byte
	}{
		{"zstd RLE blocks, size in header", meta.CodecZstd, zstdRLEBomb(gib, true)},
		{"zstd RLE blocks, no size", meta.CodecZstd, zstdRLEBomb(gib, false)},
		{"gzip 1024 members", meta.CodecGzip, gzipBomb(t)},
	}
	for _, c := range []meta.CompressionCodec{meta.CodecZstd, meta.CodecBrotli, meta.CodecGzip, meta.CodecSnappy, meta.CodecLZ4Raw, meta.CodecLZ4} {
		enc, err := mustNew(t, c, 0).Encode(nil, zeros)
		if err != nil {
			t.Fatal(err)
		}
		bombs = append(bombs, struct {
			name  string
			codec meta.CompressionCodec
			src   []byte
		}{c.String() + " 16 MiB of zeros", c, enc})
	}

	// Check that the hand-made zstd frames are what they claim, on a
	// smaller scale.
	for _, withSize := range []bool{true, false} {
		const total = 16 << 20
		out, err := mustNew(t, meta.CodecZstd, 0).Decode(nil, zstdRLEBomb(total, withSize), total)
		if err != nil || !bytes.Equal(out, zeros) {
			t.Fatalf("zstd RLE frame (size in header %v) does not decode to 16 MiB of zeros: %v", withSize, err)
		}
	}
	runtime.GC()

	for _, bomb := range bombs {
		t.Run(bomb.name, func(t *testing.T) {
			codec := mustNew(t, bomb.codec, 0)
			// Warm the codec's pools so that only Decode is measured.
			warm, _ := codec.Encode(nil, []byte("warm up"))
			if _, err := codec.Decode(nil, warm, 7); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			out, err := codec.Decode(nil, bomb.src, 1000)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("%d bytes decoded to %d with size 1000: no error", len(bomb.src), len(out))
			}
			if bomb.codec != meta.CodecLZ4Raw && bomb.codec != meta.CodecLZ4 && !errors.Is(err, ErrSizeMismatch) {
				t.Errorf("error %v is not ErrSizeMismatch", err)
			}
			limit := uint64(4 << 20)
			if bomb.codec == meta.CodecBrotli {
				// The Brotli decoder needs a ring buffer as large as
				// the stream's window, at most 16 MiB: bounded, but
				// not by the output.
				limit = 17 << 20
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
				t.Errorf("allocated %d bytes refusing the bomb", alloc)
			}
			if elapsed > time.Second {
				t.Errorf("took %v to refuse the bomb", elapsed)
			}
		})
	}
}

// TestOverstatedSize checks the other direction: a header that declares far
// more than the data holds must not make Decode allocate it all.
func TestOverstatedSize(t *testing.T) {
	src := []byte("a short page that claims to be huge")
	for _, tc := range allCodecs[1:] {
		codec := mustNew(t, tc.codec, 0)
		enc, err := codec.Encode(nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := codec.Decode(nil, enc, len(src)); err != nil { // warm up
			t.Fatal(err)
		}
		const size = 1 << 30
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = codec.Decode(nil, enc, size)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrSizeMismatch) {
			t.Errorf("%v: error %v, want ErrSizeMismatch", tc.codec, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%v: %d bytes allocated for a 1 GiB claim", tc.codec, alloc)
		if alloc > 1<<20 {
			t.Errorf("%v: %d bytes allocated for a 1 GiB claim", tc.codec, alloc)
		}
	}
}
