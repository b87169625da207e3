package reader

// Page skipping for a caller that copies part of a column chunk (a merge
// that takes a span of a row group's rows): with the chunk's offset index
// (File.OffsetIndex) it finds the pages that lie wholly before the span,
// and passes over them without decompressing them.

import "github.com/pqsink/pqsink/meta"

// SkipPage advances over the next data page without decompressing or
// decoding it, reading a dictionary page on the way, or returns io.EOF
// after the last page. It returns the records the page header says begin
// in the page: its values for a column that is not repeated, num_rows of
// a DATA_PAGE_V2, and -1 for a DATA_PAGE of a repeated column, whose
// header does not say.
func (c *ChunkReader) SkipPage() (rows int64, err error) {
	h, err := c.skipPage()
	if err != nil {
		return 0, err
	}
	switch {
	case h.Type == meta.PageDataV2 && h.DataPageHeaderV2 != nil:
		return int64(h.DataPageHeaderV2.NumRows), nil
	case c.leaf.MaxRep > 0:
		return -1, nil
	case h.DataPageHeader != nil:
		return int64(h.DataPageHeader.NumValues), nil
	}
	return -1, nil
}

// DataPages returns the data pages passed so far, decoded by Next or
// skipped by SkipPage: the index, in the chunk's offset index, of the
// next data page.
func (c *ChunkReader) DataPages() int { return c.dataPages }

// NextOffset returns the file offset of the next page header, which the
// offset index's location of the next data page should agree with (a
// dictionary page aside).
func (c *ChunkReader) NextOffset() int64 { return c.base + int64(c.pos) }
