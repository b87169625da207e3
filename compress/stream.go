package compress

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// minGrowth is the first allocation readExact makes when dst has no room.
const minGrowth = 32 << 10

// readExact appends exactly size bytes from r to dst and then requires r to
// be at its end. It grows dst with the bytes that actually arrive, doubling,
// rather than to size up front, so a page header that overstates its size
// costs no more memory than the data backs. It never reads more than one
// byte past size, which is what stops a decompression bomb.
func readExact(dst []byte, r io.Reader, size int) ([]byte, error) {
	start := len(dst)
	end := start + size
	for len(dst) < end {
		if len(dst) == cap(dst) {
			dst = slices.Grow(dst, min(end-len(dst), max(len(dst)-start, minGrowth)))
		}
		n, err := r.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			if len(dst) < end {
				return dst[:start], fmt.Errorf("%w: got %d bytes, want %d", ErrSizeMismatch, len(dst)-start, size)
			}
			break
		}
		if err != nil {
			return dst[:start], err
		}
	}
	// The stream must end here. Reading on also makes the decoder verify
	// its trailer (gzip's CRC and length).
	var extra [1]byte
	switch n, err := io.ReadFull(r, extra[:]); {
	case n > 0:
		return dst[:start], fmt.Errorf("%w: more than %d bytes", ErrSizeMismatch, size)
	case err != io.EOF:
		return dst[:start], err
	}
	return dst, nil
}

// appendWriter is an io.Writer that appends to a slice, for the streaming
// compressors.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
