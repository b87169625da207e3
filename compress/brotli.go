package compress

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/pqsink/pqsink/meta"
)

const defaultBrotliLevel = 6

// brotliCodec is BROTLI (RFC 7932), with pooled compressors and
// decompressors.
type brotliCodec struct {
	level   int
	writers sync.Pool // *brotliWriter
	readers sync.Pool // *brotliReader
}

type brotliWriter struct {
	w   *brotli.Writer
	out appendWriter
}

type brotliReader struct {
	r   *brotli.Reader
	src bytes.Reader
}

func newBrotli(level int) *brotliCodec {
	if level == 0 {
		level = defaultBrotliLevel
	}
	return &brotliCodec{level: level}
}

func (*brotliCodec) Codec() meta.CompressionCodec { return meta.CodecBrotli }

func (c *brotliCodec) Encode(dst, src []byte) ([]byte, error) {
	w, _ := c.writers.Get().(*brotliWriter)
	if w == nil {
		w = &brotliWriter{w: brotli.NewWriterLevel(nil, c.level)}
	}
	defer c.writers.Put(w)
	w.out.b = dst
	defer func() { w.out.b = nil }()
	w.w.Reset(&w.out)
	if _, err := w.w.Write(src); err != nil {
		return dst, fmt.Errorf("compress: brotli: %w", err)
	}
	if err := w.w.Close(); err != nil {
		return dst, fmt.Errorf("compress: brotli: %w", err)
	}
	return w.out.b, nil
}

func (c *brotliCodec) Decode(dst, src []byte, size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return dst, fmt.Errorf("compress: brotli: %w", err)
	}
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	r, _ := c.readers.Get().(*brotliReader)
	if r == nil {
		r = &brotliReader{r: brotli.NewReader(nil)}
	}
	defer c.readers.Put(r)
	r.src.Reset(src)
	defer r.src.Reset(nil)
	if err := r.r.Reset(&r.src); err != nil {
		return dst, fmt.Errorf("compress: brotli: %w", err)
	}
	out, err := readExact(dst, r.r, size)
	if err != nil {
		return out, fmt.Errorf("compress: brotli: %w", err)
	}
	return out, nil
}
