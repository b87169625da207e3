package writer

// Held is the memory the writer keeps between row groups, by capacity:
// its column writers' dictionaries, hash tables, page and level buffers,
// and the row groups' metadata and page index entries gathered for the
// footer. A sink that keeps writers of open files counts it in its
// memory budget; the figure is an estimate that leaves out small
// structures, not an exact heap size.
func (w *Writer) Held() int64 {
	n := int64(len(w.rowGroups)) * int64(len(w.columns)) * 512 // chunk metadata and page index entries
	for _, c := range w.columns {
		n += c.held()
	}
	return n
}

func (c *chunkWriter) held() int64 {
	n := 4*int64(cap(c.idx)) + int64(cap(c.levels)+cap(c.values)+cap(c.header)+cap(c.dictPage)) +
		int64(cap(c.page.data)+cap(c.alt.data)) + 4*int64(cap(c.ranks)+cap(c.rankOrder)) + 16*int64(len(c.hashes)) +
		24*int64(cap(c.pages))
	for _, s := range c.buf.segs {
		n += int64(cap(s))
	}
	if c.dict != nil {
		n += c.dict.held()
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
