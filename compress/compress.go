// Package compress implements the page compression codecs of Parquet
// (Compression.md): UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD, LZ4_RAW and the
// deprecated Hadoop-framed LZ4. LZO is recognised but not supported.
//
// Every codec appends to a caller-supplied buffer and is safe for concurrent
// use, so one Codec can serve all the columns that share its settings.
// Decoding treats its input as hostile: the page header's uncompressed size
// bounds the output, and memory follows the bytes actually produced.
package compress

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pqsink/pqsink/meta"
)

// Codec compresses and decompresses page bodies.
type Codec interface {
	// Codec returns the thrift enum value written in ColumnMetaData.
	Codec() meta.CompressionCodec

	// Encode appends the compressed form of src to dst.
	Encode(dst, src []byte) ([]byte, error)

	// Decode appends the decompressed form of src to dst. size is the
	// uncompressed size the page header declares: Decode fails, without
	// allocating for the excess, when src would decompress to more bytes,
	// and fails too when it decompresses to fewer.
	Decode(dst, src []byte, size int) ([]byte, error)
}

// MaxSize is the largest uncompressed size Decode accepts: page headers
// declare sizes as thrift i32.
const MaxSize = math.MaxInt32

var (
	// ErrSizeMismatch is returned, wrapped, by Decode when the data does not
	// decompress to exactly the declared size.
	ErrSizeMismatch = errors.New("decompressed size does not match the page header")

	// ErrUnsupported is returned, wrapped, by New for codecs this package
	// cannot handle (LZO, and values parquet.thrift does not define).
	ErrUnsupported = errors.New("unsupported compression codec")
)

// Option configures a codec built by New.
type Option func(*options) error

type options struct {
	level int // 0 = the codec's default
}

// Level sets the compression level. Its range depends on the codec: ZSTD
// 1–22, GZIP 1–9, BROTLI 1–11, LZ4_RAW and LZ4 1–9 (the HC compressor, with
// deeper searches as the level rises); SNAPPY and UNCOMPRESSED have no
// levels. A level outside the codec's range makes New fail. Level(0) asks
// for the default.
//
// Defaults to ZSTD 3, GZIP 6, BROTLI 6, and the fast (non-HC) compressor for
// LZ4_RAW and LZ4.
func Level(n int) Option {
	return func(o *options) error {
		o.level = n
		return nil
	}
}

// New returns the codec c, configured by opts. Decoding needs no options, so
// a reader can call New(c) for whatever codec a column chunk declares.
func New(c meta.CompressionCodec, opts ...Option) (Codec, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("compress: %v: %w", c, err)
		}
	}
	if err := checkLevel(c, o.level); err != nil {
		return nil, err
	}
	switch c {
	case meta.CodecUncompressed:
		return uncompressed{}, nil
	case meta.CodecSnappy:
		return snappyCodec{}, nil
	case meta.CodecGzip:
		return newGzip(o.level), nil
	case meta.CodecBrotli:
		return newBrotli(o.level), nil
	case meta.CodecZstd:
		return newZstd(o.level)
	case meta.CodecLZ4Raw:
		return &lz4Raw{lz4Compressor: newLZ4Compressor(o.level)}, nil
	case meta.CodecLZ4:
		return &lz4Hadoop{lz4Compressor: newLZ4Compressor(o.level)}, nil
	}
	return nil, fmt.Errorf("compress: %v: %w", c, ErrUnsupported)
}

// levelRange gives the levels each codec accepts besides 0 (the default);
// max 0 means the codec takes none.
func levelRange(c meta.CompressionCodec) (lo, hi int) {
	switch c {
	case meta.CodecZstd:
		return 1, 22
	case meta.CodecGzip, meta.CodecLZ4Raw, meta.CodecLZ4:
		return 1, 9
	case meta.CodecBrotli:
		return 1, 11
	}
	return 0, 0
}

func checkLevel(c meta.CompressionCodec, level int) error {
	if level == 0 {
		return nil
	}
	switch lo, hi := levelRange(c); {
	case hi == 0:
		return fmt.Errorf("compress: %v takes no compression level, got %d", c, level)
	case level < lo || level > hi:
		return fmt.Errorf("compress: %v level %d out of range %d–%d", c, level, lo, hi)
	}
	return nil
}

// checkSize rejects sizes no page header can declare.
func checkSize(size int) error {
	if size < 0 || size > MaxSize {
		return fmt.Errorf("declared size %d outside 0–%d", size, MaxSize)
	}
	return nil
}

// grow returns dst with room for n more bytes and those n bytes in view:
// dst[:len(dst)+n].
func grow(dst []byte, n int) []byte {
	return slices.Grow(dst, n)[:len(dst)+n]
}

// uncompressed is the UNCOMPRESSED codec: pages are stored as they are.
type uncompressed struct{}

func (uncompressed) Codec() meta.CompressionCodec { return meta.CodecUncompressed }

func (uncompressed) Encode(dst, src []byte) ([]byte, error) { return append(dst, src...), nil }

func (uncompressed) Decode(dst, src []byte, size int) ([]byte, error) {
	if len(src) != size {
		return dst, fmt.Errorf("compress: uncompressed: %w: page has %d bytes, header says %d", ErrSizeMismatch, len(src), size)
	}
	return append(dst, src...), nil
}
