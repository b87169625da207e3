package reader

// ColumnChunkReusing is ColumnChunk for a caller that reads chunk after
// chunk, one at a time: the new reader takes over the buffers of prev (a
// reader of any file, done with, not yet released), which must not be
// used afterwards. Chunks of similar sizes then decode into buffers
// already grown, instead of each allocating its own. prev's bytes leave
// its budget and count in the new reader's; when they do not fit there,
// they are dropped. A nil prev makes it ColumnChunk.
func (f *File) ColumnChunkReusing(prev *ChunkReader, rowGroup, column int) (*ChunkReader, error) {
	c, err := f.ColumnChunk(rowGroup, column)
	if err != nil || prev == nil {
		if prev != nil {
			prev.Release()
		}
		return c, err
	}
	c.buf, c.scratch, c.indices = prev.buf[:0], prev.scratch[:0], prev.indices[:0]
	c.page = Page{Rep: prev.page.Rep[:0], Def: prev.page.Def[:0], Values: prev.page.Values}
	c.dict = prev.dict
	// Nothing of prev's content may show through: the window starts
	// empty, and the values and dictionary are reset before each use.
	c.winOff = 0
	prev.buf, prev.scratch, prev.indices, prev.page, prev.dict = nil, nil, nil, Page{}, Values{}
	prev.Release()
	if c.reserve("buffers of the previous chunk", 0) != nil {
		c.buf, c.scratch, c.indices, c.page, c.dict = nil, nil, nil, Page{}, Values{}
	}
	return c, nil
}
