package reader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

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
// read in one request when it is created, so memory is bounded by the
// chunk, not the file. It is not safe for concurrent use.
type ChunkReader struct {
	f        *File
	rowGroup int
	leaf     *schema.Node
	cm       *meta.ColumnMetaData
	codec    compress.Codec

	buf  []byte // the chunk
	base int64  // file offset of buf[0]
	pos  int    // offset in buf of the next page header

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
// column in row group rowGroup.
func (f *File) ColumnChunk(rowGroup, column int) (*ChunkReader, error) {
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
	buf, err := f.readRange("chunk", start, length)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &ChunkReader{
		f: f, rowGroup: rowGroup, leaf: leaf, cm: cm, codec: codec,
		buf: buf, base: start,
	}, nil
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

// nextHeader decodes the next page header, checks the sizes it declares and
// the CRC, and returns it with the page body and the header's file offset.
func (c *ChunkReader) nextHeader() (*meta.PageHeader, []byte, int64, error) {
	off := c.base + int64(c.pos)
	// A chunk ends with its bytes or, since the PARQUET-816 allowance may
	// reach into the next chunk, once its declared values have been read.
	if c.pos >= len(c.buf) || (c.dataPages > 0 && c.valuesSeen >= c.cm.NumValues) {
		if c.valuesSeen < c.cm.NumValues {
			return nil, nil, off, c.errorf(off, corrupt("chunk ends after %d of the %d values its metadata declares", c.valuesSeen, c.cm.NumValues))
		}
		return nil, nil, off, io.EOF
	}
	h := &c.header
	n, err := h.Decode(c.buf[c.pos:])
	if err != nil {
		if errors.Is(err, meta.ErrUnexpectedEOF) {
			return nil, nil, off, c.errorf(off, corrupt("page header runs past the chunk end at offset %d: %v", c.base+int64(len(c.buf)), err))
		}
		return nil, nil, off, c.errorf(off, fmt.Errorf("%w: page header: %w", ErrCorrupt, err))
	}
	bodyStart := c.pos + n
	switch {
	case h.CompressedPageSize < 0 || h.UncompressedPageSize < 0:
		return nil, nil, off, c.errorf(off, corrupt("negative page size (compressed %d, uncompressed %d)", h.CompressedPageSize, h.UncompressedPageSize))
	case int(h.CompressedPageSize) > len(c.buf)-bodyStart:
		return nil, nil, off, c.errorf(off, corrupt("compressed size %d exceeds chunk end %d", h.CompressedPageSize, c.base+int64(len(c.buf))))
	case int(h.UncompressedPageSize) > c.f.opts.maxPageSize:
		return nil, nil, off, c.errorf(off, corrupt("uncompressed size %d exceeds the %d-byte page limit", h.UncompressedPageSize, c.f.opts.maxPageSize))
	}
	body := c.buf[bodyStart : bodyStart+int(h.CompressedPageSize)]
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
	out, err := c.codec.Decode(c.scratch[:0], src, size)
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %w", ErrCorrupt, c.cm.Codec, err)
	}
	c.scratch = out
	return out, nil
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
	if err := c.dict.decode(encoding.Plain{}, data, n); err != nil {
		return fmt.Errorf("%w: dictionary: %w", ErrCorrupt, err)
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

// checkCount bounds a page's declared value count before anything is sized
// by it.
func (c *ChunkReader) checkCount(n int32) error {
	if n < 0 || int(n) > c.f.opts.maxPageValues {
		return corrupt("num_values %d outside 0..%d", n, c.f.opts.maxPageValues)
	}
	return nil
}

func (c *ChunkReader) decodeValues(v *Values, enc meta.Encoding, src []byte, n int) error {
	if enc == meta.EncodingPlainDictionary || enc == meta.EncodingRLEDictionary {
		if !c.hasDict {
			return corrupt("dictionary-encoded page without a dictionary page")
		}
		var err error
		c.indices, err = encoding.RLEDictionary{}.DecodeInt32(c.indices[:0], src, n)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if err := v.gather(&c.dict, c.indices, c.f.opts.maxPageSize); err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil
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
	if err := v.decode(e, src, n); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if v.Type == meta.TypeByteArray && len(v.Data) > c.f.opts.maxPageSize {
		return corrupt("values expand to %d bytes, over the %d-byte page limit", len(v.Data), c.f.opts.maxPageSize)
	}
	return nil
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
