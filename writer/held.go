package writer

// Held is the memory the writer keeps between row groups, by capacity:
// the row groups' metadata and page index entries gathered for the
// footer, its column writers' page plans and bloom hashes, and, unless
// the writer shares it (SharedScratch), the working memory of encoding
// (dictionaries, page and level buffers). A sink that keeps writers of
// open files counts it in its memory budget; the figure is an estimate
// that leaves out small structures, not an exact heap size.
func (w *Writer) Held() int64 {
	n := int64(len(w.rowGroups)) * int64(len(w.columns)) * 512 // chunk metadata and page index entries
	for _, c := range w.columns {
		n += c.held()
	}
	if w.ownScratch {
		n += w.scratch.Held()
	}
	return n
}

func (c *chunkWriter) held() int64 {
	n := 16*int64(len(c.hashes)) + 24*int64(cap(c.pages))
	for _, s := range c.buf.segs {
		n += int64(cap(s))
	}
	return n
}

func (t *table) held() int64 { return 4 * int64(cap(t.slots)) }

func (d *valueList[T]) held() int64 {
	return d.table.held() + int64(d.width)*int64(cap(d.list))
}

func (d *bytesDict) held() int64 {
	return d.table.held() + int64(cap(d.data)) + 4*int64(cap(d.offsets)) + 8*int64(cap(d.hashes)) + 24*int64(cap(d.short))
}
