package reader

import (
	"fmt"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/meta"
)

// maxBloomHeader bounds the bytes read for a Bloom filter header when the
// footer does not give the filter's length: the header is four small
// structs, a few dozen bytes in practice.
const maxBloomHeader = 256

// ColumnIndex returns the column index (per-page statistics) of a column
// chunk, or nil if the file has none.
func (f *File) ColumnIndex(rowGroup, column int) (*meta.ColumnIndex, error) {
	cc, err := f.chunkMeta(rowGroup, column)
	if err != nil {
		return nil, err
	}
	if cc.ColumnIndexOffset == nil || cc.ColumnIndexLength == nil {
		return nil, nil
	}
	where := f.where(rowGroup, column, "column index")
	buf, err := f.readRange(where, *cc.ColumnIndexOffset, int64(*cc.ColumnIndexLength))
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	ci := new(meta.ColumnIndex)
	if err := meta.Unmarshal(buf, ci); err != nil {
		return nil, fmt.Errorf("reader: %s: %w: %w", where, ErrCorrupt, err)
	}
	n := len(ci.NullPages)
	if len(ci.MinValues) != n || len(ci.MaxValues) != n || (ci.NullCounts != nil && len(ci.NullCounts) != n) {
		return nil, fmt.Errorf("reader: %s: %w: lists of %d null_pages, %d min_values, %d max_values, %d null_counts",
			where, ErrCorrupt, n, len(ci.MinValues), len(ci.MaxValues), len(ci.NullCounts))
	}
	return ci, nil
}

// OffsetIndex returns the offset index (page locations) of a column
// chunk, or nil if the file has none. The locations are checked to lie in
// the chunk, in order, with first row indexes that start at 0 and grow.
func (f *File) OffsetIndex(rowGroup, column int) (*meta.OffsetIndex, error) {
	cc, err := f.chunkMeta(rowGroup, column)
	if err != nil {
		return nil, err
	}
	if cc.OffsetIndexOffset == nil || cc.OffsetIndexLength == nil {
		return nil, nil
	}
	where := f.where(rowGroup, column, "offset index")
	buf, err := f.readRange(where, *cc.OffsetIndexOffset, int64(*cc.OffsetIndexLength))
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	oi := new(meta.OffsetIndex)
	if err := meta.Unmarshal(buf, oi); err != nil {
		return nil, fmt.Errorf("reader: %s: %w: %w", where, ErrCorrupt, err)
	}
	rows := f.md.RowGroups[rowGroup].NumRows
	var lastOff, lastRow int64
	for i, loc := range oi.PageLocations {
		switch {
		case loc.Offset < lastOff || loc.CompressedPageSize < 0 || loc.Offset > f.size-int64(loc.CompressedPageSize):
			return nil, fmt.Errorf("reader: %s: %w: page %d at offset %d of %d bytes is out of order or outside the file", where, ErrCorrupt, i, loc.Offset, loc.CompressedPageSize)
		case (i == 0 && loc.FirstRowIndex != 0) || (i > 0 && loc.FirstRowIndex <= lastRow) || loc.FirstRowIndex >= rows:
			return nil, fmt.Errorf("reader: %s: %w: page %d has first row %d after %d, in a row group of %d rows", where, ErrCorrupt, i, loc.FirstRowIndex, lastRow, rows)
		}
		lastOff, lastRow = loc.Offset+int64(loc.CompressedPageSize), loc.FirstRowIndex
	}
	return oi, nil
}

// BloomFilter returns the Bloom filter of a column chunk, or nil if the
// file has none.
func (f *File) BloomFilter(rowGroup, column int) (*bloom.Filter, error) {
	cc, err := f.chunkMeta(rowGroup, column)
	if err != nil {
		return nil, err
	}
	cm := cc.MetaData
	if cm.BloomFilterOffset == nil {
		return nil, nil
	}
	where := f.where(rowGroup, column, "bloom filter")
	off := *cm.BloomFilterOffset
	length := int64(maxBloomHeader)
	if cm.BloomFilterLength != nil {
		length = int64(*cm.BloomFilterLength)
	} else {
		length = min(length, f.size-off)
	}
	buf, err := f.readRange(where, off, length)
	if err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	var h meta.BloomFilterHeader
	n, err := h.Decode(buf)
	if err != nil {
		return nil, fmt.Errorf("reader: %s: %w: header: %w", where, ErrCorrupt, err)
	}
	if h.Algorithm.Block == nil || h.Hash.XXHash == nil || h.Compression.Uncompressed == nil {
		return nil, fmt.Errorf("reader: %s: %w: algorithm, hash or compression other than SPLIT_BLOCK, XXHASH, UNCOMPRESSED", where, ErrUnsupported)
	}
	if h.NumBytes <= 0 || h.NumBytes > bloom.MaxBytes {
		return nil, fmt.Errorf("reader: %s: %w: bitset of %d bytes", where, ErrCorrupt, h.NumBytes)
	}
	var bits []byte
	if cm.BloomFilterLength != nil {
		if int64(n)+int64(h.NumBytes) > int64(len(buf)) {
			return nil, fmt.Errorf("reader: %s: %w: %d-byte bitset exceeds the filter length %d", where, ErrCorrupt, h.NumBytes, len(buf))
		}
		bits = buf[n : n+int(h.NumBytes)]
	} else if bits, err = f.readRange(where, off+int64(n), int64(h.NumBytes)); err != nil {
		return nil, fmt.Errorf("reader: %w", err)
	}
	filter, err := bloom.Load(bits)
	if err != nil {
		return nil, fmt.Errorf("reader: %s: %w: %w", where, ErrCorrupt, err)
	}
	return filter, nil
}

func (f *File) where(rowGroup, column int, what string) string {
	return fmt.Sprintf("row group %d, column %s, %s", rowGroup, f.schema.Leaves()[column].PathString(), what)
}

// pageLocations returns the offset index's page locations of a chunk, or
// nil when there is none or it cannot be used.
func (f *File) pageLocations(rowGroup, column int) []meta.PageLocation {
	oi, err := f.OffsetIndex(rowGroup, column)
	if err != nil || oi == nil {
		return nil
	}
	return oi.PageLocations
}
