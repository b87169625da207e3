package reader

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
)

// Partial reads of a column chunk, for a caller that copies a span of a
// row group's rows (a merge of files whose Kafka ranges interleave): with
// the chunk's offset index (File.OffsetIndex) it goes straight to the page
// where the span begins (SkipTo), reading nothing of the pages before it
// but the chunk's dictionary, and reads no further ahead than the page
// after the span's last (LimitReads).

// SkipTo passes over the data pages before data page k of the chunk,
// which begins at file offset off (its location in the offset index),
// without reading them. A dictionary page at the chunk's start is read
// first: the pages after it need it. The pages passed are not checked
// against the chunk's value count, as the pages read are.
func (c *ChunkReader) SkipTo(k int, off int64) error {
	pos := off - c.base
	switch {
	case k < c.dataPages || pos < int64(c.pos) || pos >= int64(c.length):
		return c.errorf(off, corrupt("data page %d at offset %d is not ahead in the chunk (at data page %d, offset %d, of a chunk of %d bytes from offset %d)",
			k, off, c.dataPages, c.base+int64(c.pos), c.length, c.base))
	case k == c.dataPages:
		if pos != int64(c.pos) {
			return c.errorf(off, corrupt("the offset index places data page %d at offset %d, the pages at %d", k, off, c.base+int64(c.pos)))
		}
		return nil
	}
	if d := c.cm.DictionaryPageOffset; d != nil && *d == c.base && c.base < c.cm.DataPageOffset && !c.hasDict && c.pos == 0 {
		// Read the dictionary alone, not a window of the pages after it.
		saved := c.readEnd
		c.readEnd = int(c.cm.DataPageOffset - c.base)
		h, body, hoff, err := c.nextHeader()
		c.readEnd = saved
		if err != nil {
			return err
		}
		if h.Type != meta.PageDictionary {
			return c.errorf(hoff, corrupt("the chunk's first page is a %v, not the dictionary its metadata declares", h.Type))
		}
		if err := c.readDictionary(h, body); err != nil {
			return c.errorf(hoff, err)
		}
		c.pageNum++
		if int64(c.pos) > pos {
			return c.errorf(off, corrupt("the offset index places data page %d at offset %d, inside the dictionary page", k, off))
		}
	}
	c.pageNum += k - c.dataPages
	c.dataPages = k
	c.pos = int(pos)
	c.jumped = true
	return nil
}

// LimitReads makes the reader read no bytes of the chunk at or past file
// offset end ahead of need: a page there is read when it is asked for,
// and no window reaches beyond it before. A merge that copies a span of
// the chunk's rows gives the offset of the page after the span's last.
func (c *ChunkReader) LimitReads(end int64) error {
	if end <= c.base || end > c.base+int64(c.length) {
		return fmt.Errorf("reader: limit at offset %d is outside the chunk, offsets %d to %d", end, c.base, c.base+int64(c.length))
	}
	c.readEnd = int(end - c.base)
	return nil
}

// DataPages returns the data pages passed so far, decoded by Next or
// skipped: the index, in the chunk's offset index, of the next data page.
func (c *ChunkReader) DataPages() int { return c.dataPages }
