package writer

import (
	"fmt"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/internal/version"
	"github.com/pqsink/pqsink/meta"
)

// Option configures a Writer. Options that can be wrong (a column that the
// schema lacks, an encoding a column's type can't take) fail in New.
type Option func(*config) error

type columnConfig struct {
	codec      *meta.CompressionCodec
	level      int
	dictionary *bool
	encoding   *meta.Encoding
	bloomFPP   float64
}

type config struct {
	codec          meta.CompressionCodec
	level          int
	pageSize       int
	pageRowLimit   int
	dictPageSize   int
	dictionary     bool
	pageVersion    int
	truncate       int
	checksums      bool
	pageIndex      bool
	createdBy      string
	keyValues      []meta.KeyValue
	columns        map[string]*columnConfig
	statistics     bool
	sizeStatistics bool
	adaptive       bool
	bloomMaxBytes  int
	codecs         *Codecs  // nil: the writer's own
	scratch        *Scratch // nil: the writer's own
	parallelism    int
}

func defaults() config {
	return config{
		codec:          meta.CodecSnappy,
		pageSize:       1 << 20,
		pageRowLimit:   20_000,
		dictPageSize:   1 << 20,
		dictionary:     true,
		pageVersion:    1,
		truncate:       64,
		checksums:      true,
		pageIndex:      true,
		statistics:     true,
		sizeStatistics: true,
		adaptive:       true,
		bloomMaxBytes:  1 << 20,
		createdBy:      version.CreatedBy(),
		columns:        map[string]*columnConfig{},
		parallelism:    1,
	}
}

func (c *config) column(path string) *columnConfig {
	cc := c.columns[path]
	if cc == nil {
		cc = &columnConfig{}
		c.columns[path] = cc
	}
	return cc
}

// Compression sets the codec of every column, with a codec-specific level
// (0 means the codec's default).
// Defaults to SNAPPY.
func Compression(codec meta.CompressionCodec, level int) Option {
	return func(c *config) error {
		c.codec, c.level = codec, level
		return nil
	}
}

// ColumnCompression overrides the codec of one column, named by its dotted
// path (e.g. "tags.list.element").
func ColumnCompression(path string, codec meta.CompressionCodec, level int) Option {
	return func(c *config) error {
		cc := c.column(path)
		cc.codec, cc.level = &codec, level
		return nil
	}
}

// PageSize is the target uncompressed size of a data page. A page ends at
// the first record boundary after the target.
// Defaults to 1 MiB.
func PageSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("page size %d: must be positive", n)
		}
		c.pageSize = n
		return nil
	}
}

// PageRowLimit caps the rows of a data page, so the page index can skip at a
// useful granularity even for tiny values.
// Defaults to 20,000.
func PageRowLimit(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("page row limit %d: must be positive", n)
		}
		c.pageRowLimit = n
		return nil
	}
}

// DictionaryPageSize is the largest dictionary a column chunk builds before
// it falls back to the column's fallback encoding for its remaining pages.
// Defaults to 1 MiB.
func DictionaryPageSize(n int) Option {
	return func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("dictionary page size %d: must be positive", n)
		}
		c.dictPageSize = n
		return nil
	}
}

// Dictionary turns dictionary encoding on or off for every column.
// Defaults to on.
func Dictionary(enabled bool) Option {
	return func(c *config) error {
		c.dictionary = enabled
		return nil
	}
}

// ColumnDictionary turns dictionary encoding on or off for one column.
func ColumnDictionary(path string, enabled bool) Option {
	return func(c *config) error {
		c.column(path).dictionary = &enabled
		return nil
	}
}

// ColumnEncoding sets the non-dictionary encoding of one column: the one its
// pages use when dictionary encoding is off, after the dictionary outgrows
// its limit, or instead of a dictionary that doesn't pay for itself. One
// of PLAIN, RLE (BOOLEAN), DELTA_BINARY_PACKED (INT32, INT64),
// DELTA_LENGTH_BYTE_ARRAY (BYTE_ARRAY), DELTA_BYTE_ARRAY (BYTE_ARRAY,
// FIXED), BYTE_STREAM_SPLIT (FLOAT, DOUBLE, INT32, INT64, FIXED). The
// encoding is used in either data page version, although some readers
// reject the DELTA_* encodings and BYTE_STREAM_SPLIT in v1 pages (icebird's
// hyparquet rejects DELTA_BYTE_ARRAY there), and icebird's hyparquet
// cannot read BYTE_STREAM_SPLIT in compressed v2 pages.
// Defaults to the choice of AdaptiveEncoding.
func ColumnEncoding(path string, enc meta.Encoding) Option {
	return func(c *config) error {
		c.column(path).encoding = &enc
		return nil
	}
}

// AdaptiveEncoding lets each column chunk pick its non-dictionary encoding
// among those its type allows in the file's data page version, and
// whether to use a dictionary at all, by trial: the chunk's first data
// page is encoded each way and compressed with the chunk's codec, and the
// smallest wins. In data page v1 (the default, which every reader reads)
// the choice is PLAIN, or RLE for BOOLEAN: the encodings parquet-java's
// v1 writer uses. In v2 it adds DELTA_BINARY_PACKED (INT32, INT64) and
// DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY (text and plain binary);
// BYTE_STREAM_SPLIT is never chosen, only given with ColumnEncoding.
// A later page whose compressed size per value strays by more than 10%
// from the trial's runs the trial again and may change the encoding of the
// pages from there on; the next chunk of the column (the next row group,
// or the next file after Reset) keeps the choice when its first page
// confirms it. Off, columns use their dictionary while it fits and their
// encoding (PLAIN unless set with ColumnEncoding) after, as parquet-java's
// v1 writer does. A column given an encoding with ColumnEncoding chooses
// only whether to use its dictionary.
// Defaults to on.
func AdaptiveEncoding(enabled bool) Option {
	return func(c *config) error {
		c.adaptive = enabled
		return nil
	}
}

// DataPageVersion selects data page v1 or v2 headers, and with them the
// encodings AdaptiveEncoding chooses from.
// Defaults to 1, which every reader understands.
func DataPageVersion(v int) Option {
	return func(c *config) error {
		if v != 1 && v != 2 {
			return fmt.Errorf("data page version %d: must be 1 or 2", v)
		}
		c.pageVersion = v
		return nil
	}
}

// BloomFilter writes a split-block bloom filter for one column, sized for
// each chunk's distinct values at the false-positive probability fpp.
func BloomFilter(path string, fpp float64) Option {
	return func(c *config) error {
		if !(fpp > 0 && fpp < 1) {
			return fmt.Errorf("bloom filter on %s: false-positive probability %g must be in (0, 1)", path, fpp)
		}
		c.column(path).bloomFPP = fpp
		return nil
	}
}

// BloomFilterMaxBytes caps the bitset of every bloom filter: a filter
// sized for a tiny false-positive probability (BloomFilter's fpp) and many
// distinct values would otherwise take up to 128 MiB per column chunk,
// more than the data it indexes. A capped filter has a higher
// false-positive rate than asked for, never false negatives. n is rounded
// down to a power of two of at least 32 bytes.
// Defaults to 1 MiB, as parquet-java's parquet.bloom.filter.max.bytes.
func BloomFilterMaxBytes(n int) Option {
	return func(c *config) error {
		if n < bloom.MinBytes || n > bloom.MaxBytes {
			return fmt.Errorf("bloom filter max bytes %d: must be in %d..%d", n, bloom.MinBytes, bloom.MaxBytes)
		}
		p := bloom.MinBytes
		for p*2 <= n {
			p *= 2
		}
		c.bloomMaxBytes = p
		return nil
	}
}

// StatisticsTruncate bounds the length of binary min/max values in
// statistics and the column index; truncated bounds are marked inexact.
// 0 disables truncation.
// Defaults to 64 bytes.
func StatisticsTruncate(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("statistics truncate length %d: must not be negative", n)
		}
		c.truncate = n
		return nil
	}
}

// PageChecksums writes a CRC32 of every page into its header.
// Defaults to on.
func PageChecksums(enabled bool) Option {
	return func(c *config) error {
		c.checksums = enabled
		return nil
	}
}

// PageIndex writes the ColumnIndex and OffsetIndex of every column chunk.
// Defaults to on.
func PageIndex(enabled bool) Option {
	return func(c *config) error {
		c.pageIndex = enabled
		return nil
	}
}

// Statistics writes min/max/null-count statistics for pages and chunks.
// Defaults to on.
func Statistics(enabled bool) Option {
	return func(c *config) error {
		c.statistics = enabled
		return nil
	}
}

// KeyValue adds an entry to the key_value_metadata of every file the
// Writer writes, the first and those after Reset. A later entry with the
// same key replaces an earlier one, and Writer.SetKeyValue replaces it for
// one file.
func KeyValue(key, value string) Option {
	return func(c *config) error {
		c.keyValues = setKeyValue(c.keyValues, key, value)
		return nil
	}
}

// CreatedBy sets the file's created_by string.
// Defaults to "pqsink version X (build Y)".
func CreatedBy(s string) Option {
	return func(c *config) error {
		c.createdBy = s
		return nil
	}
}

// Parallelism encodes and compresses up to n column chunks of a row group
// at once, on goroutines of the writer's own. The file is the same, byte
// for byte, whatever n: each chunk is encoded alone, into a buffer of its
// column, and the chunks are written in column order. It costs the memory
// of the compressed chunks that wait for their turn, and a process that
// runs many writers at once (the sink) has its parallelism already.
// Defaults to 1: WriteRowGroup encodes on the caller's goroutine and
// streams each chunk to the output as it is encoded.
func Parallelism(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("parallelism %d: must be at least 1", n)
		}
		c.parallelism = n
		return nil
	}
}
