package reader

// Page skipping for a caller that copies part of a column chunk (a merge
// that takes a span of a row group's rows): with the chunk's offset index
// (File.OffsetIndex) it finds the pages that lie wholly before the span,
// and passes over them without decompressing them.

// SkipPage advances over the next data page without decompressing or
// decoding it, reading a dictionary page on the way, or returns io.EOF
// after the last page.
func (c *ChunkReader) SkipPage() error {
	_, err := c.skipPage()
	return err
}

// DataPages returns the data pages passed so far, decoded by Next or
// skipped by SkipPage: the index, in the chunk's offset index, of the
// next data page.
func (c *ChunkReader) DataPages() int { return c.dataPages }

// NextOffset returns the file offset of the next page header, which the
// offset index's location of the next data page should agree with (a
// dictionary page aside).
func (c *ChunkReader) NextOffset() int64 { return c.base + int64(c.pos) }
