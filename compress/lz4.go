package compress

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
	"github.com/pqsink/pqsink/meta"
)

// maxLZ4Ratio bounds how much an LZ4 block can expand: every output byte
// beyond a sequence's first 18 needs a 255-valued length byte, so a block
// never decodes to more than 255 times its size. Decode refuses a declared
// size beyond that before allocating.
const maxLZ4Ratio = 255

// lz4Compressor holds pooled block compressors: neither lz4.Compressor nor
// lz4.CompressorHC may be shared between goroutines.
type lz4Compressor struct {
	depth lz4.CompressionLevel // 0: fast compressor, else HC search depth
	pool  sync.Pool
}

func newLZ4Compressor(level int) lz4Compressor {
	var depth lz4.CompressionLevel
	if level > 0 {
		depth = lz4.CompressionLevel(1 << (8 + level)) // lz4.Level1 … lz4.Level9
	}
	return lz4Compressor{depth: depth}
}

// compress appends the LZ4 block of src to dst.
func (c *lz4Compressor) compress(dst, src []byte) ([]byte, error) {
	start := len(dst)
	dst = grow(dst, lz4.CompressBlockBound(len(src)))
	var (
		n   int
		err error
	)
	if c.depth == 0 {
		z, _ := c.pool.Get().(*lz4.Compressor)
		if z == nil {
			z = new(lz4.Compressor)
		}
		n, err = z.CompressBlock(src, dst[start:])
		c.pool.Put(z)
	} else {
		z, _ := c.pool.Get().(*lz4.CompressorHC)
		if z == nil {
			z = &lz4.CompressorHC{Level: c.depth}
		}
		n, err = z.CompressBlock(src, dst[start:])
		c.pool.Put(z)
	}
	if err != nil {
		return dst[:start], err
	}
	// n == 0 with a full-bound buffer means an empty src; LZ4 still needs
	// one token byte for it.
	if n == 0 {
		dst[start] = 0
		n = 1
	}
	return dst[:start+n], nil
}

// checkLZ4Size rejects sizes src could not produce.
func checkLZ4Size(src []byte, size int) error {
	if err := checkSize(size); err != nil {
		return err
	}
	if size > maxLZ4Ratio*len(src) {
		return fmt.Errorf("%w: %d bytes of LZ4 cannot expand to %d", ErrSizeMismatch, len(src), size)
	}
	return nil
}

// lz4Raw is LZ4_RAW: one LZ4 block, no framing.
type lz4Raw struct{ lz4Compressor }

func (*lz4Raw) Codec() meta.CompressionCodec { return meta.CodecLZ4Raw }

func (c *lz4Raw) Encode(dst, src []byte) ([]byte, error) {
	out, err := c.compress(dst, src)
	if err != nil {
		return dst, fmt.Errorf("compress: lz4_raw: %w", err)
	}
	return out, nil
}

func (*lz4Raw) Decode(dst, src []byte, size int) ([]byte, error) {
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	if err := checkLZ4Size(src, size); err != nil {
		return dst, fmt.Errorf("compress: lz4_raw: %w", err)
	}
	out, err := decodeLZ4Block(dst, src, size)
	if err != nil {
		return dst, fmt.Errorf("compress: lz4_raw: %w", err)
	}
	return out, nil
}

// decodeLZ4Block appends the single LZ4 block src, which must decode to
// exactly size bytes.
func decodeLZ4Block(dst, src []byte, size int) ([]byte, error) {
	start := len(dst)
	dst = grow(dst, size)
	n, err := lz4.UncompressBlock(src, dst[start:])
	if err != nil {
		// The block is corrupt, or decodes to more than size bytes.
		return dst[:start], fmt.Errorf("corrupt block or more than %d bytes: %w", size, err)
	}
	if n != size {
		return dst[:start], fmt.Errorf("%w: got %d bytes, want %d", ErrSizeMismatch, n, size)
	}
	return dst, nil
}

// hadoopFrameSize is the most input one Hadoop frame carries. Hadoop's
// decompressor works in 256 KiB buffers and fails on bigger frames; 128 KiB
// of input keeps even incompressible frames well inside them.
const hadoopFrameSize = 128 << 10

// lz4Hadoop is the deprecated LZ4 codec: the Hadoop framing parquet-mr
// inherited, a sequence of frames each holding a 4-byte big-endian
// uncompressed length and then one or more chunks of a 4-byte big-endian
// compressed length and an LZ4 block.
type lz4Hadoop struct{ lz4Compressor }

func (*lz4Hadoop) Codec() meta.CompressionCodec { return meta.CodecLZ4 }

func (c *lz4Hadoop) Encode(dst, src []byte) ([]byte, error) {
	start := len(dst)
	for len(src) > 0 {
		chunk := src[:min(len(src), hadoopFrameSize)]
		src = src[len(chunk):]
		header := len(dst)
		dst = append(dst, make([]byte, 8)...)
		var err error
		dst, err = c.compress(dst, chunk)
		if err != nil {
			return dst[:start], fmt.Errorf("compress: lz4: %w", err)
		}
		binary.BigEndian.PutUint32(dst[header:], uint32(len(chunk)))
		binary.BigEndian.PutUint32(dst[header+4:], uint32(len(dst)-header-8))
	}
	return dst, nil
}

// Decode reads the Hadoop framing and, when src does not parse as such,
// falls back to a bare LZ4 block, as other readers do: some writers labelled
// LZ4_RAW data as LZ4.
func (*lz4Hadoop) Decode(dst, src []byte, size int) ([]byte, error) {
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	if err := checkLZ4Size(src, size); err != nil {
		return dst, fmt.Errorf("compress: lz4: %w", err)
	}
	out, n, framed := decodeHadoop(dst, src, size)
	switch {
	case framed && n == size:
		return out, nil
	case framed:
		// The framing held up to its end: this is Hadoop data, just not
		// of the size the header declares.
		return dst, fmt.Errorf("compress: lz4: %w: got %d bytes, want %d", ErrSizeMismatch, n, size)
	}
	out, err := decodeLZ4Block(dst, src, size)
	if err != nil {
		return dst, fmt.Errorf("compress: lz4: neither Hadoop-framed nor a raw block: %w", err)
	}
	return out, nil
}

// decodeHadoop appends the Hadoop-framed src, up to size bytes. It returns
// the bytes decoded and whether the framing checked out to the end of src.
func decodeHadoop(dst, src []byte, size int) (out []byte, n int, framed bool) {
	start := len(dst)
	dst = grow(dst, size)
	pos := start
	for len(src) > 0 {
		if len(src) < 4 {
			return dst[:start], 0, false
		}
		frameLen := int64(binary.BigEndian.Uint32(src))
		src = src[4:]
		if frameLen > int64(start+size-pos) {
			return dst[:start], 0, false
		}
		frameEnd := pos + int(frameLen)
		// One or more chunks fill the frame; an empty frame still has one.
		for first := true; first || pos < frameEnd; first = false {
			if len(src) < 4 {
				return dst[:start], 0, false
			}
			chunkLen := int64(binary.BigEndian.Uint32(src))
			src = src[4:]
			if chunkLen > int64(len(src)) {
				return dst[:start], 0, false
			}
			k, err := lz4.UncompressBlock(src[:chunkLen], dst[pos:frameEnd])
			if err != nil {
				return dst[:start], 0, false
			}
			src = src[chunkLen:]
			pos += k
		}
	}
	return dst[:pos], pos - start, true
}
