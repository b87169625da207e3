package writer

import (
	"fmt"
	"strings"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/meta"
)

// Settings are a writer's settings as people give them: the sink's
// parquet configuration and the flags of pqsink convert. Codecs, bloom
// filters and encodings are text, read by compress.Parse,
// bloom.ParseSetting and ParseEncoding (the config checks its values with
// the same grammars). Options is the one translation of settings into
// Options. Start from DefaultSettings: every field is passed to the
// writer as it is, a zero one included.
type Settings struct {
	// Codec is the codec of every column, codec[:level] (compress.Parse).
	Codec string
	// PageBytes is the target uncompressed size of a data page.
	PageBytes int64
	// PageRows is the most rows a data page holds.
	PageRows int
	// DictionaryPageBytes is the dictionary size at which a column chunk
	// falls back.
	DictionaryPageBytes int64
	// Dictionary turns dictionary encoding on.
	Dictionary bool
	// PageVersion is the data page header version, 1 or 2.
	PageVersion int
	// StatsTruncate bounds binary min/max statistics (0: never).
	StatsTruncate int
	// Checksums writes a CRC32 of every page.
	Checksums bool
	// PageIndex writes the column and offset indexes.
	PageIndex bool
	// Statistics writes min/max/null statistics.
	Statistics bool
	// Parallelism is how many column chunks of a row group are encoded at
	// once.
	Parallelism int
	// BloomFilters are column[:fpp] entries (bloom.ParseSetting).
	BloomFilters []string
	// ColumnCodecs override the codec of single columns, each Value a
	// codec[:level].
	ColumnCodecs []ColumnSetting
	// Encodings set the encoding of single columns' non-dictionary pages,
	// each Value an encoding name (ParseEncoding).
	Encodings []ColumnSetting
	// NoDictionary lists columns not to dictionary-encode.
	NoDictionary []string
	// KeyValues are key, value pairs added to the file's key-value
	// metadata, in order.
	KeyValues [][2]string
}

// ColumnSetting is a setting of one column: its dotted path and a value.
type ColumnSetting struct {
	Column, Value string
}

// DefaultSettings returns the writer's defaults as Settings.
func DefaultSettings() Settings {
	d := defaults()
	return Settings{
		Codec:               strings.ToLower(d.codec.String()),
		PageBytes:           int64(d.pageSize),
		PageRows:            d.pageRowLimit,
		DictionaryPageBytes: int64(d.dictPageSize),
		Dictionary:          d.dictionary,
		PageVersion:         d.pageVersion,
		StatsTruncate:       d.truncate,
		Checksums:           d.checksums,
		PageIndex:           d.pageIndex,
		Statistics:          d.statistics,
		Parallelism:         d.parallelism,
	}
}

// SettingError is a value of Settings that does not parse. Setting is the
// name of its field (Codec, BloomFilters, ColumnCodecs, Encodings), for a
// caller that words the message after its own flag or key.
type SettingError struct {
	Setting string
	Column  string // the column, for ColumnCodecs and Encodings
	Value   string
	Err     error
}

// Error names the setting, the column if any, and the value.
func (e *SettingError) Error() string {
	if e.Column != "" {
		return fmt.Sprintf("%s %s=%q: %v", e.Setting, e.Column, e.Value, e.Err)
	}
	return fmt.Sprintf("%s %q: %v", e.Setting, e.Value, e.Err)
}

// Unwrap returns what is wrong with the value.
func (e *SettingError) Unwrap() error { return e.Err }

// Options translates the settings into Options. A value that does not
// parse is a *SettingError; values out of range fail in New, as the
// Options do.
func (s *Settings) Options() ([]Option, error) {
	codec, level, err := compress.Parse(s.Codec)
	if err != nil {
		return nil, &SettingError{Setting: "Codec", Value: s.Codec, Err: err}
	}
	opts := []Option{
		Compression(codec, level),
		PageSize(int(s.PageBytes)),
		PageRowLimit(s.PageRows),
		DictionaryPageSize(int(s.DictionaryPageBytes)),
		Dictionary(s.Dictionary),
		DataPageVersion(s.PageVersion),
		StatisticsTruncate(s.StatsTruncate),
		PageChecksums(s.Checksums),
		PageIndex(s.PageIndex),
		Statistics(s.Statistics),
		Parallelism(s.Parallelism),
	}
	for _, b := range s.BloomFilters {
		col, fpp, err := bloom.ParseSetting(b)
		if err != nil {
			return nil, &SettingError{Setting: "BloomFilters", Value: b, Err: err}
		}
		opts = append(opts, BloomFilter(col, fpp))
	}
	for _, cs := range s.ColumnCodecs {
		c, lvl, err := compress.Parse(cs.Value)
		if err != nil {
			return nil, &SettingError{Setting: "ColumnCodecs", Column: cs.Column, Value: cs.Value, Err: err}
		}
		opts = append(opts, ColumnCompression(cs.Column, c, lvl))
	}
	for _, cs := range s.Encodings {
		enc, err := ParseEncoding(cs.Value)
		if err != nil {
			return nil, &SettingError{Setting: "Encodings", Column: cs.Column, Value: cs.Value, Err: err}
		}
		opts = append(opts, ColumnEncoding(cs.Column, enc))
	}
	for _, col := range s.NoDictionary {
		opts = append(opts, ColumnDictionary(col, false))
	}
	for _, kv := range s.KeyValues {
		opts = append(opts, KeyValue(kv[0], kv[1]))
	}
	return opts, nil
}

// encodingNames are the encodings ParseEncoding reads, by name.
var encodingNames = []struct {
	name string
	enc  meta.Encoding
}{
	{"plain", meta.EncodingPlain},
	{"rle", meta.EncodingRLE},
	{"delta_binary_packed", meta.EncodingDeltaBinaryPacked},
	{"delta_length_byte_array", meta.EncodingDeltaLengthByteArray},
	{"delta_byte_array", meta.EncodingDeltaByteArray},
	{"byte_stream_split", meta.EncodingByteStreamSplit},
}

// ParseEncoding reads the name of a column encoding, case-insensitive:
// plain, rle, delta_binary_packed, delta_length_byte_array,
// delta_byte_array or byte_stream_split.
func ParseEncoding(name string) (meta.Encoding, error) {
	lower := strings.ToLower(name)
	for _, e := range encodingNames {
		if lower == e.name {
			return e.enc, nil
		}
	}
	return 0, fmt.Errorf("unknown encoding %q", name)
}
