package writer

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer/encoding"
)

// chunkWriter writes the column chunks of one leaf column, one per row
// group, and keeps its buffers between them.
type chunkWriter struct {
	leaf       *schema.Node
	cfg        *config
	path       []string
	codec      compress.Codec
	useDict    bool
	candidates []candidate // non-dictionary encodings to choose from; the first is the default
	order      sortOrder
	text       bool
	truncate   int
	bloomFPP   float64
	bloom      *bloom.Filter // of the chunk just written, until writeBloom
	dict       dictionary

	pages      []pageRange
	idx        []int32
	levels     []byte
	values     []byte
	body       []byte
	compressed []byte
	header     []byte
	bounds     bounds
	hashes     map[uint64]struct{}

	uncompressed int64 // of the chunk being written, page headers included

	out *countingWriter // of the chunk being written

	// ranks orders a byte-array dictionary's entries, so that the bounds
	// of a dictionary-encoded page come from comparing integers; nil when
	// there is no such dictionary.
	ranks     []int32
	rankOrder []int32

	// The dictionary page as choose compressed it, to write as is.
	dictPage      []byte
	dictPageSize  int
	dictPageReady bool
}

// pageRange is one data page's share of a column: level slots l0..l1,
// non-null values v0..v1, rows first..first+rows.
type pageRange struct {
	l0, l1, v0, v1 int
	first, rows    int
}

// pageIndex is a chunk's ColumnIndex (nil when the column has no order)
// and OffsetIndex.
type pageIndex struct {
	column *meta.ColumnIndex
	offset *meta.OffsetIndex
}

func newChunkWriter(leaf *schema.Node, cfg *config, codecs *Codecs) (*chunkWriter, error) {
	path := leaf.PathString()
	cw := &chunkWriter{
		leaf:       leaf,
		cfg:        cfg,
		path:       leaf.Path,
		useDict:    cfg.dictionary && leaf.Physical != meta.TypeBoolean,
		candidates: []candidate{{meta.EncodingPlain, encoding.Plain{}}},
		order:      orderOf(leaf),
		text:       isText(leaf),
		truncate:   cfg.truncate,
	}
	if leaf.Physical != meta.TypeByteArray || cw.order != orderBytes {
		cw.truncate = 0
	}
	if cfg.adaptive {
		cw.candidates = adaptiveCandidates(leaf)
	}
	key := codecKey{cfg.codec, cfg.level}
	if cc := cfg.columns[path]; cc != nil {
		if cc.codec != nil {
			key = codecKey{*cc.codec, cc.level}
		}
		if cc.dictionary != nil {
			cw.useDict = *cc.dictionary
			if cw.useDict && leaf.Physical == meta.TypeBoolean {
				return nil, fmt.Errorf("dictionary encoding does not apply to BOOLEAN columns")
			}
		}
		if cc.encoding != nil {
			if !encodingAllowed(*cc.encoding, leaf.Physical) {
				return nil, fmt.Errorf("encoding %s does not apply to %s columns", *cc.encoding, leaf.Physical)
			}
			enc, err := encodingFor(*cc.encoding)
			if err != nil {
				return nil, err
			}
			cw.candidates = []candidate{{*cc.encoding, enc}}
		}
		cw.bloomFPP = cc.bloomFPP
	}
	codec, err := codecs.get(key)
	if err != nil {
		return nil, err
	}
	cw.codec = codec
	if cw.useDict {
		cw.dict = newDictionary(leaf.Physical, int(leaf.Length))
	}
	return cw, nil
}

type codecKey struct {
	codec meta.CompressionCodec
	level int
}

// valueSize is the PLAIN size of value i, the measure pages are cut by.
func valueSize(c *rowgroup.Column, i int) int {
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		return 1
	case meta.TypeInt32, meta.TypeFloat:
		return 4
	case meta.TypeInt64, meta.TypeDouble:
		return 8
	case meta.TypeInt96:
		return 12
	case meta.TypeByteArray:
		return 4 + int(c.Offsets[i+1]-c.Offsets[i])
	}
	return int(c.Leaf.Length)
}

// MaxPageBytes is the most PLAIN bytes of values a data page holds. Readers
// hold a page several times over while they decode it (compressed,
// decompressed, decoded values, the record they assemble), and refuse, or
// run out of memory on, pages far below the 2 GiB that the i32 sizes of a
// page header allow: 256 MiB keeps every page readable by pqsink's reader
// under its default 1 GiB budget, by DuckDB and by arrow. A record whose
// values need more is split across pages where the format allows it (data
// page v1 without a page index), and refused otherwise.
const MaxPageBytes = 256 << 20

// maxPageBytes is MaxPageBytes, lowered by tests.
var maxPageBytes = MaxPageBytes

// planPages cuts a column into pages of about pageSize bytes and at most
// rowLimit rows. Pages start at a record boundary (repetition level 0), so
// no record is split across pages and the offset index is exact; only a
// record too big for one page (MaxPageBytes) is split, when split allows
// it, and is an error otherwise.
func planPages(pages []pageRange, c *rowgroup.Column, pageSize, rowLimit int, split bool) ([]pageRange, error) {
	pages = pages[:0]
	n := c.NumLevels()
	p := pageRange{}
	size, v := 0, 0
	maxDef, maxRep := c.MaxDef(), c.MaxRep()
	width := 0 // PLAIN size of a value, 0 for BYTE_ARRAY
	if c.Leaf.Physical != meta.TypeByteArray {
		width = valueSize(c, 0)
	}
	for l := 0; l < n; l++ {
		vs := 0 // the PLAIN size of the level's value, if it has one
		if maxDef == 0 || c.Def[l] == maxDef {
			if width > 0 {
				vs = width
			} else {
				vs = 4 + int(c.Offsets[v+1]-c.Offsets[v])
			}
		}
		if vs > maxPageBytes {
			return pages, fmt.Errorf("record %d holds a value of %d bytes, over the %d bytes a data page may hold", p.first+p.rows, vs, maxPageBytes)
		}
		full := size+vs > maxPageBytes
		switch {
		case l == p.l0:
		case maxRep == 0 || c.Rep[l] == 0:
			if size >= pageSize || p.rows >= rowLimit || full {
				p.l1, p.v1 = l, v
				pages = append(pages, p)
				p = pageRange{l0: l, v0: v, first: p.first + p.rows}
				size = 0
			}
		case full && split:
			// Split the record: the page ends before this value and the
			// next one starts inside the record (rows counts the records
			// that start in a page).
			p.l1, p.v1 = l, v
			pages = append(pages, p)
			p = pageRange{l0: l, v0: v, first: p.first + p.rows}
			size = 0
		case full:
			return pages, fmt.Errorf("record %d needs a data page of more than %d bytes, the limit that keeps pages readable; a record this large can span pages only with data page v1 and no page index", p.first+p.rows-1, maxPageBytes)
		}
		if maxRep == 0 || c.Rep[l] == 0 {
			p.rows++
		}
		if vs > 0 {
			size += vs
			v++
		}
	}
	p.l1, p.v1 = n, v
	return append(pages, p), nil
}

// writeChunk encodes column c of a row group and writes it to out.
func (cw *chunkWriter) writeChunk(out *countingWriter, c *rowgroup.Column) (meta.ColumnChunk, pageIndex, error) {
	var err error
	cw.pages, err = planPages(cw.pages, c, cw.cfg.pageSize, cw.cfg.pageRowLimit, cw.cfg.pageVersion == 1 && !cw.cfg.pageIndex)
	if err != nil {
		return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("column %s: %w", strings.Join(cw.path, "."), err)
	}
	dictPages := cw.buildDictionary(c)
	cw.dictPageReady = false
	cw.ranks = nil
	fallback := cw.candidates[0]
	if dictPages > 0 || len(cw.candidates) > 1 {
		var err error
		if dictPages, fallback, err = cw.choose(c, dictPages); err != nil {
			return meta.ColumnChunk{}, pageIndex{}, err
		}
	}

	md := &meta.ColumnMetaData{
		Type:         c.Leaf.Physical,
		PathInSchema: cw.path,
		Codec:        cw.codec.Codec(),
		NumValues:    int64(c.NumLevels()),
	}
	start := out.n
	cw.out = out
	var stats encodingStats
	if dictPages > 0 {
		hdr := meta.PageHeader{
			Type: meta.PageDictionary,
			DictionaryPageHeader: &meta.DictionaryPageHeader{
				NumValues: int32(cw.dict.len()),
				Encoding:  meta.EncodingPlain,
				IsSorted:  ptr(false),
			},
		}
		if err := cw.writeDictionaryPage(&hdr); err != nil {
			return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("dictionary page: %w", err)
		}
		md.DictionaryPageOffset = ptr(start)
		stats.add(meta.PageDictionary, meta.EncodingPlain)
	}
	md.DataPageOffset = out.n

	colIndex := &meta.ColumnIndex{}
	offIndex := &meta.OffsetIndex{}
	hasIndex := cw.cfg.statistics && cw.order != orderNone
	var chunkBounds bounds
	var nulls int64
	var unencoded int64
	var repHist, defHist []int64
	if c.MaxRep() > 0 {
		repHist = make([]int64, int(c.MaxRep())+1)
	}
	if c.MaxDef() > 0 {
		defHist = make([]int64, int(c.MaxDef())+1)
	}
	for pi, p := range cw.pages {
		enc := meta.EncodingRLEDictionary
		if pi >= dictPages {
			enc = fallback.kind
		}
		pageNulls := int64((p.l1 - p.l0) - (p.v1 - p.v0))
		nulls += pageNulls
		b := bounds{}
		if cw.cfg.statistics {
			if pi < dictPages && cw.ranks != nil {
				cw.bounds = cw.dictPageBounds(cw.bounds, p.v0, p.v1)
			} else {
				cw.bounds = pageBounds(cw.bounds, cw.order, c, p.v0, p.v1)
			}
			b = truncated(cw.bounds, cw.truncate, cw.text)
		}
		var pageRep, pageDef []int64
		if repHist != nil {
			pageRep = levelHistogram(c.Rep[p.l0:p.l1], int(c.MaxRep()))
			addHistogram(repHist, pageRep)
		}
		if defHist != nil {
			pageDef = levelHistogram(c.Def[p.l0:p.l1], int(c.MaxDef()))
			addHistogram(defHist, pageDef)
		}
		var pageBytes int64
		if c.Leaf.Physical == meta.TypeByteArray {
			pageBytes = int64(c.Offsets[p.v1] - c.Offsets[p.v0])
			unencoded += pageBytes
		}

		offset := out.n
		if err := cw.writeDataPage(c, p, fallback.impl, enc, pageNulls, b); err != nil {
			return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("page %d: %w", pi, err)
		}
		stats.add(pageTypeFor(cw.cfg.pageVersion), enc)
		loc := meta.PageLocation{Offset: offset, CompressedPageSize: int32(out.n - offset), FirstRowIndex: int64(p.first)}
		offIndex.PageLocations = append(offIndex.PageLocations, loc)
		if c.Leaf.Physical == meta.TypeByteArray {
			offIndex.UnencodedByteArrayDataBytes = append(offIndex.UnencodedByteArrayDataBytes, pageBytes)
		}
		if hasIndex {
			allNull := p.v0 == p.v1
			if !allNull && !b.ok {
				hasIndex = false // e.g. a page of NaNs only: no bound to index it by
			}
			colIndex.NullPages = append(colIndex.NullPages, allNull)
			colIndex.MinValues = append(colIndex.MinValues, append([]byte{}, b.min...))
			colIndex.MaxValues = append(colIndex.MaxValues, append([]byte{}, b.max...))
			colIndex.NullCounts = append(colIndex.NullCounts, pageNulls)
			if countsNaN(cw.order) {
				colIndex.NanCounts = append(colIndex.NanCounts, b.nans)
			}
			colIndex.RepetitionLevelHistograms = append(colIndex.RepetitionLevelHistograms, pageRep...)
			colIndex.DefinitionLevelHistograms = append(colIndex.DefinitionLevelHistograms, pageDef...)
		}
		chunkBounds.merge(cw.order, c.Leaf.Physical, b)
	}

	md.TotalCompressedSize = out.n - start
	md.TotalUncompressedSize = cw.uncompressed
	cw.uncompressed = 0
	md.Encodings = stats.encodings(c.MaxRep() > 0 || c.MaxDef() > 0)
	md.EncodingStats = stats.list
	if cw.cfg.statistics {
		st := &meta.Statistics{NullCount: ptr(nulls)}
		if countsNaN(cw.order) {
			st.NanCount = ptr(chunkBounds.nans)
		}
		if chunkBounds.ok {
			st.MinValue, st.MaxValue = chunkBounds.min, chunkBounds.max
			st.IsMinValueExact, st.IsMaxValueExact = ptr(chunkBounds.minExact), ptr(chunkBounds.maxExact)
		}
		md.Statistics = st
	}
	if cw.cfg.sizeStatistics {
		ss := &meta.SizeStatistics{RepetitionLevelHistogram: repHist, DefinitionLevelHistogram: defHist}
		if c.Leaf.Physical == meta.TypeByteArray {
			ss.UnencodedByteArrayDataBytes = ptr(unencoded)
		}
		md.SizeStatistics = ss
	}
	cw.bloom = nil
	if cw.bloomFPP > 0 {
		cw.bloom = cw.buildBloom(c)
	}
	ix := pageIndex{offset: offIndex}
	if hasIndex {
		colIndex.BoundaryOrder = boundaryOrder(cw.order, c.Leaf.Physical, colIndex)
		ix.column = colIndex
	}
	return meta.ColumnChunk{FileOffset: start, MetaData: md}, ix, nil
}

// buildDictionary fills the dictionary from the pages in order and returns
// how many leading pages it covers. A page that pushes the dictionary past
// its size limit is taken back out, and it and every later page fall back.
// When nearly all of the first distinctProbe values are distinct, no
// dictionary can pay off and the work of building one is skipped.
func (cw *chunkWriter) buildDictionary(c *rowgroup.Column) int {
	if !cw.useDict || c.NumValues() == 0 {
		return 0
	}
	cw.dict.reset()
	cw.idx = cw.idx[:0]
	probed := false
	for pi, p := range cw.pages {
		before := cw.dict.len()
		cw.idx = cw.dict.add(cw.idx, c, p.v0, p.v1)
		if cw.dict.size() > cw.cfg.dictPageSize {
			cw.dict.truncate(before)
			cw.idx = cw.idx[:p.v0]
			return pi
		}
		if !probed && p.v1 >= distinctProbe {
			probed = true
			if 10*cw.dict.len() > 9*p.v1 {
				return 0
			}
		}
	}
	return len(cw.pages)
}

// distinctProbe is how many leading values of a chunk decide whether it is
// too distinct to try a dictionary on.
const distinctProbe = 1 << 16

// candidate is a non-dictionary encoding a column may use.
type candidate struct {
	kind meta.Encoding
	impl encoding.Encoding
}

// adaptiveCandidates lists, per physical type, the encodings that every
// mainstream reader (parquet-java, arrow, DuckDB, parquet-go, Trino) decodes
// and that can beat PLAIN: deltas for sorted or narrow integers and
// strings, byte stream split for floating point.
func adaptiveCandidates(leaf *schema.Node) []candidate {
	plain := candidate{meta.EncodingPlain, encoding.Plain{}}
	switch leaf.Physical {
	case meta.TypeBoolean:
		return []candidate{plain, {meta.EncodingRLE, encoding.RLE{}}}
	case meta.TypeInt32, meta.TypeInt64:
		return []candidate{plain, {meta.EncodingDeltaBinaryPacked, encoding.DeltaBinaryPacked{}}}
	case meta.TypeFloat, meta.TypeDouble:
		return []candidate{plain, {meta.EncodingByteStreamSplit, encoding.ByteStreamSplit{}}}
	case meta.TypeByteArray:
		// DuckDB takes the byte-array deltas only on text and plain binary
		// columns (not on DECIMAL or BSON, say).
		switch leaf.Logical.Kind {
		case schema.None, schema.String, schema.Enum, schema.JSON:
			return []candidate{plain,
				{meta.EncodingDeltaLengthByteArray, encoding.DeltaLengthByteArray{}},
				{meta.EncodingDeltaByteArray, encoding.DeltaByteArray{}}}
		}
	}
	return []candidate{plain}
}

// sampleValues and sampleBytes bound the leading values of a chunk that
// are encoded and compressed with each candidate encoding to pick one:
// enough for the codec to see the data's structure, small next to a chunk.
const (
	sampleValues = 8192
	sampleBytes  = 64 << 10
)

// choose picks the chunk's encodings by the size they give after
// compression on a sample of its first values: the best of the candidate
// encodings, and whether the dictionary (its page's compressed size shared
// out over the values it covers, plus the indices) beats that. It returns
// the number of dictionary pages to keep and the fallback encoding.
func (cw *chunkWriter) choose(c *rowgroup.Column, dictPages int) (int, candidate, error) {
	n, size := 0, 0
	for limit := min(c.NumValues(), sampleValues); n < limit && size < sampleBytes; n++ {
		size += valueSize(c, n)
	}
	best, bestCost := cw.candidates[0], -1.0
	if n == 0 {
		return dictPages, best, nil
	}
	var err error
	if len(cw.candidates) > 1 || dictPages > 0 {
		for _, cand := range cw.candidates {
			if cw.values, err = encodeValues(cand.impl, cw.values[:0], c, 0, n); err != nil {
				return 0, best, fmt.Errorf("encode sample with %s: %w", cand.kind, err)
			}
			if cw.compressed, err = cw.codec.Encode(cw.compressed[:0], cw.values); err != nil {
				return 0, best, fmt.Errorf("compress sample: %w", err)
			}
			if cost := float64(len(cw.compressed)) / float64(n); bestCost < 0 || cost < bestCost {
				best, bestCost = cand, cost
			}
		}
	}
	if dictPages == 0 {
		return 0, best, nil
	}
	covered := cw.pages[dictPages-1].v1
	defer func() {
		if dictPages > 0 {
			cw.rankDictionary()
		}
	}()
	if cw.values, err = cw.dict.encode(cw.values[:0]); err != nil {
		return 0, best, fmt.Errorf("dictionary page: %w", err)
	}
	if cw.dictPage, err = cw.codec.Encode(cw.dictPage[:0], cw.values); err != nil {
		return 0, best, fmt.Errorf("compress dictionary: %w", err)
	}
	cw.dictPageSize, cw.dictPageReady = len(cw.values), true
	dictCost := float64(len(cw.dictPage)) / float64(covered)
	m := min(n, covered)
	if cw.values, err = (encoding.RLEDictionary{}).EncodeInt32(cw.values[:0], cw.idx[:m]); err != nil {
		return 0, best, fmt.Errorf("encode sample indices: %w", err)
	}
	if cw.compressed, err = cw.codec.Encode(cw.compressed[:0], cw.values); err != nil {
		return 0, best, fmt.Errorf("compress sample indices: %w", err)
	}
	dictCost += float64(len(cw.compressed)) / float64(m)
	if dictCost > bestCost {
		dictPages = 0
	}
	return dictPages, best, nil
}

func pageTypeFor(version int) meta.PageType {
	if version == 2 {
		return meta.PageDataV2
	}
	return meta.PageData
}

// writeDataPage encodes page p and writes it, header first.
func (cw *chunkWriter) writeDataPage(c *rowgroup.Column, p pageRange, fallback encoding.Encoding, enc meta.Encoding, nulls int64, b bounds) error {
	var err error
	cw.values = cw.values[:0]
	if enc == meta.EncodingRLEDictionary {
		cw.values, err = encoding.RLEDictionary{}.EncodeInt32(cw.values, cw.idx[p.v0:p.v1])
	} else {
		cw.values, err = encodeValues(fallback, cw.values, c, p.v0, p.v1)
	}
	if err != nil {
		return err
	}
	var st *meta.Statistics
	if cw.cfg.statistics {
		st = &meta.Statistics{NullCount: ptr(nulls)}
		if countsNaN(cw.order) {
			st.NanCount = ptr(b.nans)
		}
		if b.ok {
			st.MinValue, st.MaxValue = b.min, b.max
			st.IsMinValueExact, st.IsMaxValueExact = ptr(b.minExact), ptr(b.maxExact)
		}
	}
	cw.levels = cw.levels[:0]
	numLevels := int32(p.l1 - p.l0)
	if cw.cfg.pageVersion == 2 {
		var repLen, defLen int
		if c.MaxRep() > 0 {
			cw.levels = encoding.AppendLevels(cw.levels, c.Rep[p.l0:p.l1], encoding.BitWidth(uint64(c.MaxRep())))
			repLen = len(cw.levels)
		}
		if c.MaxDef() > 0 {
			cw.levels = encoding.AppendLevels(cw.levels, c.Def[p.l0:p.l1], encoding.BitWidth(uint64(c.MaxDef())))
			defLen = len(cw.levels) - repLen
		}
		hdr := meta.PageHeader{
			Type: meta.PageDataV2,
			DataPageHeaderV2: &meta.DataPageHeaderV2{
				NumValues:                  numLevels,
				NumNulls:                   int32(nulls),
				NumRows:                    int32(p.rows),
				Encoding:                   enc,
				DefinitionLevelsByteLength: int32(defLen),
				RepetitionLevelsByteLength: int32(repLen),
				IsCompressed:               ptr(cw.codec.Codec() != meta.CodecUncompressed),
				Statistics:                 st,
			},
		}
		return cw.appendPage(&hdr, cw.levels, cw.values)
	}
	if c.MaxRep() > 0 {
		cw.levels = appendPrefixedLevels(cw.levels, c.Rep[p.l0:p.l1], int(c.MaxRep()))
	}
	if c.MaxDef() > 0 {
		cw.levels = appendPrefixedLevels(cw.levels, c.Def[p.l0:p.l1], int(c.MaxDef()))
	}
	hdr := meta.PageHeader{
		Type: meta.PageData,
		DataPageHeader: &meta.DataPageHeader{
			NumValues:               numLevels,
			Encoding:                enc,
			DefinitionLevelEncoding: meta.EncodingRLE,
			RepetitionLevelEncoding: meta.EncodingRLE,
			Statistics:              st,
		},
	}
	cw.body = append(append(cw.body[:0], cw.levels...), cw.values...)
	return cw.appendPage(&hdr, nil, cw.body)
}

// appendLevels writes data page v1 levels: a 4-byte length, then the
// RLE/bit-packed hybrid.
func appendPrefixedLevels(dst []byte, levels []uint8, max int) []byte {
	at := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = encoding.AppendLevels(dst, levels, encoding.BitWidth(uint64(max)))
	binary.LittleEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// appendPage compresses body (raw is the part stored as is, the v2 levels)
// and writes the page.
func (cw *chunkWriter) appendPage(hdr *meta.PageHeader, raw, body []byte) error {
	var err error
	cw.compressed = append(cw.compressed[:0], raw...)
	cw.compressed, err = cw.codec.Encode(cw.compressed, body)
	if err != nil {
		return fmt.Errorf("compress: %w", err)
	}
	if v2 := hdr.DataPageHeaderV2; v2 != nil && len(cw.compressed) >= len(raw)+len(body) {
		// A v2 page may store its values uncompressed, which costs less
		// here; an empty values section is never compressed at all, as
		// some readers fail on a compressed empty stream.
		cw.compressed = append(append(cw.compressed[:0], raw...), body...)
		v2.IsCompressed = ptr(false)
	}
	return cw.writePage(hdr, len(raw)+len(body), cw.compressed)
}

// writeDictionaryPage writes the dictionary, compressed by choose when it
// weighed the dictionary against the other encodings, or now.
func (cw *chunkWriter) writeDictionaryPage(hdr *meta.PageHeader) error {
	if cw.dictPageReady {
		return cw.writePage(hdr, cw.dictPageSize, cw.dictPage)
	}
	var err error
	if cw.values, err = cw.dict.encode(cw.values[:0]); err != nil {
		return err
	}
	return cw.appendPage(hdr, nil, cw.values)
}

// writePage fills in the header's sizes and checksum and writes the header
// and the page's (compressed) bytes.
func (cw *chunkWriter) writePage(hdr *meta.PageHeader, uncompressedSize int, data []byte) error {
	hdr.UncompressedPageSize = int32(uncompressedSize)
	hdr.CompressedPageSize = int32(len(data))
	if cw.cfg.checksums {
		hdr.CRC = ptr(int32(crc32.ChecksumIEEE(data)))
	}
	cw.header = hdr.Append(cw.header[:0])
	if _, err := cw.out.Write(cw.header); err != nil {
		return err
	}
	if _, err := cw.out.Write(data); err != nil {
		return err
	}
	cw.uncompressed += int64(len(cw.header)) + int64(uncompressedSize)
	return nil
}

// encodeValues encodes values v0..v1 of c with enc.
func encodeValues(enc encoding.Encoding, dst []byte, c *rowgroup.Column, v0, v1 int) ([]byte, error) {
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		return enc.EncodeBoolean(dst, c.Bool[v0:v1])
	case meta.TypeInt32:
		return enc.EncodeInt32(dst, c.Int32[v0:v1])
	case meta.TypeInt64:
		return enc.EncodeInt64(dst, c.Int64[v0:v1])
	case meta.TypeInt96:
		return enc.EncodeInt96(dst, c.Int96[v0:v1])
	case meta.TypeFloat:
		return enc.EncodeFloat(dst, c.Float[v0:v1])
	case meta.TypeDouble:
		return enc.EncodeDouble(dst, c.Double[v0:v1])
	case meta.TypeByteArray:
		return enc.EncodeByteArray(dst, c.Bytes, c.Offsets[v0:v1+1])
	case meta.TypeFixedLenByteArray:
		w := int(c.Leaf.Length)
		return enc.EncodeFixedLenByteArray(dst, c.Bytes[v0*w:v1*w], w)
	}
	return dst, fmt.Errorf("unknown physical type %v", c.Leaf.Physical)
}

func levelHistogram(levels []uint8, max int) []int64 {
	h := make([]int64, max+1)
	for _, l := range levels {
		h[l]++
	}
	return h
}

func addHistogram(dst, src []int64) {
	for i, v := range src {
		dst[i] += v
	}
}

// boundaryOrder tells readers whether page bounds are sorted, so they can
// binary-search the column index.
func boundaryOrder(order sortOrder, physical meta.Type, ci *meta.ColumnIndex) meta.BoundaryOrder {
	asc, desc := true, true
	prev := -1
	for i, null := range ci.NullPages {
		if null {
			continue
		}
		if prev >= 0 {
			if compareValues(order, physical, ci.MinValues[i], ci.MinValues[prev]) < 0 || compareValues(order, physical, ci.MaxValues[i], ci.MaxValues[prev]) < 0 {
				asc = false
			}
			if compareValues(order, physical, ci.MinValues[i], ci.MinValues[prev]) > 0 || compareValues(order, physical, ci.MaxValues[i], ci.MaxValues[prev]) > 0 {
				desc = false
			}
		}
		prev = i
	}
	switch {
	case asc:
		return meta.BoundaryAscending
	case desc:
		return meta.BoundaryDescending
	}
	return meta.BoundaryUnordered
}

// encodingStats counts pages by type and encoding, in first-seen order.
type encodingStats struct {
	list []meta.PageEncodingStats
}

func (s *encodingStats) add(t meta.PageType, e meta.Encoding) {
	for i := range s.list {
		if s.list[i].PageType == t && s.list[i].Encoding == e {
			s.list[i].Count++
			return
		}
	}
	s.list = append(s.list, meta.PageEncodingStats{PageType: t, Encoding: e, Count: 1})
}

// encodings lists every encoding in the chunk, levels' RLE included.
func (s *encodingStats) encodings(levels bool) []meta.Encoding {
	var out []meta.Encoding
	seen := map[meta.Encoding]bool{}
	addEnc := func(e meta.Encoding) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, st := range s.list {
		addEnc(st.Encoding)
	}
	if levels {
		addEnc(meta.EncodingRLE)
	}
	return out
}

// buildBloom sizes a filter for the chunk's distinct values and fills it.
func (cw *chunkWriter) buildBloom(c *rowgroup.Column) *bloom.Filter {
	if cw.hashes == nil {
		cw.hashes = map[uint64]struct{}{}
	}
	clear(cw.hashes)
	n := c.NumValues()
	for i := 0; i < n; i++ {
		cw.hashes[hashValue(c, i)] = struct{}{}
	}
	f := bloom.New(min(bloom.OptimalBytes(uint64(max(len(cw.hashes), 1)), cw.bloomFPP), cw.cfg.bloomMaxBytes))
	for h := range cw.hashes {
		f.Insert(h)
	}
	return f
}

func hashValue(c *rowgroup.Column, i int) uint64 {
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		if c.Bool[i] {
			return bloom.HashInt32(1)
		}
		return bloom.HashInt32(0)
	case meta.TypeInt32:
		return bloom.HashInt32(c.Int32[i])
	case meta.TypeInt64:
		return bloom.HashInt64(c.Int64[i])
	case meta.TypeInt96:
		return bloom.HashInt96(c.Int96[i])
	case meta.TypeFloat:
		return bloom.HashFloat(c.Float[i])
	case meta.TypeDouble:
		return bloom.HashDouble(c.Double[i])
	case meta.TypeByteArray:
		return bloom.HashBytes(c.ByteArray(i))
	}
	w := int(c.Leaf.Length)
	return bloom.HashBytes(c.Bytes[i*w : (i+1)*w])
}

// writeBloom writes the filter of the chunk just written: its header, then
// its bitset. It returns the offset and total length.
func (cw *chunkWriter) writeBloom(out *countingWriter) (int64, int32, error) {
	bits := cw.bloom.Bytes()
	hdr := meta.BloomFilterHeader{
		NumBytes:    int32(len(bits)),
		Algorithm:   meta.BloomFilterAlgorithm{Block: &meta.SplitBlockAlgorithm{}},
		Hash:        meta.BloomFilterHash{XXHash: &meta.XxHash{}},
		Compression: meta.BloomFilterCompression{Uncompressed: &meta.Uncompressed{}},
	}
	buf := hdr.Append(nil)
	buf = append(buf, bits...)
	off := out.n
	if _, err := out.Write(buf); err != nil {
		return 0, 0, err
	}
	cw.bloom = nil
	return off, int32(len(buf)), nil
}

// rankDictionary sorts a byte-array dictionary once per chunk: then a
// page's min and max are its entries of least and greatest rank, found
// without comparing a single string per value.
func (cw *chunkWriter) rankDictionary() {
	d, ok := cw.dict.(*bytesDict)
	// FLOAT16 excludes NaNs from its bounds, which a rank cannot say.
	if !ok || cw.order == orderNone || cw.order == orderFloat16 {
		return
	}
	n := d.len()
	cw.rankOrder = cw.rankOrder[:0]
	for i := 0; i < n; i++ {
		cw.rankOrder = append(cw.rankOrder, int32(i))
	}
	physical := cw.leaf.Physical
	slices.SortFunc(cw.rankOrder, func(a, b int32) int {
		return compareValues(cw.order, physical, d.entry(int(a)), d.entry(int(b)))
	})
	cw.ranks = slices.Grow(cw.ranks[:0], n)[:n]
	for r, i := range cw.rankOrder {
		cw.ranks[i] = int32(r)
	}
}

// dictPageBounds is pageBounds for a page of a ranked dictionary.
func (cw *chunkWriter) dictPageBounds(b bounds, v0, v1 int) bounds {
	b.min, b.max, b.ok, b.minExact, b.maxExact, b.nans = b.min[:0], b.max[:0], false, true, true, 0
	if v0 == v1 {
		return b
	}
	lo, hi := int32(len(cw.ranks)), int32(-1)
	for _, i := range cw.idx[v0:v1] {
		r := cw.ranks[i]
		lo, hi = min(lo, r), max(hi, r)
	}
	d := cw.dict.(*bytesDict)
	b.min = append(b.min, d.entry(int(cw.rankOrder[lo]))...)
	b.max = append(b.max, d.entry(int(cw.rankOrder[hi]))...)
	b.ok = true
	return b
}
