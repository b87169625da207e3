package compress

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/pqsink/pqsink/meta"
)

const defaultGzipLevel = 6

// gzipCodec is GZIP (RFC 1952). Compressors and decompressors are pooled:
// each holds tens of KiB of state that is costly to rebuild per page.
type gzipCodec struct {
	level   int
	writers sync.Pool // *gzipWriter
	readers sync.Pool // *gzipReader
}

type gzipWriter struct {
	z   *gzip.Writer
	out appendWriter
}

type gzipReader struct {
	z   gzip.Reader
	src bytes.Reader
}

func newGzip(level int) *gzipCodec {
	if level == 0 {
		level = defaultGzipLevel
	}
	return &gzipCodec{level: level}
}

func (*gzipCodec) Codec() meta.CompressionCodec { return meta.CodecGzip }

func (c *gzipCodec) Encode(dst, src []byte) ([]byte, error) {
	w, _ := c.writers.Get().(*gzipWriter)
	if w == nil {
		z, err := gzip.NewWriterLevel(nil, c.level)
		if err != nil {
			return dst, fmt.Errorf("compress: gzip: %w", err)
		}
		w = &gzipWriter{z: z}
	}
	defer c.writers.Put(w)
	w.out.b = dst
	defer func() { w.out.b = nil }() // don't pin the caller's buffer in the pool
	w.z.Reset(&w.out)
	if _, err := w.z.Write(src); err != nil {
		return dst, fmt.Errorf("compress: gzip: %w", err)
	}
	if err := w.z.Close(); err != nil {
		return dst, fmt.Errorf("compress: gzip: %w", err)
	}
	return w.out.b, nil
}

// Decode accepts pages of several concatenated gzip members, which
// Compression.md asks readers to support.
func (c *gzipCodec) Decode(dst, src []byte, size int) ([]byte, error) {
	if err := checkSize(size); err != nil {
		return dst, fmt.Errorf("compress: gzip: %w", err)
	}
	if len(src) == 0 && size == 0 {
		return dst, nil
	}
	r, _ := c.readers.Get().(*gzipReader)
	if r == nil {
		r = new(gzipReader)
	}
	defer c.readers.Put(r)
	r.src.Reset(src)
	defer r.src.Reset(nil)
	if err := r.z.Reset(&r.src); err != nil {
		return dst, fmt.Errorf("compress: gzip: %w", err)
	}
	r.z.Multistream(true)
	out, err := readExact(dst, &r.z, size)
	if err != nil {
		return out, fmt.Errorf("compress: gzip: %w", err)
	}
	return out, nil
}
