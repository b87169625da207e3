package compress

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"
	"github.com/pqsink/pqsink/meta"
)

// defaultZstdLevel is the level of "zstd" without one: 1, the encoder's
// fastest. Parquet pages arrive already dictionary- or delta-encoded and
// at most a megabyte long, where the longer match search of level 3 (the
// usual default, DuckDB's and parquet-java's) finds little more. Measured
// on a million records of each: the sink's reference events 25.2 → 24.9
// bytes a record in `pqsink bench` with 18-33% less CPU, the same events
// converted typed 1.2% smaller, the clickstream 3.3% smaller with 17% less
// CPU, the events as VARIANT 0.16% larger. `zstd:3` keeps the old level.
const defaultZstdLevel = 1

// zstdWindow is the encoder's window: a page's default size (1 MiB), not
// the encoder's default 8 MiB. A page is compressed on its own, so a
// longer window finds nothing more in pages up to the window, and little
// in a larger one, while each pooled encoder keeps a history buffer of
// twice the window: 16 MiB each at 8 MiB, about 1 MiB at 1 MiB, heap that
// counts against the sink's memory limit. Measured with the writer's
// shape benchmarks and compress's BenchmarkEncode: output byte for byte
// the same size (a 4 MiB input too), allocations down 23% per file and
// 49% per 4 MiB encode.
const zstdWindow = 1 << 20

// maxZstdRatio bounds how much zstd can expand: no block regenerates more
// than 128 KiB, and the cheapest, an RLE block, takes 4 bytes for it. Decode
// must reserve the declared size before decoding (the decoder's cap limit
// works on capacity), so it first refuses sizes the input cannot back.
const maxZstdRatio = (128 << 10) / 4

// zstdCodec is ZSTD (RFC 8878). One encoder and one decoder serve every
// caller: EncodeAll and DecodeAll are safe for concurrent use and keep their
// own pools of block coders.
type zstdCodec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newZstd(level int) (*zstdCodec, error) {
	if level == 0 {
		level = defaultZstdLevel
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
		// An empty page still gets a frame: some readers reject 0 bytes.
		zstd.WithZeroFrames(true),
		// Pages carry their own CRC32; a frame checksum would hash every
		// page a second time.
		zstd.WithEncoderCRC(false),
		// Entropy-code the literals of a block in which no match is
		// found, as the reference zstd does at every level: at the fast
		// levels this encoder otherwise stores such a block raw, and
		// the pages that are all literals are exactly the bit-packed
		// ones (dictionary indices, deltas), whose bytes are skewed
		// but never repeat: 4-bit indices of ten values take 3.4 bits
		// a value with it, 4.0 without.
		zstd.WithAllLitEntropyCompression(true),
		zstd.WithWindowSize(zstdWindow))
	if err != nil {
		return nil, fmt.Errorf("compress: zstd: %w", err)
	}
	dec, err := zstd.NewReader(nil,
		// Decode no further than the capacity given to DecodeAll, which
		// Decode sets to the declared size: a frame claiming more fails
		// on its header, one that runs over fails within a block.
		zstd.WithDecodeAllCapLimit(true),
		// And never, whatever the caller passes, more than a page can be.
		zstd.WithDecoderMaxMemory(MaxSize))
	if err != nil {
		return nil, fmt.Errorf("compress: zstd: %w", err)
	}
	return &zstdCodec{enc: enc, dec: dec}, nil
}

func (*zstdCodec) Codec() meta.CompressionCodec { return meta.CodecZstd }

func (c *zstdCodec) Encode(dst, src []byte) ([]byte, error) {
	return c.enc.EncodeAll(src, dst), nil
}

func (c *zstdCodec) Decode(dst, src []byte, size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return dst, fmt.Errorf("compress: zstd: %w", err)
	}
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	if size > maxZstdRatio*len(src) {
		return dst, fmt.Errorf("compress: zstd: %w: %d bytes cannot expand to %d", ErrSizeMismatch, len(src), size)
	}
	start := len(dst)
	dst = grow(dst, size)[:start]
	out, err := c.dec.DecodeAll(src, dst[:start:start+size])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
			err = fmt.Errorf("%w: more than %d bytes", ErrSizeMismatch, size)
		}
		return dst, fmt.Errorf("compress: zstd: %w", err)
	}
	if n := len(out) - start; n != size {
		return dst, fmt.Errorf("compress: zstd: %w: got %d bytes, want %d", ErrSizeMismatch, n, size)
	}
	if size > 0 && &out[start] != &dst[:start+1][start] {
		// DecodeAll had to move; cannot happen within the cap limit, but
		// stay correct if it does.
		return append(dst, out[start:]...), nil
	}
	return dst[:start+size], nil
}
