package compress

import (
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/pqsink/pqsink/meta"
)

// snappyCodec is SNAPPY, through s2's Snappy-compatible block functions.
type snappyCodec struct{}

func (snappyCodec) Codec() meta.CompressionCodec { return meta.CodecSnappy }

func (snappyCodec) Encode(dst, src []byte) ([]byte, error) {
	n := s2.MaxEncodedLen(len(src))
	if n < 0 {
		return dst, fmt.Errorf("compress: snappy: %d-byte page too large", len(src))
	}
	start := len(dst)
	dst = grow(dst, n)
	out := s2.EncodeSnappy(dst[start:], src)
	return dst[:start+len(out)], nil
}

func (snappyCodec) Decode(dst, src []byte, size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return dst, fmt.Errorf("compress: snappy: %w", err)
	}
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	// A Snappy block starts with its decoded length: check it against the
	// header before allocating anything.
	n, err := s2.DecodedLen(src)
	if err != nil {
		return dst, fmt.Errorf("compress: snappy: %w", err)
	}
	if n != size {
		return dst, fmt.Errorf("compress: snappy: %w: block declares %d bytes, header %d", ErrSizeMismatch, n, size)
	}
	start := len(dst)
	dst = grow(dst, size)
	out, err := s2.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], fmt.Errorf("compress: snappy: %w", err)
	}
	if len(out) != size {
		return dst[:start], fmt.Errorf("compress: snappy: %w: got %d bytes, want %d", ErrSizeMismatch, len(out), size)
	}
	return dst, nil
}
