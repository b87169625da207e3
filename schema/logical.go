package schema

import (
	"strconv"
	"strings"
)

// Kind is a logical type: how the bytes of a physical type, or the shape of
// a group, are to be interpreted. The zero value None means no annotation.
type Kind uint8

// The logical kinds of LogicalTypes.md. Interval exists only as a legacy
// ConvertedType in the file metadata, but is a kind like any other here.
// List, Map, Variant and File annotate groups; the others annotate leaves.
const (
	None Kind = iota
	String
	Enum
	UUID
	Int
	Decimal
	Float16
	Date
	Time
	Timestamp
	Interval
	JSON
	BSON
	List
	Map
	Unknown
	Variant
	Geometry
	Geography
	File
)

var kindNames = [...]string{
	None:      "NONE",
	String:    "STRING",
	Enum:      "ENUM",
	UUID:      "UUID",
	Int:       "INTEGER",
	Decimal:   "DECIMAL",
	Float16:   "FLOAT16",
	Date:      "DATE",
	Time:      "TIME",
	Timestamp: "TIMESTAMP",
	Interval:  "INTERVAL",
	JSON:      "JSON",
	BSON:      "BSON",
	List:      "LIST",
	Map:       "MAP",
	Unknown:   "UNKNOWN",
	Variant:   "VARIANT",
	Geometry:  "GEOMETRY",
	Geography: "GEOGRAPHY",
	File:      "FILE",
}

// String returns the annotation's name in message syntax, e.g. "INTEGER".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// TimeUnit is the unit of a Time or Timestamp. The zero value is no unit,
// which validation rejects, so that a forgotten unit is never taken for
// milliseconds.
type TimeUnit uint8

// Time units.
const (
	Millis TimeUnit = iota + 1
	Micros
	Nanos
)

// String returns "MILLIS", "MICROS" or "NANOS".
func (u TimeUnit) String() string {
	switch u {
	case Millis:
		return "MILLIS"
	case Micros:
		return "MICROS"
	case Nanos:
		return "NANOS"
	}
	return "TimeUnit(" + strconv.Itoa(int(u)) + ")"
}

// Edge interpolation algorithms a Geography may name in Logical.Algorithm.
// The empty string means the default, spherical.
var geographyAlgorithms = []string{"SPHERICAL", "VINCENTY", "THOMAS", "ANDOYER", "KARNEY"}

// Logical is a logical type annotation with its parameters. It is a
// comparable value; the zero value means no annotation. Parameters that do
// not belong to Kind are cleared when the node enters a Schema.
type Logical struct {
	Kind Kind

	BitWidth int8 // Int: 8, 16, 32 or 64
	Signed   bool // Int

	Precision int32 // Decimal: number of digits, at least 1
	Scale     int32 // Decimal: digits right of the point, 0..Precision

	Unit TimeUnit // Time, Timestamp
	UTC  bool     // Time, Timestamp: isAdjustedToUTC

	SpecVersion int8 // Variant: specification version; 0 means 1

	CRS       string // Geometry, Geography: coordinate reference system; empty means OGC:CRS84
	Algorithm string // Geography: edge interpolation, e.g. "SPHERICAL"; empty means SPHERICAL
}

// normalize clears the parameters that do not belong to the kind, so that
// two annotations that mean the same compare equal.
func (l Logical) normalize() Logical {
	switch l.Kind {
	case Int:
		return Logical{Kind: Int, BitWidth: l.BitWidth, Signed: l.Signed}
	case Decimal:
		return Logical{Kind: Decimal, Precision: l.Precision, Scale: l.Scale}
	case Time, Timestamp:
		return Logical{Kind: l.Kind, Unit: l.Unit, UTC: l.UTC}
	case Variant:
		v := l.SpecVersion
		if v == 0 {
			v = 1
		}
		return Logical{Kind: Variant, SpecVersion: v}
	case Geometry:
		return Logical{Kind: Geometry, CRS: l.CRS}
	case Geography:
		return Logical{Kind: Geography, CRS: l.CRS, Algorithm: l.Algorithm}
	}
	return Logical{Kind: l.Kind}
}

// String returns the annotation in message syntax, e.g. "TIMESTAMP(MICROS,true)",
// "DECIMAL(18,4)", "INTEGER(8,true)" or "STRING". It returns "" for no
// annotation.
func (l Logical) String() string {
	return string(l.appendText(nil))
}

func (l Logical) appendText(b []byte) []byte {
	switch l.Kind {
	case None:
		return b
	case Int:
		b = append(b, "INTEGER("...)
		b = strconv.AppendInt(b, int64(l.BitWidth), 10)
		b = append(b, ',')
		b = strconv.AppendBool(b, l.Signed)
		return append(b, ')')
	case Decimal:
		b = append(b, "DECIMAL("...)
		b = strconv.AppendInt(b, int64(l.Precision), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(l.Scale), 10)
		return append(b, ')')
	case Time, Timestamp:
		b = append(b, l.Kind.String()...)
		b = append(b, '(')
		b = append(b, l.Unit.String()...)
		b = append(b, ',')
		b = strconv.AppendBool(b, l.UTC)
		return append(b, ')')
	case Variant:
		v := l.SpecVersion
		if v == 0 {
			v = 1
		}
		b = append(b, "VARIANT("...)
		b = strconv.AppendInt(b, int64(v), 10)
		return append(b, ')')
	case Geometry, Geography:
		b = append(b, l.Kind.String()...)
		if l.CRS == "" && l.Algorithm == "" {
			return b
		}
		b = append(b, '(')
		b = appendWord(b, l.CRS)
		if l.Algorithm != "" {
			b = append(b, ',')
			b = appendWord(b, l.Algorithm)
		}
		return append(b, ')')
	}
	return append(b, l.Kind.String()...)
}

// appendWord appends s bare when the message syntax can read it back as one
// word, and quoted otherwise.
func appendWord(b []byte, s string) []byte {
	if isBareWord(s) {
		return append(b, s...)
	}
	return strconv.AppendQuote(b, s)
}

// isBareWord reports whether s is non-empty and made only of bytes that the
// message syntax reads as part of a word.
func isBareWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_-.$:@+#", c) >= 0
}
