package main

import (
	"fmt"
	"strings"
	"unicode"
)

// enumNaming says how the constants of each enum are named in Go: a prefix
// and, optionally, a word of the thrift name that the prefix makes redundant
// (PageType.DATA_PAGE becomes PageData). An enum missing here is an error,
// so a new enum in parquet.thrift forces a naming decision.
var enumNaming = map[string]struct{ prefix, drop string }{
	"Type":                       {prefix: "Type"},
	"ConvertedType":              {prefix: "Converted"},
	"FieldRepetitionType":        {prefix: ""},
	"Encoding":                   {prefix: "Encoding"},
	"CompressionCodec":           {prefix: "Codec"},
	"PageType":                   {prefix: "Page", drop: "PAGE"},
	"BoundaryOrder":              {prefix: "Boundary"},
	"EdgeInterpolationAlgorithm": {prefix: "Edge"},
}

// initialisms are words spelled in upper case in Go names.
var initialisms = map[string]string{
	"aad": "AAD", "alp": "ALP", "bson": "BSON", "crc": "CRC", "crs": "CRS",
	"id": "ID", "ieee": "IEEE", "json": "JSON", "lz4": "LZ4", "lzo": "LZO",
	"rle": "RLE", "utc": "UTC", "utf8": "UTF8", "uuid": "UUID", "xxhash": "XXHash",
}

// goName turns a thrift identifier (snake_case, camelCase or UPPER_CASE)
// into an exported Go name with initialisms: is_adjustedToUTC becomes
// IsAdjustedToUTC, field_id becomes FieldID, FLOAT16 becomes Float16.
func goName(s string, drop string) string {
	var b strings.Builder
	for _, w := range splitWords(s) {
		if w == drop {
			continue
		}
		lw := strings.ToLower(w)
		if up, ok := initialisms[lw]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(lw[:1]))
		b.WriteString(lw[1:])
	}
	return b.String()
}

// splitWords splits at underscores and at lower-to-upper case changes;
// an upper-case run stays one word (UTC in adjustedToUTC) and digits stay
// with the word before them (FLOAT16, V1).
func splitWords(s string) []string {
	var words []string
	for _, part := range strings.Split(s, "_") {
		start := 0
		rs := []rune(part)
		for i := 1; i < len(rs); i++ {
			lowerToUpper := unicode.IsUpper(rs[i]) && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			upperRunEnd := unicode.IsUpper(rs[i]) && unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if lowerToUpper || upperRunEnd {
				words = append(words, string(rs[start:i]))
				start = i
			}
		}
		if start < len(rs) {
			words = append(words, string(rs[start:]))
		}
	}
	return words
}

func enumConstName(enum, value string) (string, error) {
	n, ok := enumNaming[enum]
	if !ok {
		return "", fmt.Errorf("enum %s has no naming rule in enumNaming", enum)
	}
	return n.prefix + goName(value, n.drop), nil
}
