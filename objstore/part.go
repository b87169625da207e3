package objstore

import "io"

// partReader cuts a stream into parts and tells, for each part, whether the
// stream goes on after it. It looks one byte ahead for that, so that an
// object of exactly one part size still goes up in a single PUT, and so
// that no empty part is ever uploaded, without holding a second part buffer.
type partReader struct {
	r      io.Reader
	peek   [1]byte
	peeked bool // peek holds the first byte of the next part
}

// next fills buf with the next part and reports whether more bytes follow.
// It returns a short part only at the end of the stream.
func (p *partReader) next(buf []byte) (n int, more bool, err error) {
	if p.peeked {
		buf[0] = p.peek[0]
		n, p.peeked = 1, false
	}
	// io.EOF is compared, not matched with errors.Is: readers return it
	// bare at the end, and a failure that merely wraps it must not pass
	// for a clean end that would commit a truncated object.
	m, err := io.ReadFull(p.r, buf[n:])
	n += m
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return n, false, nil
	case err != nil:
		return n, false, err
	}
	m, err = io.ReadFull(p.r, p.peek[:])
	switch {
	case m == 1:
		p.peeked = true
		return n, true, nil
	case err == io.EOF:
		return n, false, nil
	default:
		return n, false, err
	}
}
