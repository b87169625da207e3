package compress

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/meta"
)

// codecNames maps the spellings Parse accepts to codecs. The deprecated
// Hadoop LZ4 is left out on purpose: Compression.md asks writers not to offer
// it, and "lz4" is too easily taken for LZ4_RAW.
var codecNames = map[string]meta.CompressionCodec{
	"none":         meta.CodecUncompressed,
	"uncompressed": meta.CodecUncompressed,
	"snappy":       meta.CodecSnappy,
	"gzip":         meta.CodecGzip,
	"zstd":         meta.CodecZstd,
	"lz4_raw":      meta.CodecLZ4Raw,
	"lz4raw":       meta.CodecLZ4Raw,
	"brotli":       meta.CodecBrotli,
}

// allowed lists the values Parse accepts, for its error messages.
const allowed = "none, uncompressed, snappy, gzip[:1-9], zstd[:1-22], lz4_raw[:1-9], lz4raw[:1-9], brotli[:1-11]"

// Parse reads a codec setting as written in configuration: a codec name,
// case-insensitive, optionally followed by ":level" ("zstd", "zstd:3",
// "gzip:9", "lz4_raw", "none"). The level is 0 when none is given, which
// Level takes as the codec's default.
func Parse(s string) (meta.CompressionCodec, int, error) {
	name, levelText, hasLevel := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	c, ok := codecNames[name]
	if !ok {
		hint := ""
		if name == "lz4" {
			hint = " (the Hadoop-framed LZ4 codec is deprecated; use lz4_raw)"
		}
		return 0, 0, fmt.Errorf("compression %q: unknown codec%s; allowed: %s", s, hint, allowed)
	}
	if !hasLevel {
		return c, 0, nil
	}
	level, err := strconv.Atoi(levelText)
	if err != nil || level == 0 {
		return 0, 0, fmt.Errorf("compression %q: level %q is not a non-zero integer; allowed: %s", s, levelText, allowed)
	}
	if err := checkLevel(c, level); err != nil {
		return 0, 0, fmt.Errorf("compression %q: %w; allowed: %s", s, err, allowed)
	}
	return c, level, nil
}
