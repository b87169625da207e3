package compress

import (
	"fmt"
	"slices"
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

// names are the codec names, one per codec, for a caller that lists them
// (the aliases uncompressed and lz4raw are left out).
var names = []string{"none", "snappy", "gzip", "zstd", "lz4_raw", "brotli"}

// allowed lists the values Parse accepts, for its error messages.
const allowed = "none, uncompressed, snappy, gzip[:1-9], zstd[:1-22], lz4_raw[:1-9], lz4raw[:1-9], brotli[:1-11]"

// Names returns the codec names Parse accepts, one per codec, in the order
// a list of them shows them: none, snappy, gzip, zstd, lz4_raw, brotli.
// Parse also takes uncompressed for none and lz4raw for lz4_raw.
func Names() []string { return slices.Clone(names) }

// ParseError is an error of Parse. Its fields are the parts of the
// setting, for a caller that words its own message (the config names its
// key and lists Names).
type ParseError struct {
	Setting string // the setting as given
	Name    string // the codec name, in lower case
	Level   string // the text after ':', when there is one
	// Known reports that Name is a codec: the level is what is wrong.
	// MinLevel and MaxLevel are the levels the codec takes, both 0 when
	// it takes none.
	Known              bool
	MinLevel, MaxLevel int
	// Hint says what to use instead of an unknown name, or is empty.
	Hint string
	msg  string
}

// Error returns the message, which lists the allowed values.
func (e *ParseError) Error() string { return e.msg }

// Parse reads a codec setting as written in configuration: a codec name,
// case-insensitive, optionally followed by ":level" ("zstd", "zstd:3",
// "gzip:9", "lz4_raw", "none"). The level is 0 when none is given, which
// Level takes as the codec's default. An error is a *ParseError.
func Parse(s string) (meta.CompressionCodec, int, error) {
	name, levelText, hasLevel := strings.Cut(strings.ToLower(strings.TrimSpace(s)), ":")
	e := &ParseError{Setting: s, Name: name, Level: levelText}
	c, ok := codecNames[name]
	if !ok {
		hint := ""
		if name == "lz4" {
			e.Hint = "the Hadoop-framed LZ4 codec is deprecated; use lz4_raw"
			hint = " (" + e.Hint + ")"
		}
		e.msg = fmt.Sprintf("compression %q: unknown codec%s; allowed: %s", s, hint, allowed)
		return 0, 0, e
	}
	if !hasLevel {
		return c, 0, nil
	}
	e.Known = true
	e.MinLevel, e.MaxLevel = levelRange(c)
	level, err := strconv.Atoi(levelText)
	if err != nil || level == 0 {
		e.msg = fmt.Sprintf("compression %q: level %q is not a non-zero integer; allowed: %s", s, levelText, allowed)
		return 0, 0, e
	}
	if err := checkLevel(c, level); err != nil {
		e.msg = fmt.Sprintf("compression %q: %v; allowed: %s", s, err, allowed)
		return 0, 0, e
	}
	return c, level, nil
}
