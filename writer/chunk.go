package writer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"strings"
	"time"

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

	pages  []pageRange
	bounds bounds
	hashes map[uint64]struct{}

	// The working memory of the chunk being encoded, borrowed from the
	// writer's Scratch for the chunk's time only; nil between chunks.
	*chunkScratch
	scratch *Scratch

	uncompressed int64 // of the chunk being written, page headers included

	out  *countingWriter // of the chunk being written
	buf  chunkBuffer     // the chunk, encoded in parallel, until it is written
	took time.Duration   // how long the last chunk took to encode in parallel, to schedule the next

	// The dictionary page as a trial compressed it (in dictPage), to
	// write as is.
	dictPageSize  int
	dictPageReady bool

	// plan is how the pages of the chunk being written are encoded, and
	// last is the plan of the previous chunk, which the next one starts
	// from when its first page confirms it.
	plan, last plan
}

// option is one way to encode a column's values: its dictionary (dict)
// or candidate cand.
type option struct {
	dict bool
	cand int
}

// plan is the encoding of a chunk's pages and what it is expected to cost.
type plan struct {
	use      option // the encoding of the next page
	fallback int    // the candidate of the pages the dictionary does not cover
	// cost is use's compressed bytes per value (a dictionary page's
	// indices only) on the page that last chose or confirmed it; 0 when
	// there is no plan yet.
	cost float64
	// first is the cost of the chunk's first page, a dictionary's page
	// shared out over the values it covers included, while use is still
	// what that page chose: the cost the next chunk's first page is held
	// to. Later pages are no measure for it, as a dictionary's indices
	// widen while it fills (doubles of 100,000 distinct values: 1.88
	// bytes a value on a chunk's first page, 2.13 on its sixth), and
	// every chunk would run a trial; and without its dictionary's share,
	// a short chunk whose dictionary costs several times as much a value
	// would keep it.
	first float64
	// wait is how many pages pass before the next check may run a trial,
	// and backoff what wait becomes after a trial that changes nothing.
	wait, backoff int
	fixed         bool // no trials: AdaptiveEncoding is off, or there is no choice
}

// encodedPage is a data page's body as it follows the page header.
type encodedPage struct {
	enc          meta.Encoding
	data         []byte // levels and values, compressed as the page version says
	uncompressed int
	repLen       int  // v2: repetition levels' bytes, stored raw
	defLen       int  // v2: definition levels' bytes, stored raw
	compressed   bool // v2: whether the values are compressed
	values       int  // non-null values in the page
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
		cw.candidates = adaptiveCandidates(leaf, cfg.pageVersion)
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
	maxDef, maxRep := c.MaxDef(), c.MaxRep()
	width := 0 // PLAIN size of a value, 0 for BYTE_ARRAY
	if c.Leaf.Physical != meta.TypeByteArray {
		width = valueSize(c, 0)
	}
	if maxDef == 0 && maxRep == 0 && n > 0 {
		// A required top-level column: a level is a row and a value, and
		// the pages follow from the values' sizes alone.
		if width > 0 && width <= maxPageBytes {
			return planFixed(pages, n, width, pageSize, rowLimit), nil
		}
		if width == 0 {
			return planRequiredBytes(pages, c.Offsets[:n+1], pageSize, rowLimit)
		}
	}
	return planLevels(pages, c, width, pageSize, rowLimit, split)
}

// planLevels is planPages for any column; width is the PLAIN size of a
// value, 0 for BYTE_ARRAY. Most pages end at the row limit, well under the
// page size: such a page is found by counting its records and values a
// word of levels at a time (quickPage), and only a page that its values'
// sizes may cut is walked level by level (levelPage). As a page that
// quickPage leaves costs it a scan up to the row limit for nothing, it is
// tried only after a page that the row limit ended.
func planLevels(pages []pageRange, c *rowgroup.Column, width, pageSize, rowLimit int, split bool) ([]pageRange, error) {
	n := c.NumLevels()
	p := pageRange{}
	quick := true
	// A limit under 1 cuts at every record, as 1 does, and keeps every
	// page that quickPage counts from being empty.
	rowLimit = max(rowLimit, 1)
	for {
		var ok bool
		if quick {
			p, ok = quickPage(c, p, width, pageSize, rowLimit)
		}
		if !ok {
			var err error
			if p, err = levelPage(c, p, width, pageSize, rowLimit, split); err != nil {
				return pages, err
			}
			quick = p.rows >= rowLimit
		}
		pages = append(pages, p)
		if p.l1 >= n {
			return pages, nil
		}
		p = pageRange{l0: p.l1, v0: p.v1, first: p.first + p.rows}
	}
}

// quickPage completes page p, which starts at p.l0, p.v0 and p.first, when
// it ends at the row limit (or the column's end) with its values under the
// page size: it counts the page's records and values without a branch per
// level. It reports false, leaving the page to levelPage, when the values'
// sizes might end the page sooner.
func quickPage(c *rowgroup.Column, p pageRange, width, pageSize, rowLimit int) (pageRange, bool) {
	n := c.NumLevels()
	var end, rows int
	if c.MaxRep() == 0 {
		end = p.l0 + min(n-p.l0, rowLimit)
		rows = end - p.l0
	} else {
		end, rows = recordsEnd(c.Rep[:n], p.l0, rowLimit)
	}
	values := end - p.l0
	if c.MaxDef() > 0 {
		values = countEqual(c.Def[p.l0:end], c.MaxDef())
	}
	var size int
	if width > 0 {
		size = values * width
	} else {
		size = int(c.Offsets[p.v0+values]-c.Offsets[p.v0]) + 4*values
	}
	// Under both limits, no level of the page could end it sooner than
	// the row limit, nor hold a value over maxPageBytes.
	if size >= pageSize || size > maxPageBytes {
		return p, false
	}
	p.l1, p.v1, p.rows = end, p.v0+values, rows
	return p, true
}

// levelPage completes page p, which starts at p.l0, p.v0 and p.first, level
// by level.
func levelPage(c *rowgroup.Column, p pageRange, width, pageSize, rowLimit int, split bool) (pageRange, error) {
	n := c.NumLevels()
	size, v := 0, p.v0
	maxDef, maxRep := c.MaxDef(), c.MaxRep()
	for l := p.l0; l < n; l++ {
		vs := 0 // the PLAIN size of the level's value, if it has one
		if maxDef == 0 || c.Def[l] == maxDef {
			if width > 0 {
				vs = width
			} else {
				vs = 4 + int(c.Offsets[v+1]-c.Offsets[v])
			}
		}
		if vs > maxPageBytes {
			return p, fmt.Errorf("record %d holds a value of %d bytes, over the %d bytes a data page may hold", p.first+p.rows, vs, maxPageBytes)
		}
		full := size+vs > maxPageBytes
		switch {
		case l == p.l0:
		case maxRep == 0 || c.Rep[l] == 0:
			if size >= pageSize || p.rows >= rowLimit || full {
				p.l1, p.v1 = l, v
				return p, nil
			}
		case full && split:
			// Split the record: the page ends before this value and the
			// next one starts inside the record (rows counts the records
			// that start in a page).
			p.l1, p.v1 = l, v
			return p, nil
		case full:
			return p, fmt.Errorf("record %d needs a data page of more than %d bytes, the limit that keeps pages readable; a record this large can span pages only with data page v1 and no page index", p.first+p.rows-1, maxPageBytes)
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
	return p, nil
}

// planFixed is planPages for n required values of width bytes each (at
// most maxPageBytes): a page ends after the value that takes it to
// pageSize, at rowLimit values, or before the value that would take it
// over maxPageBytes.
func planFixed(pages []pageRange, n, width, pageSize, rowLimit int) []pageRange {
	k := max(min(rowLimit, (pageSize+width-1)/width, maxPageBytes/width), 1)
	for first := 0; first < n; first += k {
		end := min(first+k, n)
		pages = append(pages, pageRange{l0: first, l1: end, v0: first, v1: end, first: first, rows: end - first})
	}
	return pages
}

// planRequiredBytes is planPages for required BYTE_ARRAY values, whose
// offsets are given: the same cuts, found from the offsets alone. A page's
// PLAIN size grows with every value, so its end is found by binary search
// over the offsets rather than by a loop over every value; a page that
// could reach maxPageBytes is cut value by value.
func planRequiredBytes(pages []pageRange, offsets []uint32, pageSize, rowLimit int) ([]pageRange, error) {
	n := len(offsets) - 1
	if n == 0 {
		return append(pages, pageRange{}), nil
	}
	// size is the PLAIN size of values a..b-1.
	size := func(a, b int) int { return int(offsets[b]-offsets[a]) + 4*(b-a) }
	for first := 0; first < n; {
		hi := min(n, first+max(rowLimit, 1))
		var end int
		if size(first, hi) <= maxPageBytes {
			// The first i past first whose values first..i-1 fill the page.
			end = first + 1 + sort.Search(hi-first-1, func(k int) bool { return size(first, first+1+k) >= pageSize })
		} else {
			var err error
			if end, err = cutRequiredBytes(offsets, first, hi, pageSize); err != nil {
				return pages, err
			}
		}
		pages = append(pages, pageRange{l0: first, l1: end, v0: first, v1: end, first: first, rows: end - first})
		first = end
	}
	return pages, nil
}

// cutRequiredBytes returns the end of the page of required BYTE_ARRAY
// values that starts at value first and holds at most hi-first values,
// value by value: it ends after the value that takes it to pageSize, or
// before one that would take it over maxPageBytes.
func cutRequiredBytes(offsets []uint32, first, hi, pageSize int) (int, error) {
	size := 0
	for i := first; i < hi; i++ {
		vs := 4 + int(offsets[i+1]-offsets[i])
		if vs > maxPageBytes {
			return 0, fmt.Errorf("record %d holds a value of %d bytes, over the %d bytes a data page may hold", i, vs, maxPageBytes)
		}
		if i > first && (size >= pageSize || size+vs > maxPageBytes) {
			return i, nil
		}
		size += vs
	}
	return hi, nil
}

// writeChunk encodes column c of a row group and writes it to out.
func (cw *chunkWriter) writeChunk(out *countingWriter, c *rowgroup.Column) (meta.ColumnChunk, pageIndex, error) {
	cw.chunkScratch = cw.scratch.get()
	if cw.useDict {
		cw.dict = cw.chunkScratch.dictionary(cw.leaf.Physical, int(cw.leaf.Length))
	}
	defer func() {
		cw.scratch.put(cw.chunkScratch, cw.keepScratch())
		cw.chunkScratch, cw.dict = nil, nil
	}()
	return cw.encodeChunk(out, c)
}

// encodeChunk is writeChunk with the scratch in place.
func (cw *chunkWriter) encodeChunk(out *countingWriter, c *rowgroup.Column) (meta.ColumnChunk, pageIndex, error) {
	var err error
	cw.pages, err = planPages(cw.pages, c, cw.cfg.pageSize, cw.cfg.pageRowLimit, cw.cfg.pageVersion == 1 && !cw.cfg.pageIndex)
	if err != nil {
		return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("column %s: %w", strings.Join(cw.path, "."), err)
	}
	cw.dictPageReady = false
	cw.ranks = nil
	dictPages, err := cw.start(c)
	if err != nil {
		return meta.ColumnChunk{}, pageIndex{}, err
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
		if pi > 0 {
			if err := cw.encodeNext(c, pi, dictPages); err != nil {
				return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("page %d: %w", pi, err)
			}
		}
		if err := cw.writeDataPage(p, pageNulls, b); err != nil {
			return meta.ColumnChunk{}, pageIndex{}, fmt.Errorf("page %d: %w", pi, err)
		}
		stats.add(pageTypeFor(cw.cfg.pageVersion), cw.page.enc)
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

	if cw.bounds.borrowed {
		cw.bounds = bounds{} // points into c
	}
	if !cw.plan.fixed {
		cw.last = cw.plan
		if cw.plan.first > 0 {
			cw.last.cost = cw.plan.first
		}
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

// keepScratch is the capacity a scratch buffer keeps between chunks: four
// pages of the configured size, and at least 8 MiB.
func (cw *chunkWriter) keepScratch() int { return max(4*cw.cfg.pageSize, 8<<20) }

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
		if holdsOver(c, p, cw.cfg.dictPageSize) {
			// The page would push the dictionary over its limit; this
			// says so without copying a huge value into it first.
			return pi
		}
		before := cw.dict.len()
		// Room for the page's indices first: a page of millions of values
		// (one huge record) would otherwise grow them by doubling. Room
		// for the pages to come is made by doubling, which a chunk of
		// many ordinary pages would otherwise regrow (and copy) page by
		// page, a quarter at a time.
		if n := p.v1 - p.v0; cap(cw.idx)-len(cw.idx) < n {
			cw.idx = slices.Grow(cw.idx, max(n, len(cw.idx)))
		}
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

// holdsOver reports whether page p of c holds a value whose PLAIN size
// alone is over limit bytes, which no dictionary within limit can hold.
func holdsOver(c *rowgroup.Column, p pageRange, limit int) bool {
	switch c.Leaf.Physical {
	case meta.TypeByteArray:
		if int(c.Offsets[p.v1]-c.Offsets[p.v0])+4*(p.v1-p.v0) <= limit {
			return false
		}
		for i := p.v0; i < p.v1; i++ {
			if 4+int(c.Offsets[i+1]-c.Offsets[i]) > limit {
				return true
			}
		}
		return false
	case meta.TypeFixedLenByteArray:
		return p.v1 > p.v0 && int(c.Leaf.Length) > limit
	}
	return false
}

// distinctProbe is how many leading values of a chunk decide whether it is
// too distinct to try a dictionary on.
const distinctProbe = 1 << 16

// candidate is a non-dictionary encoding a column may use.
type candidate struct {
	kind meta.Encoding
	impl encoding.Encoding
}

// adaptiveCandidates lists, per physical type, the encodings that can beat
// PLAIN and that readers of the page version decode.
//
// Data page v1 is the version every reader reads, so its pages keep to the
// encodings parquet-java's v1 writer uses: PLAIN beside the dictionary, and
// RLE for booleans. The other encodings came with the format's version 2
// and some readers decode them only in v2 pages: hyparquet 1.19, the
// Parquet reader that the JavaScript Iceberg reader icebird pins, refuses
// DELTA_BYTE_ARRAY in a v1 page. A column given an encoding with
// ColumnEncoding gets it in either version.
//
// Data page v2 adds the deltas, for sorted or narrow integers and strings.
// BYTE_STREAM_SPLIT is not among them, only given with ColumnEncoding: the
// same hyparquet decodes it in a v2 page from the still compressed bytes,
// so it fails on every compressed BYTE_STREAM_SPLIT page, nullable or
// not. What that costs is the encoding's gain on floating point: 14% of
// the zstd-compressed size of random doubles (TestAdaptiveChoosesTheSmallest's
// data).
func adaptiveCandidates(leaf *schema.Node, pageVersion int) []candidate {
	plain := candidate{meta.EncodingPlain, encoding.Plain{}}
	switch leaf.Physical {
	case meta.TypeBoolean:
		return []candidate{plain, {meta.EncodingRLE, encoding.RLE{}}}
	case meta.TypeInt32, meta.TypeInt64:
		if pageVersion >= 2 {
			return []candidate{plain, {meta.EncodingDeltaBinaryPacked, encoding.DeltaBinaryPacked{}}}
		}
	case meta.TypeByteArray:
		if pageVersion < 2 {
			break
		}
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

// The encoding of a chunk is chosen by trial: its first page is encoded
// and compressed with the chunk's codec in each way the column allows (its
// candidates, and its dictionary when that holds the page), and the
// smallest wins; that page is written as the trial made it, so the winner
// costs nothing extra. The sample is a whole page because that is what is
// compressed: a codec behaves differently on a few kilobytes than on a
// page (zstd, for one, finds the short, costly matches of random text only
// in a large window). Later pages check the choice: a page whose cost per
// value strays by more than replanTolerance from what the trial measured
// runs the trial again, on itself, and the chunk's remaining pages follow
// the new winner. A chunk starts with the previous chunk's choice when its
// first page confirms it, so that a writer which writes row group after
// row group (or file after file, with Reset) runs trials only when the
// data changes.
const replanTolerance = 0.10

// start prepares the chunk's encoding: it encodes the first page into
// cw.page, by the previous chunk's plan if the page confirms it and by a
// trial otherwise, and returns how many leading pages the dictionary
// covers (0 when the chunk does not use it).
func (cw *chunkWriter) start(c *rowgroup.Column) (int, error) {
	single := !cw.useDict && len(cw.candidates) == 1
	if c.NumValues() == 0 || single || !cw.cfg.adaptive {
		// Nothing to choose, or no choosing: the dictionary while it
		// holds the pages, then the column's encoding.
		dictPages := 0
		if c.NumValues() > 0 && cw.useDict {
			dictPages = cw.buildDictionary(c)
		}
		cw.plan = plan{use: option{dict: dictPages > 0}, fixed: true}
		if err := cw.encodePage(&cw.page, c, cw.pages[0], cw.plan.use, dictPages); err != nil {
			return 0, err
		}
		return cw.keepDictionary(dictPages), nil
	}
	dictPages := -1 // not built yet
	if last := cw.last; last.cost > 0 && !hugeValues(c, cw.pages[0]) {
		if last.use.dict {
			if dictPages = cw.buildDictionary(c); dictPages == 0 {
				goto trial
			}
			if err := cw.prepareDictionary(); err != nil {
				return 0, err
			}
		}
		if err := cw.encodePage(&cw.page, c, cw.pages[0], last.use, dictPages); err != nil {
			return 0, err
		}
		if first := cw.pageCost(&cw.page, dictCovers(cw.pages, dictPages)); cw.page.values > 0 && within(first, last.cost) {
			cw.plan = plan{use: last.use, fallback: last.fallback, cost: cw.pageCost(&cw.page, 0), first: first, wait: 1, backoff: 1}
			return cw.keepDictionary(dictPages), nil
		}
	}
trial:
	if dictPages < 0 {
		dictPages = cw.buildDictionary(c)
	}
	if dictPages > 0 && !cw.dictPageReady {
		if err := cw.prepareDictionary(); err != nil {
			return 0, err
		}
	}
	cw.plan = plan{wait: 1, backoff: 1}
	if err := cw.trial(c, 0, dictPages, true); err != nil {
		return 0, err
	}
	cw.plan.first = cw.pageCost(&cw.page, dictCovers(cw.pages, dictPages))
	return cw.keepDictionary(dictPages), nil
}

// dictCovers is how many values the first dictPages pages hold: those a
// dictionary of that many pages covers.
func dictCovers(pages []pageRange, dictPages int) int {
	if dictPages <= 0 {
		return 0
	}
	return pages[dictPages-1].v1
}

// hugeValue is the mean PLAIN size of a page's byte-array values from
// which the page is written PLAIN without a trial of the other
// encodings: what the delta encodings save there is a few bytes of
// lengths per value, and prefixes shared between values this long are the
// codec's to find, while each trial would encode and compress the page
// once more, holding another copy of it (a page of one 50 MB value costs
// 50 MB per trial).
const hugeValue = 1 << 20

// hugeValues reports whether page p's values are huge: BYTE_ARRAY values
// of hugeValue bytes or more on average. The candidate at index 0 is
// PLAIN (adaptiveCandidates), the only one tried for such a page.
func hugeValues(c *rowgroup.Column, p pageRange) bool {
	n := p.v1 - p.v0
	return c.Leaf.Physical == meta.TypeByteArray && n > 0 && int(c.Offsets[p.v1]-c.Offsets[p.v0])/n >= hugeValue
}

// keepDictionary returns how many pages the dictionary covers under the
// chunk's plan, 0 when the plan does not use it, and ranks a dictionary
// in use for the page bounds.
func (cw *chunkWriter) keepDictionary(dictPages int) int {
	if !cw.plan.use.dict || dictPages <= 0 {
		return 0
	}
	cw.rankDictionary()
	return dictPages
}

// within reports whether cost confirms an expected cost. Two costs under
// cheapCost confirm each other whatever their ratio: a page that costs
// under a bit a value leaves no other encoding much to save, while its
// ratio to the last one swings with a few hundred bytes (a column of
// sequential session ids, at 0.04 and 0.07 bytes a value in two row
// groups, ran a trial every chunk, which built a dictionary of the whole
// chunk to weigh it).
func within(cost, expected float64) bool {
	if cost < cheapCost && expected < cheapCost {
		return true
	}
	return cost <= expected*(1+replanTolerance) && cost >= expected/(1+replanTolerance)
}

// cheapCost is the compressed bytes per value under which a page's cost
// confirms any other such cost: one bit a value.
const cheapCost = 1.0 / 8

// prepareDictionary encodes and compresses the dictionary page, which the
// trials weigh and which is written as it is if the dictionary wins.
func (cw *chunkWriter) prepareDictionary() error {
	var err error
	if cw.values, err = cw.dict.encode(cw.values[:0]); err != nil {
		return fmt.Errorf("dictionary page: %w", err)
	}
	if cw.dictPage, err = cw.codec.Encode(cw.dictPage[:0], cw.values); err != nil {
		return fmt.Errorf("compress dictionary: %w", err)
	}
	cw.dictPageSize, cw.dictPageReady = len(cw.values), true
	return nil
}

// pageCost is the compressed bytes per value of page e, levels included;
// for a page of dictionary indices that is the indices, plus, when
// covered (the values the dictionary covers) is set, each value's share of
// the compressed dictionary page.
func (cw *chunkWriter) pageCost(e *encodedPage, covered int) float64 {
	n := max(e.values, 1)
	cost := float64(len(e.data)) / float64(n)
	if e.enc == meta.EncodingRLEDictionary && covered > 0 {
		cost += float64(len(cw.dictPage)) / float64(covered)
	}
	return cost
}

// trial encodes page pi in every way open to it and leaves the smallest in
// cw.page, and the winner in cw.plan. withDict weighs the dictionary too,
// when it covers the page. At the chunk's first page (pi 0) the dictionary
// page is still to be written, and its compressed size, shared out over
// the values it covers, counts against the dictionary; later, it is
// written, whatever the pages that follow choose, and only the indices
// count.
func (cw *chunkWriter) trial(c *rowgroup.Column, pi, dictPages int, withDict bool) error {
	p := cw.pages[pi]
	covered := 0
	if pi == 0 {
		covered = dictCovers(cw.pages, dictPages)
	}
	best, bestCost := option{}, -1.0
	bestCand, bestCandCost := 0, -1.0
	try := func(o option) error {
		if err := cw.encodePage(&cw.alt, c, p, o, dictPages); err != nil {
			return err
		}
		cost := cw.pageCost(&cw.alt, covered)
		if !o.dict && (bestCandCost < 0 || cost < bestCandCost) {
			bestCand, bestCandCost = o.cand, cost
		}
		if bestCost < 0 || cost < bestCost {
			best, bestCost = o, cost
			cw.page, cw.alt = cw.alt, cw.page
		}
		return nil
	}
	if withDict && dictPages > pi {
		if err := try(option{dict: true}); err != nil {
			return err
		}
	}
	cands := cw.candidates
	if hugeValues(c, p) {
		cands = cands[:1]
	}
	for i := range cands {
		if err := try(option{cand: i}); err != nil {
			return err
		}
	}
	cw.plan.use, cw.plan.fallback = best, bestCand
	cw.plan.cost = cw.pageCost(&cw.page, 0)
	return nil
}

// encodeNext encodes page pi (pi > 0) into cw.page by the chunk's plan,
// and runs a trial on it when its cost does not confirm the plan. A
// chunk that leaves its dictionary does not go back to it.
func (cw *chunkWriter) encodeNext(c *rowgroup.Column, pi, dictPages int) error {
	pl := &cw.plan
	if pl.use.dict && pi >= dictPages {
		// The dictionary is full: the fallback from here on, checked
		// against its own cost at the next page.
		pl.use, pl.cost, pl.first, pl.wait = option{cand: pl.fallback}, 0, 0, 1
	}
	p := cw.pages[pi]
	if !pl.use.dict && hugeValues(c, p) {
		// PLAIN, and the plan is left to the pages around it.
		return cw.encodePage(&cw.page, c, p, option{}, dictPages)
	}
	if err := cw.encodePage(&cw.page, c, p, pl.use, dictPages); err != nil {
		return err
	}
	cost := cw.pageCost(&cw.page, 0)
	if pl.cost == 0 || pl.fixed {
		pl.cost = cost
		return nil
	}
	// The last page of a chunk is usually short, and a short page
	// compresses worse: it does not count against the plan.
	if pi == len(cw.pages)-1 || (len(cw.candidates) == 1 && !pl.use.dict) {
		return nil
	}
	if within(cost, pl.cost) {
		// Confirmed: the next page is held to this one, so that a cost
		// drifting as slowly as a dictionary's index width runs no trial.
		pl.cost = cost
		return nil
	}
	if pl.wait > 1 {
		pl.wait--
		return nil
	}
	before := pl.use
	if err := cw.trial(c, pi, dictPages, pl.use.dict); err != nil {
		return err
	}
	if pl.use == before {
		pl.backoff = min(2*pl.backoff, 64)
	} else {
		pl.backoff, pl.first = 1, 0
	}
	pl.wait = pl.backoff
	return nil
}

// encodePage encodes page p's levels and values (by option o) into e and
// compresses it as the page version says.
func (cw *chunkWriter) encodePage(e *encodedPage, c *rowgroup.Column, p pageRange, o option, dictPages int) error {
	var err error
	cw.values = cw.values[:0]
	if cw.cfg.pageVersion == 1 {
		// Data page v1 compresses levels and values together: the levels
		// go first into the buffer the values are appended to, rather than
		// both being copied into a third.
		if c.MaxRep() > 0 {
			cw.values = appendPrefixedLevels(cw.values, c.Rep[p.l0:p.l1], int(c.MaxRep()))
		}
		if c.MaxDef() > 0 {
			cw.values = appendPrefixedLevels(cw.values, c.Def[p.l0:p.l1], int(c.MaxDef()))
		}
	}
	if o.dict {
		e.enc = meta.EncodingRLEDictionary
		cw.values, err = encoding.RLEDictionary{}.EncodeInt32(cw.values, cw.idx[p.v0:p.v1])
	} else {
		cand := cw.candidates[o.cand]
		e.enc = cand.kind
		cw.values, err = encodeValues(cand.impl, cw.values, c, p.v0, p.v1)
	}
	if err != nil {
		return err
	}
	e.values = p.v1 - p.v0
	if cw.cfg.pageVersion == 2 {
		cw.levels = cw.levels[:0]
		e.repLen, e.defLen = 0, 0
		if c.MaxRep() > 0 {
			cw.levels = encoding.AppendLevels(cw.levels, c.Rep[p.l0:p.l1], encoding.BitWidth(uint64(c.MaxRep())))
			e.repLen = len(cw.levels)
		}
		if c.MaxDef() > 0 {
			cw.levels = encoding.AppendLevels(cw.levels, c.Def[p.l0:p.l1], encoding.BitWidth(uint64(c.MaxDef())))
			e.defLen = len(cw.levels) - e.repLen
		}
		e.uncompressed = len(cw.levels) + len(cw.values)
		e.data = append(cw.roomFor(e.data[:0], len(cw.levels)+len(cw.values), hugeValues(c, p)), cw.levels...)
		if e.data, err = cw.codec.Encode(e.data, cw.values); err != nil {
			return fmt.Errorf("compress: %w", err)
		}
		e.compressed = cw.codec.Codec() != meta.CodecUncompressed
		if len(e.data) >= e.uncompressed {
			// A v2 page may store its values uncompressed, which costs
			// less here; an empty values section is never compressed at
			// all, as some readers fail on a compressed empty stream.
			e.data = append(e.data[:len(cw.levels)], cw.values...)
			e.compressed = false
		}
		return nil
	}
	e.uncompressed = len(cw.values)
	if e.data, err = cw.codec.Encode(cw.roomFor(e.data[:0], len(cw.values), hugeValues(c, p)), cw.values); err != nil {
		return fmt.Errorf("compress: %w", err)
	}
	return nil
}

// roomFor gives dst, empty, room for a page of n bytes compressed, when
// the page holds huge values (hugeValues) and n is over what scratch
// buffers keep: a codec that appends a huge page block by block would
// otherwise reallocate it as it grows (zstd's EncodeAll allocated three
// times the page so), and one that sizes its output first (snappy, whose
// bound is n+10 at these sizes) finds the room there; n+n/256 is zstd's
// bound, and the rest its frame. A huge page of small values is left to
// the codec: it is tried in several encodings, and compresses well.
func (cw *chunkWriter) roomFor(dst []byte, n int, huge bool) []byte {
	if !huge || n <= cw.keepScratch() {
		return dst
	}
	return slices.Grow(dst, n+n>>8+4096)
}

func pageTypeFor(version int) meta.PageType {
	if version == 2 {
		return meta.PageDataV2
	}
	return meta.PageData
}

// writeDataPage writes cw.page, the encoded page p, header first.
func (cw *chunkWriter) writeDataPage(p pageRange, nulls int64, b bounds) error {
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
	e := &cw.page
	numLevels := int32(p.l1 - p.l0)
	if cw.cfg.pageVersion == 2 {
		hdr := meta.PageHeader{
			Type: meta.PageDataV2,
			DataPageHeaderV2: &meta.DataPageHeaderV2{
				NumValues:                  numLevels,
				NumNulls:                   int32(nulls),
				NumRows:                    int32(p.rows),
				Encoding:                   e.enc,
				DefinitionLevelsByteLength: int32(e.defLen),
				RepetitionLevelsByteLength: int32(e.repLen),
				IsCompressed:               ptr(e.compressed),
				Statistics:                 st,
			},
		}
		return cw.writePage(&hdr, e.uncompressed, &e.data)
	}
	hdr := meta.PageHeader{
		Type: meta.PageData,
		DataPageHeader: &meta.DataPageHeader{
			NumValues:               numLevels,
			Encoding:                e.enc,
			DefinitionLevelEncoding: meta.EncodingRLE,
			RepetitionLevelEncoding: meta.EncodingRLE,
			Statistics:              st,
		},
	}
	return cw.writePage(&hdr, e.uncompressed, &e.data)
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

// writeDictionaryPage writes the dictionary page, compressed by a trial
// that weighed it against the other encodings, or now.
func (cw *chunkWriter) writeDictionaryPage(hdr *meta.PageHeader) error {
	if !cw.dictPageReady {
		if err := cw.prepareDictionary(); err != nil {
			return err
		}
	}
	return cw.writePage(hdr, cw.dictPageSize, &cw.dictPage)
}

// writePage fills in the header's sizes and checksum and writes the header
// and the page's (compressed) bytes. A page larger than the scratch that
// trim keeps, which goes to a chunk buffer, is handed to it instead of
// copied, and *page is then nil.
func (cw *chunkWriter) writePage(hdr *meta.PageHeader, uncompressedSize int, page *[]byte) error {
	data := *page
	hdr.UncompressedPageSize = int32(uncompressedSize)
	hdr.CompressedPageSize = int32(len(data))
	if cw.cfg.checksums {
		hdr.CRC = ptr(int32(crc32.ChecksumIEEE(data)))
	}
	cw.header = hdr.Append(cw.header[:0])
	if _, err := cw.out.Write(cw.header); err != nil {
		return err
	}
	if b, ok := cw.out.w.(*chunkBuffer); ok && len(data) > cw.keepScratch() {
		b.adopt(data)
		cw.out.n += int64(len(data))
		*page = nil
	} else if _, err := cw.out.Write(data); err != nil {
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

// levelHistogram counts the levels (each at most max) by level. Up to
// maxWordHistogram, each level but 0 is counted a word at a time, and 0
// is what is left.
func levelHistogram(levels []uint8, max int) []int64 {
	h := make([]int64, max+1)
	if max <= maxWordHistogram {
		rest := len(levels)
		for l := 1; l <= max; l++ {
			k := countEqual(levels, uint8(l))
			h[l] = int64(k)
			rest -= k
		}
		h[0] = int64(rest)
		return h
	}
	for _, l := range levels {
		h[l]++
	}
	return h
}

// maxWordHistogram is the greatest level that levelHistogram counts a word
// at a time: a pass per level costs less than a byte-at-a-time loop that
// increments counters in memory up to about this many passes.
const maxWordHistogram = 3

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
	if cw.order == orderBytes && d.width == 0 {
		// Strings, compared by their first 8 bytes as integers first, as
		// pageBounds compares them: most pairs differ there. Entries are
		// distinct, so the order, and the ranks, are those of any
		// comparison that agrees with bytes.Compare.
		data, off := d.data, d.offsets
		slices.SortFunc(cw.rankOrder, func(a, b int32) int {
			pa, pb := prefix8(data, off[a], off[a+1]), prefix8(data, off[b], off[b+1])
			if pa != pb {
				return cmpOrdered(pa, pb)
			}
			return bytes.Compare(data[off[a]:off[a+1]], data[off[b]:off[b+1]])
		})
	} else {
		slices.SortFunc(cw.rankOrder, func(a, b int32) int {
			return compareValues(cw.order, physical, d.entry(int(a)), d.entry(int(b)))
		})
	}
	cw.ranks = slices.Grow(cw.ranks[:0], n)[:n]
	for r, i := range cw.rankOrder {
		cw.ranks[i] = int32(r)
	}
}

// rankBlock is how many values dictPageBounds takes between its checks for
// the least and greatest ranks.
const rankBlock = 256

// dictPageBounds is pageBounds for a page of a ranked dictionary.
func (cw *chunkWriter) dictPageBounds(b bounds, v0, v1 int) bounds {
	b = b.empty()
	if v0 == v1 {
		return b
	}
	// The least and greatest ranks there are, which a page of a few dozen
	// distinct values holds within its first few hundred: the page is
	// scanned in blocks until it has both.
	lo, hi := int32(len(cw.ranks)), int32(-1)
	least, greatest := int32(0), int32(len(cw.ranks)-1)
	ranks := cw.ranks
	for idx := cw.idx[v0:v1]; len(idx) > 0 && (lo > least || hi < greatest); {
		block := idx[:min(len(idx), rankBlock)]
		for _, i := range block {
			r := ranks[i]
			lo, hi = min(lo, r), max(hi, r)
		}
		idx = idx[len(block):]
	}
	d := cw.dict.(*bytesDict)
	b.min = append(b.min, d.entry(int(cw.rankOrder[lo]))...)
	b.max = append(b.max, d.entry(int(cw.rankOrder[hi]))...)
	b.ok = true
	return b
}
