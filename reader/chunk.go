package reader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"unsafe"

	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// Page is one decoded data page of a column chunk.
type Page struct {
	// Type is DATA_PAGE or DATA_PAGE_V2.
	Type meta.PageType
	// Encoding is the encoding of the values as the page header declares
	// it; dictionary indices have been resolved in Values.
	Encoding meta.Encoding
	// Offset is the file offset of the page header.
	Offset int64
	// NumValues is the number of entries: levels, null or not.
	NumValues int
	// NumRows is the number of records that start in the page.
	NumRows int
	// Rep and Def are the repetition and definition levels, one per entry;
	// nil when the column's maximum level is 0.
	Rep, Def []uint8
	// Values are the non-null values, one per entry whose definition level
	// is the column's maximum.
	Values Values
}

// ChunkReader iterates the pages of one column chunk. The chunk's bytes are
// read in windows of up to 8 MiB (or one page, when a page is larger), so a
// chunk of small pages is one request and memory follows the page, not the
// chunk. Everything it holds counts against the read's memory budget (see
// MaxMemory). It is not safe for concurrent use.
type ChunkReader struct {
	f        *File
	rowGroup int
	leaf     *schema.Node
	cm       *meta.ColumnMetaData
	codec    compress.Codec
	mem      *budget
	held     int64 // bytes charged to mem

	buf    []byte // a window of the chunk, from chunk offset winOff
	winOff int
	length int   // the chunk's length
	base   int64 // file offset of the chunk
	pos    int   // chunk offset of the next page header
	// readEnd, when positive, is the chunk offset that windows do not
	// read past unless a page needs it (SkipTo's caller knows where the
	// pages it wants end).
	readEnd int
	// jumped says SkipTo passed pages unread: valuesSeen counts only the
	// values of the pages read since.
	jumped bool

	pageNum    int   // ordinal of the next page, for errors
	valuesSeen int64 // levels of the data pages read so far
	dataPages  int   // data pages passed, decoded or skipped
	decoded    int   // data pages decoded
	hasDict    bool
	dict       Values

	page    Page
	header  meta.PageHeader
	scratch []byte
	indices []int32
}

// ColumnChunk returns a reader of the pages of the chunk of leaf column
// column in row group rowGroup. The reader has a memory budget of its own,
// of the size given by MaxMemory.
func (f *File) ColumnChunk(rowGroup, column int) (*ChunkReader, error) {
	return f.columnChunk(rowGroup, column, newBudget(f.opts.maxMemory))
}

// chunkWindow is the most bytes of a chunk read in one request, unless a
// page needs more.
const chunkWindow = 8 << 20

func (f *File) columnChunk(rowGroup, column int, mem *budget) (*ChunkReader, error) {
	cc, err := f.chunkMeta(rowGroup, column)
	if err != nil {
		return nil, err
	}
	leaf := f.schema.Leaves()[column]
	where := fmt.Sprintf("reader: row group %d, column %s", rowGroup, leaf.PathString())
	cm := cc.MetaData
	codec, err := compress.New(cm.Codec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", where, ErrUnsupported, err)
	}
	start := cm.DataPageOffset
	// A dictionary page comes first. Some writers set
	// dictionary_page_offset to 0 for "none"; only an offset before the
	// first data page can be the dictionary's.
	if d := cm.DictionaryPageOffset; d != nil && *d >= int64(len(magic)) && *d < start {
		start = *d
	}
	length := cm.TotalCompressedSize
	if f.dictHeaderUncounted && start < f.size {
		// PARQUET-816: old parquet-mr left the dictionary page header out
		// of total_compressed_size. Allow for it, within the file, as other
		// readers do.
		length = min(length+maxDictHeaderSize, f.size-start)
	}
	if start < int64(len(magic)) || length > f.size-start {
		return nil, fmt.Errorf("%s: %w: chunk at offset %d of %d bytes exceeds the %d-byte file", where, ErrCorrupt, start, length, f.size)
	}
	return &ChunkReader{
		f: f, rowGroup: rowGroup, leaf: leaf, cm: cm, codec: codec, mem: mem,
		length: int(length), base: start,
	}, nil
}

// capacity returns the bytes the reader's buffers hold.
func (c *ChunkReader) capacity() int64 {
	n := int64(cap(c.buf)) + int64(cap(c.scratch)) + 4*int64(cap(c.indices)) +
		int64(cap(c.page.Rep)) + int64(cap(c.page.Def))
	return n + c.page.Values.capacity() + c.dict.capacity()
}

// reserve makes sure the buffers and extra more bytes fit in the budget,
// and charges them; with extra 0 it brings the charge up to date after an
// allocation.
func (c *ChunkReader) reserve(what string, extra int64) error {
	return c.mem.set(what, &c.held, c.capacity()+max(extra, 0))
}

// Release drops the reader's buffers and returns their bytes to the budget.
// The reader must not be used afterwards.
func (c *ChunkReader) Release() {
	c.buf, c.scratch, c.indices, c.page, c.dict = nil, nil, nil, Page{}, Values{}
	c.mem.set("", &c.held, 0)
}

// takeScratch decodes n PLAIN byte arrays in src into v in place, when
// src lies in the decompression buffer: v takes the buffer over, and its
// own becomes the next decompression buffer.
func (c *ChunkReader) takeScratch(v *Values, src []byte, n int) bool {
	if len(src) == 0 || v.Type != meta.TypeByteArray {
		return false
	}
	buf := c.scratch[:cap(c.scratch)]
	if len(buf) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if start < base || start+uintptr(len(src)) > base+uintptr(len(buf)) {
		return false // src is the chunk's bytes, read uncompressed
	}
	old := v.Data[:0]
	if !v.plainInPlace(src, n) {
		return false
	}
	if v.shared {
		old = nil
	}
	c.scratch = old
	return true
}

// window returns the n bytes of the chunk at chunk offset off, reading a
// new window when the current one does not hold them.
func (c *ChunkReader) window(off, n int) ([]byte, error) {
	if off >= c.winOff && off+n <= c.winOff+len(c.buf) {
		return c.buf[off-c.winOff : off-c.winOff+n], nil
	}
	size := min(max(n, chunkWindow), c.length-off)
	if c.readEnd > 0 {
		size = max(n, min(size, c.readEnd-off))
	}
	if size > cap(c.buf) {
		c.buf = nil
		if err := c.reserve(fmt.Sprintf("a %d-byte window of the column chunk", size), int64(size)); err != nil {
			return nil, err
		}
		c.buf = make([]byte, size)
	}
	c.buf = c.buf[:size]
	if err := readAt(c.f.r, c.buf, c.base+int64(off)); err != nil {
		c.buf = c.buf[:0]
		return nil, fmt.Errorf("reading %d bytes of the chunk at offset %d: %w", size, c.base+int64(off), err)
	}
	c.winOff = off
	if err := c.reserve("the column chunk", 0); err != nil {
		return nil, err
	}
	return c.buf[:n], nil
}

// Column returns the leaf of the schema the chunk holds.
func (c *ChunkReader) Column() *schema.Node { return c.leaf }

// Metadata returns the chunk's metadata from the footer.
func (c *ChunkReader) Metadata() *meta.ColumnMetaData { return c.cm }

// Dictionary returns the chunk's dictionary, or nil if it has none or its
// page has not been read yet (it is read by the first call to Next).
func (c *ChunkReader) Dictionary() *Values {
	if !c.hasDict {
		return nil
	}
	return &c.dict
}

// errorf returns an error that names the chunk and the page at offset off.
func (c *ChunkReader) errorf(off int64, err error) error {
	return fmt.Errorf("reader: row group %d, column %s, page %d at offset %d: %w",
		c.rowGroup, c.leaf.PathString(), c.pageNum, off, err)
}

// Next decodes and returns the next data page, or io.EOF after the last.
// The page and its slices are valid until the next call.
func (c *ChunkReader) Next() (*Page, error) {
	for {
		h, body, off, err := c.nextHeader()
		if err != nil {
			return nil, err
		}
		switch h.Type {
		case meta.PageDictionary:
			if err := c.readDictionary(h, body); err != nil {
				return nil, c.errorf(off, err)
			}
		case meta.PageData, meta.PageDataV2:
			if err := c.readData(h, body, off); err != nil {
				return nil, c.errorf(off, err)
			}
			c.pageNum++
			c.dataPages++
			c.decoded++
			return &c.page, nil
		}
		// Index pages and page types from the future carry nothing this
		// reader needs; their size is known, so they are skipped.
		c.pageNum++
	}
}

// skipPage advances over the next data page without decompressing it and
// returns its header, or io.EOF. A dictionary page on the way is read.
func (c *ChunkReader) skipPage() (*meta.PageHeader, error) {
	for {
		h, body, off, err := c.nextHeader()
		if err != nil {
			return nil, err
		}
		if h.Type == meta.PageDictionary {
			if err := c.readDictionary(h, body); err != nil {
				return nil, c.errorf(off, err)
			}
			c.pageNum++
			continue
		}
		c.pageNum++
		var n int32
		switch {
		case h.Type == meta.PageData && h.DataPageHeader != nil:
			n = h.DataPageHeader.NumValues
		case h.Type == meta.PageDataV2 && h.DataPageHeaderV2 != nil:
			n = h.DataPageHeaderV2.NumValues
		default:
			continue
		}
		if err := c.checkCount(n); err != nil {
			return nil, c.errorf(off, err)
		}
		c.valuesSeen += int64(n)
		c.dataPages++
		return h, nil
	}
}

// maxPageHeader bounds the bytes a page header may take. Headers carry
// statistics, whose min and max writers truncate; 16 MiB is far above any
// header seen, and a header that does not fit in it is corrupt.
const maxPageHeader = 16 << 20

// nextHeader decodes the next page header, checks the sizes it declares and
// the CRC, and returns it with the page body and the header's file offset.
func (c *ChunkReader) nextHeader() (*meta.PageHeader, []byte, int64, error) {
	off := c.base + int64(c.pos)
	// A chunk ends with its bytes or, since the PARQUET-816 allowance may
	// reach into the next chunk, once its declared values have been read.
	if c.pos >= c.length || (c.dataPages > 0 && c.valuesSeen >= c.cm.NumValues) {
		if c.valuesSeen < c.cm.NumValues && !c.jumped {
			return nil, nil, off, c.errorf(off, corrupt("chunk ends after %d of the %d values its metadata declares", c.valuesSeen, c.cm.NumValues))
		}
		return nil, nil, off, io.EOF
	}
	h := &c.header
	var n int
	rest := c.length - c.pos
	for want := min(4<<10, rest); ; want = min(4*want, rest, maxPageHeader) {
		if c.pos >= c.winOff && c.pos < c.winOff+len(c.buf) {
			// Use all the window holds.
			want = max(want, c.winOff+len(c.buf)-c.pos)
		}
		src, err := c.window(c.pos, want)
		if err != nil {
			return nil, nil, off, c.errorf(off, err)
		}
		n, err = h.Decode(src)
		if err == nil {
			break
		}
		if !errors.Is(err, meta.ErrUnexpectedEOF) {
			return nil, nil, off, c.errorf(off, fmt.Errorf("%w: page header: %w", ErrCorrupt, err))
		}
		if want >= rest {
			return nil, nil, off, c.errorf(off, corrupt("page header runs past the chunk end at offset %d: %v", c.base+int64(c.length), err))
		}
		if want >= maxPageHeader {
			return nil, nil, off, c.errorf(off, corrupt("page header longer than %d bytes: %v", maxPageHeader, err))
		}
	}
	bodyStart := c.pos + n
	switch {
	case h.CompressedPageSize < 0 || h.UncompressedPageSize < 0:
		return nil, nil, off, c.errorf(off, corrupt("negative page size (compressed %d, uncompressed %d)", h.CompressedPageSize, h.UncompressedPageSize))
	case int(h.CompressedPageSize) > c.length-bodyStart:
		return nil, nil, off, c.errorf(off, corrupt("compressed size %d exceeds chunk end %d", h.CompressedPageSize, c.base+int64(c.length)))
	}
	body, err := c.window(bodyStart, int(h.CompressedPageSize))
	if err != nil {
		return nil, nil, off, c.errorf(off, err)
	}
	c.pos = bodyStart + len(body)
	if h.CRC != nil && c.f.opts.verifyChecksums {
		if got := crc32.ChecksumIEEE(body); got != uint32(*h.CRC) {
			return nil, nil, off, c.errorf(off, fmt.Errorf("%w: header says %08x, page bytes give %08x", ErrChecksum, uint32(*h.CRC), got))
		}
	}
	return h, body, off, nil
}

// decompress returns the uncompressed form of src, which must be size
// bytes long once decompressed.
func (c *ChunkReader) decompress(src []byte, size int) ([]byte, error) {
	if c.cm.Codec == meta.CodecUncompressed || (len(src) == 0 && size == 0) {
		if len(src) != size {
			return nil, corrupt("page holds %d bytes, header says %d uncompressed", len(src), size)
		}
		return src, nil
	}
	if err := c.reserve(fmt.Sprintf("a page of %d bytes uncompressed", size), int64(size-cap(c.scratch))); err != nil {
		return nil, err
	}
	out, err := c.codec.Decode(c.scratch[:0], src, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", ErrCorrupt, c.cm.Codec, err)
	}
	c.scratch = out
	return out, c.reserve("a decompressed page", 0)
}

func (c *ChunkReader) readDictionary(h *meta.PageHeader, body []byte) error {
	dh := h.DictionaryPageHeader
	switch {
	case dh == nil:
		return corrupt("dictionary page without a dictionary_page_header")
	case c.hasDict:
		return corrupt("second dictionary page")
	case c.dataPages > 0:
		return corrupt("dictionary page after a data page")
	case dh.Encoding != meta.EncodingPlain && dh.Encoding != meta.EncodingPlainDictionary:
		return fmt.Errorf("%w: dictionary encoding %v", ErrUnsupported, dh.Encoding)
	case dh.NumValues < 0:
		return corrupt("negative dictionary size %d", dh.NumValues)
	}
	data, err := c.decompress(body, int(h.UncompressedPageSize))
	if err != nil {
		return fmt.Errorf("dictionary: %w", err)
	}
	n := int(dh.NumValues)
	if need := minEncodedBytes(c.leaf.Physical, int(c.leaf.Length), n); need > int64(len(data)) {
		return corrupt("dictionary of %d values needs at least %d bytes, page has %d", n, need, len(data))
	}
	c.dict.reset(c.leaf.Physical, int(c.leaf.Length))
	if err := c.reserve(fmt.Sprintf("a dictionary of %d values", n), c.dict.decodedSize(n, int64(len(data)))); err != nil {
		return err
	}
	if !c.takeScratch(&c.dict, data, n) {
		if err := c.dict.decode(encoding.Plain{}, data, n); err != nil {
			return fmt.Errorf("%w: dictionary: %w", ErrCorrupt, err)
		}
	}
	if err := c.reserve("a dictionary", 0); err != nil {
		return err
	}
	// The dictionary outlives the decompression buffer it was decoded from
	// only through copies: byte arrays were appended to dict.Data.
	c.hasDict = true
	return nil
}

func (c *ChunkReader) readData(h *meta.PageHeader, body []byte, off int64) error {
	p := &c.page
	maxRep, maxDef := c.leaf.MaxRep, c.leaf.MaxDef
	*p = Page{Type: h.Type, Offset: off, Rep: p.Rep[:0], Def: p.Def[:0], Values: p.Values}
	p.Values.reset(c.leaf.Physical, int(c.leaf.Length))

	var n int
	var values []byte
	switch h.Type {
	case meta.PageData:
		dh := h.DataPageHeader
		if dh == nil {
			return corrupt("DATA_PAGE without a data_page_header")
		}
		if err := c.checkCount(dh.NumValues); err != nil {
			return err
		}
		n, p.Encoding = int(dh.NumValues), dh.Encoding
		data, err := c.decompress(body, int(h.UncompressedPageSize))
		if err != nil {
			return err
		}
		if err := c.reserveLevels(n); err != nil {
			return err
		}
		// Repetition levels come first, then definition levels.
		if maxRep > 0 {
			if p.Rep, data, err = levelsV1(p.Rep, dh.RepetitionLevelEncoding, data, maxRep, n); err != nil {
				return fmt.Errorf("%w: repetition levels: %w", ErrCorrupt, err)
			}
		}
		if maxDef > 0 {
			if p.Def, data, err = levelsV1(p.Def, dh.DefinitionLevelEncoding, data, maxDef, n); err != nil {
				return fmt.Errorf("%w: definition levels: %w", ErrCorrupt, err)
			}
		}
		values = data
	case meta.PageDataV2:
		dh := h.DataPageHeaderV2
		if dh == nil {
			return corrupt("DATA_PAGE_V2 without a data_page_header_v2")
		}
		if err := c.checkCount(dh.NumValues); err != nil {
			return err
		}
		n, p.Encoding = int(dh.NumValues), dh.Encoding
		repLen, defLen := int(dh.RepetitionLevelsByteLength), int(dh.DefinitionLevelsByteLength)
		if repLen < 0 || defLen < 0 || repLen+defLen > len(body) || repLen+defLen > int(h.UncompressedPageSize) {
			return corrupt("level lengths %d+%d exceed the page's %d bytes", repLen, defLen, len(body))
		}
		if dh.NumRows < 0 || int(dh.NumRows) > n {
			return corrupt("num_rows %d outside 0..num_values %d", dh.NumRows, n)
		}
		if err := c.reserveLevels(n); err != nil {
			return err
		}
		var err error
		if maxRep > 0 {
			if p.Rep, err = encoding.DecodeLevels(p.Rep, body[:repLen], encoding.BitWidth(uint64(maxRep)), n); err != nil {
				return fmt.Errorf("%w: repetition levels: %w", ErrCorrupt, err)
			}
		}
		if maxDef > 0 {
			if p.Def, err = encoding.DecodeLevels(p.Def, body[repLen:repLen+defLen], encoding.BitWidth(uint64(maxDef)), n); err != nil {
				return fmt.Errorf("%w: definition levels: %w", ErrCorrupt, err)
			}
		}
		values = body[repLen+defLen:]
		size := int(h.UncompressedPageSize) - repLen - defLen
		if dh.IsCompressed == nil || *dh.IsCompressed {
			if values, err = c.decompress(values, size); err != nil {
				return err
			}
		} else if len(values) != size {
			return corrupt("uncompressed values section has %d bytes, header says %d", len(values), size)
		}
	}
	if err := c.reserve("the levels of a page", 0); err != nil {
		return err
	}
	p.NumValues = n
	c.valuesSeen += int64(n)
	if c.valuesSeen > c.cm.NumValues {
		return corrupt("pages hold more than the %d values the chunk metadata declares", c.cm.NumValues)
	}

	nonNull := n
	if maxDef > 0 {
		nonNull = 0
		for _, d := range p.Def {
			switch {
			case int(d) == maxDef:
				nonNull++
			case int(d) > maxDef:
				return corrupt("definition level %d above the maximum %d", d, maxDef)
			}
		}
	}
	p.NumRows = n
	if maxRep > 0 {
		p.NumRows = 0
		for _, r := range p.Rep {
			switch {
			case r == 0:
				p.NumRows++
			case int(r) > maxRep:
				return corrupt("repetition level %d above the maximum %d", r, maxRep)
			}
		}
	}
	if err := c.decodeValues(&p.Values, p.Encoding, values, nonNull); err != nil {
		return fmt.Errorf("%v values: %w", p.Encoding, err)
	}
	return nil
}

// checkCount checks a page's declared value count before anything is
// sized by it. The count itself is no error however large: run-length
// encodings let a few bytes describe billions of levels, so what bounds the
// memory they decode to is the budget, checked by reserveLevels.
func (c *ChunkReader) checkCount(n int32) error {
	if n < 0 {
		return corrupt("negative num_values %d", n)
	}
	if c.valuesSeen+int64(n) > c.cm.NumValues {
		return corrupt("num_values %d: pages hold more than the %d values the chunk metadata declares", n, c.cm.NumValues)
	}
	return nil
}

// reserveLevels checks that n repetition and definition levels fit in the
// budget.
func (c *ChunkReader) reserveLevels(n int) error {
	var need int64
	if c.leaf.MaxRep > 0 {
		need += int64(n - cap(c.page.Rep))
	}
	if c.leaf.MaxDef > 0 {
		need += int64(n - cap(c.page.Def))
	}
	return c.reserve(fmt.Sprintf("the levels of a page of %d values", n), need)
}

func (c *ChunkReader) decodeValues(v *Values, enc meta.Encoding, src []byte, n int) error {
	if enc == meta.EncodingPlainDictionary || enc == meta.EncodingRLEDictionary {
		if !c.hasDict {
			return corrupt("dictionary-encoded page without a dictionary page")
		}
		if err := c.reserve(fmt.Sprintf("the dictionary indices of %d values", n), 4*int64(n-cap(c.indices))); err != nil {
			return err
		}
		var err error
		c.indices, err = encoding.RLEDictionary{}.DecodeInt32(c.indices[:0], src, n)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := v.checkIndices(&c.dict, c.indices); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := c.reserve(fmt.Sprintf("%d dictionary-encoded values", n), v.gatheredSize(&c.dict, c.indices)-v.capacity()); err != nil {
			return err
		}
		if err := v.gather(&c.dict, c.indices); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return c.reserve("dictionary-encoded values", 0)
	}
	e, err := valueEncoding(enc)
	if err != nil {
		return err
	}
	if enc == meta.EncodingPlain {
		if need := minEncodedBytes(v.Type, v.Size, n); need > int64(len(src)) {
			return corrupt("%d values need at least %d bytes, page has %d", n, need, len(src))
		}
	}
	if enc == meta.EncodingPlain && v.Type == meta.TypeByteArray {
		// Decoded in place, the values take no more than their offsets.
		if err := c.reserve(fmt.Sprintf("%d values", n), 4*int64(n+1-cap(v.Offsets))); err != nil {
			return err
		}
		if c.takeScratch(v, src, n) {
			return c.reserve("the values of a page", 0)
		}
	}
	dataSize := int64(len(src))
	if enc == meta.EncodingDeltaByteArray && v.Type == meta.TypeByteArray {
		if dataSize, err = encoding.DeltaByteArraySize(src, n); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	if err := c.reserve(fmt.Sprintf("%d values", n), v.decodedSize(n, dataSize)-v.capacity()); err != nil {
		return err
	}
	v.grow(n, dataSize)
	if err := v.decode(e, src, n); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return c.reserve("the values of a page", 0)
}

// levelsV1 decodes n levels of a data page v1 from the start of src and
// returns them with the bytes that follow.
func levelsV1(dst []uint8, enc meta.Encoding, src []byte, maxLevel, n int) ([]uint8, []byte, error) {
	width := encoding.BitWidth(uint64(maxLevel))
	switch enc {
	case meta.EncodingRLE:
		if len(src) < 4 {
			return dst, nil, fmt.Errorf("need a 4-byte length, have %d bytes", len(src))
		}
		size := binary.LittleEndian.Uint32(src)
		if uint64(size) > uint64(len(src)-4) {
			return dst, nil, fmt.Errorf("length %d exceeds the %d bytes left in the page", size, len(src)-4)
		}
		dst, err := encoding.DecodeLevels(dst, src[4:4+size], width, n)
		return dst, src[4+size:], err
	case meta.EncodingBitPacked:
		size := (int64(n)*int64(width) + 7) / 8
		if size > int64(len(src)) {
			return dst, nil, fmt.Errorf("%d bit-packed levels need %d bytes, have %d", n, size, len(src))
		}
		dst, err := encoding.DecodeBitPackedLevels(dst, src[:size], width, n)
		return dst, src[size:], err
	}
	return dst, nil, fmt.Errorf("%w: level encoding %v", ErrUnsupported, enc)
}
