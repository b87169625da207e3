package reader

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/variant"
)

// AppendJSON appends v rendered as JSON, the form `inspect rows --json`
// prints, and returns the grown slice:
//
//   - integers as numbers (unsigned INTEGER annotations as unsigned);
//     FLOAT, DOUBLE and FLOAT16 as the shortest number that reads back to
//     the same value, NaN and the infinities as the strings "NaN",
//     "Infinity" and "-Infinity";
//   - DECIMAL as an exact string, e.g. "-12.340" (a byte array value
//     beyond its precision, which Rows refuses, as base64);
//   - DATE as "YYYY-MM-DD"; TIME as "HH:MM:SS" with 3, 6 or 9 fraction
//     digits by unit; TIMESTAMP as RFC 3339 with 3, 6 or 9 fraction digits,
//     ending in "Z" when adjusted to UTC and with no offset otherwise;
//     INT96 like a TIMESTAMP of nanoseconds not adjusted to UTC;
//   - STRING, ENUM and JSON as strings (invalid UTF-8 replaced by U+FFFD);
//     UUID in canonical form; INTERVAL as {"months":m,"days":d,"millis":n};
//     other byte arrays as base64 strings (standard alphabet, padded);
//   - lists as arrays, groups as objects in schema order, maps as objects
//     when their keys are strings and as [{"key":k,"value":v},...]
//     otherwise;
//   - VARIANT as the JSON of the value it holds (package variant).
func (v Value) AppendJSON(dst []byte) []byte {
	l := v.Logical()
	switch v.kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		return strconv.AppendBool(dst, v.Bool())
	case KindInt32:
		x := v.Int32()
		switch l.Kind {
		case schema.Int:
			if !l.Signed {
				return strconv.AppendUint(dst, uint64(uint32(x)), 10)
			}
		case schema.Decimal:
			return appendDecimal(dst, big.NewInt(int64(x)), l.Scale)
		case schema.Date:
			t, _ := v.Time()
			return appendQuotedTime(dst, t, "2006-01-02")
		case schema.Time:
			return appendTimeOfDay(dst, int64(x), l.Unit)
		}
		return strconv.AppendInt(dst, int64(x), 10)
	case KindInt64:
		x := v.Int64()
		switch l.Kind {
		case schema.Int:
			if !l.Signed {
				return strconv.AppendUint(dst, uint64(x), 10)
			}
		case schema.Decimal:
			return appendDecimal(dst, big.NewInt(x), l.Scale)
		case schema.Time:
			return appendTimeOfDay(dst, x, l.Unit)
		case schema.Timestamp:
			t, _ := v.Time()
			return appendTimestamp(dst, t, l.Unit, l.UTC)
		}
		return strconv.AppendInt(dst, x, 10)
	case KindInt96:
		t, _ := v.Time()
		return appendTimestamp(dst, t, schema.Nanos, false)
	case KindFloat:
		return jsontext.AppendFloat(dst, float64(v.Float()), 32)
	case KindDouble:
		return jsontext.AppendFloat(dst, v.Double(), 64)
	case KindBytes:
		return v.appendBytesJSON(dst, l)
	case KindList:
		if pl := v.packed(); pl != nil {
			// Room for the values and their punctuation at once, rather
			// than growing a long line step by step.
			dst = slices.Grow(dst, int(min(pl.decodedSize(), 1<<30))+2*pl.n+2)
		}
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = v.Index(i).AppendJSON(dst)
		}
		return append(dst, ']')
	case KindGroup:
		dst = append(dst, '{')
		for i, f := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsontext.AppendString(dst, f.node.Name)
			dst = append(dst, ':')
			dst = f.AppendJSON(dst)
		}
		return append(dst, '}')
	case KindMap:
		return v.appendMapJSON(dst)
	case KindVariant:
		out, err := variant.AppendJSON(dst, v.variantMeta(), v.variantValue())
		if err != nil {
			// Rows validates Variants before returning them; a Value built
			// otherwise renders an invalid Variant as null.
			return append(dst, "null"...)
		}
		return out
	}
	return append(dst, "null"...)
}

// jsonChunk is how many bytes WriteJSON gathers before it writes them.
const jsonChunk = 64 << 10

// WriteJSON writes v to w rendered as AppendJSON renders it, holding at
// most about 64 KiB of the text at a time (plus one leaf value's): a
// record whose JSON is larger than memory, such as a list of hundreds of
// millions of nulls that the file stores in a few bytes and the record in
// a bit each, streams out instead of being built whole. It returns the
// first error of w.
func (v Value) WriteJSON(w io.Writer) error {
	s := jsonStream{w: w}
	s.value(v)
	s.flush()
	return s.err
}

// jsonStream is WriteJSON's state: the text not yet written, and the
// first error of the writer, after which nothing more is written.
type jsonStream struct {
	w   io.Writer
	buf []byte
	err error
}

func (s *jsonStream) flush() {
	if s.err == nil && len(s.buf) > 0 {
		_, s.err = s.w.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

// maybeFlush writes the gathered text once it reaches jsonChunk bytes.
func (s *jsonStream) maybeFlush() {
	if len(s.buf) >= jsonChunk {
		s.flush()
	}
}

// value renders v, its lists, groups and maps element by element and
// everything else with AppendJSON.
func (s *jsonStream) value(v Value) {
	if s.err != nil {
		return
	}
	switch v.kind {
	case KindList:
		s.buf = append(s.buf, '[')
		pl := v.packed()
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			if pl != nil && pl.nulls != nil && i%64 == 0 && i+64 <= pl.n && pl.nulls[i/64] == ^uint64(0) {
				// 64 null elements at once: a record of millions of them
				// is cheap to hold, and should be as cheap to print.
				s.buf = append(s.buf, "null"...)
				for range 63 {
					s.buf = append(s.buf, ",null"...)
				}
				i += 63
				s.maybeFlush()
				continue
			}
			s.value(v.Index(i))
			if s.err != nil {
				return
			}
		}
		s.buf = append(s.buf, ']')
	case KindGroup:
		s.buf = append(s.buf, '{')
		for i, f := range v.elems {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			s.buf = jsontext.AppendString(s.buf, f.node.Name)
			s.buf = append(s.buf, ':')
			s.value(f)
		}
		s.buf = append(s.buf, '}')
	case KindMap:
		objects := v.stringKeys()
		if objects {
			s.buf = append(s.buf, '{')
		} else {
			s.buf = append(s.buf, '[')
		}
		for i := 0; i+1 < len(v.elems); i += 2 {
			if i > 0 {
				s.buf = append(s.buf, ',')
			}
			k := v.elems[i]
			switch {
			case !objects:
				s.buf = append(s.buf, `{"key":`...)
				s.value(k)
				s.buf = append(s.buf, `,"value":`...)
			case k.kind == KindBytes:
				s.buf = jsontext.AppendStringBytes(s.buf, k.bytes)
				s.buf = append(s.buf, ':')
			default:
				s.buf = jsontext.AppendString(s.buf, string(k.AppendJSON(nil)))
				s.buf = append(s.buf, ':')
			}
			s.value(v.elems[i+1])
			if !objects {
				s.buf = append(s.buf, '}')
			}
		}
		if objects {
			s.buf = append(s.buf, '}')
		} else {
			s.buf = append(s.buf, ']')
		}
	default:
		s.buf = v.AppendJSON(s.buf)
	}
	s.maybeFlush()
}

func (v Value) appendBytesJSON(dst []byte, l schema.Logical) []byte {
	b := v.bytes
	switch l.Kind {
	case schema.String, schema.Enum, schema.JSON:
		return jsontext.AppendStringBytes(dst, b)
	case schema.Decimal:
		if checkDecimal(b, l.Precision) == nil {
			return appendDecimal(dst, signedBig(b), l.Scale)
		}
		// A value its precision cannot hold (Rows refuses those; a
		// statistic may hold one) is shown as its bytes, in linear time.
	case schema.UUID:
		if len(b) == 16 {
			dst = append(dst, '"')
			for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
				if i > 0 {
					dst = append(dst, '-')
				}
				dst = hex.AppendEncode(dst, b[part[0]:part[1]])
			}
			return append(dst, '"')
		}
	case schema.Interval:
		if len(b) == 12 {
			dst = append(dst, `{"months":`...)
			dst = strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(b)), 10)
			dst = append(dst, `,"days":`...)
			dst = strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(b[4:])), 10)
			dst = append(dst, `,"millis":`...)
			dst = strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(b[8:])), 10)
			return append(dst, '}')
		}
	case schema.Float16:
		if f, ok := v.Float16(); ok {
			return jsontext.AppendFloat(dst, float64(f), 32)
		}
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// stringKeys reports whether map v renders as a JSON object: its keys
// are strings.
func (v Value) stringKeys() bool {
	if v.node != nil {
		if k, _ := v.node.MapKeyValue(); k != nil {
			switch k.Logical.Kind {
			case schema.String, schema.Enum, schema.JSON:
			default:
				return false
			}
		}
	}
	return true
}

func (v Value) appendMapJSON(dst []byte) []byte {
	if v.stringKeys() {
		dst = append(dst, '{')
		for i := 0; i+1 < len(v.elems); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			k := v.elems[i]
			if k.kind == KindBytes {
				dst = jsontext.AppendStringBytes(dst, k.bytes)
			} else {
				// A null key breaks the MAP rules; render it, don't hide it.
				dst = jsontext.AppendString(dst, string(k.AppendJSON(nil)))
			}
			dst = append(dst, ':')
			dst = v.elems[i+1].AppendJSON(dst)
		}
		return append(dst, '}')
	}
	dst = append(dst, '[')
	for i := 0; i+1 < len(v.elems); i += 2 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = v.elems[i].AppendJSON(dst)
		dst = append(dst, `,"value":`...)
		dst = v.elems[i+1].AppendJSON(dst)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendDecimal appends unscaled × 10^-scale as a quoted exact string.
func appendDecimal(dst []byte, unscaled *big.Int, scale int32) []byte {
	dst = append(dst, '"')
	dst = appendDecimalText(dst, unscaled, scale)
	return append(dst, '"')
}

// AppendDecimalNumber appends a DECIMAL value as an exact JSON number
// that keeps the column's scale (1.5 in a DECIMAL(9,4) column is
// 1.5000), where AppendJSON writes it as a string, and reports whether v
// is a DECIMAL it can write: false, and dst unchanged, for a value of
// another type, and for a byte array beyond its precision (which
// AppendJSON writes as base64). A reader parsing the number as a double
// may round it; the text is exact.
func (v Value) AppendDecimalNumber(dst []byte) ([]byte, bool) {
	l := v.Logical()
	if l.Kind != schema.Decimal {
		return dst, false
	}
	switch v.kind {
	case KindInt32:
		return appendDecimalText(dst, big.NewInt(int64(v.Int32())), l.Scale), true
	case KindInt64:
		return appendDecimalText(dst, big.NewInt(v.Int64()), l.Scale), true
	case KindBytes:
		if checkDecimal(v.bytes, l.Precision) == nil {
			return appendDecimalText(dst, signedBig(v.bytes), l.Scale), true
		}
	}
	return dst, false
}

// appendDecimalText appends unscaled × 10^-scale in decimal, with scale
// digits after the point: a JSON number.
func appendDecimalText(dst []byte, unscaled *big.Int, scale int32) []byte {
	if unscaled.Sign() < 0 {
		dst = append(dst, '-')
	}
	digits := new(big.Int).Abs(unscaled).Append(nil, 10)
	switch {
	case scale <= 0:
		dst = append(dst, digits...)
		for range -scale {
			dst = append(dst, '0')
		}
	case int(scale) >= len(digits):
		dst = append(dst, "0."...)
		for range int(scale) - len(digits) {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		point := len(digits) - int(scale)
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		dst = append(dst, digits[point:]...)
	}
	return dst
}

func appendQuotedTime(dst []byte, t time.Time, layout string) []byte {
	dst = append(dst, '"')
	dst = t.AppendFormat(dst, layout)
	return append(dst, '"')
}

// fractionLayout gives the fraction digits of each unit.
func fractionLayout(u schema.TimeUnit) string {
	switch u {
	case schema.Millis:
		return ".000"
	case schema.Micros:
		return ".000000"
	}
	return ".000000000"
}

func appendTimestamp(dst []byte, t time.Time, u schema.TimeUnit, utc bool) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return appendQuotedTime(dst, t, timestampLayout(u, utc))
	}
	// The layout's digits written directly: this runs once per timestamp
	// value of every record rendered, and time.Format parses its layout
	// each time.
	hour, minute, sec := t.Clock()
	dst = appendMinute(dst, year, int(month), day, hour, minute)
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	switch ns := t.Nanosecond(); u {
	case schema.Millis:
		dst = appendDigits(dst, ns/1e6, 3)
	case schema.Micros:
		dst = appendDigits(dst, ns/1e3, 6)
	default:
		dst = appendDigits(dst, ns, 9)
	}
	if utc {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}

// timestampLayout is the time layout of a TIMESTAMP's JSON form.
func timestampLayout(u schema.TimeUnit, utc bool) string {
	switch {
	case u == schema.Millis && utc:
		return "2006-01-02T15:04:05.000Z"
	case u == schema.Millis:
		return "2006-01-02T15:04:05.000"
	case u == schema.Micros && utc:
		return "2006-01-02T15:04:05.000000Z"
	case u == schema.Micros:
		return "2006-01-02T15:04:05.000000"
	case utc:
		return "2006-01-02T15:04:05.000000000Z"
	}
	return "2006-01-02T15:04:05.000000000"
}

// appendMinute appends `"YYYY-MM-DDTHH:MM:`, a timestamp's JSON up to its
// seconds.
func appendMinute(dst []byte, year, month, day, hour, minute int) []byte {
	dst = append(dst, '"')
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, month, 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, minute, 2)
	return append(dst, ':')
}

// appendDigits appends the n low decimal digits of v >= 0, zero-padded.
func appendDigits(dst []byte, v, n int) []byte {
	var buf [9]byte
	for i := n - 1; i >= 0; i-- {
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[:n]...)
}

func appendTimeOfDay(dst []byte, x int64, u schema.TimeUnit) []byte {
	var d time.Duration
	switch u {
	case schema.Millis:
		d = time.Duration(x) * time.Millisecond
	case schema.Micros:
		d = time.Duration(x) * time.Microsecond
	default:
		d = time.Duration(x)
	}
	// Times are within a day; anything else is rendered modulo a day
	// rather than rejected, so that a bad value stays visible.
	t := time.Unix(0, 0).UTC().Add(d)
	return appendQuotedTime(dst, t, "15:04:05"+fractionLayout(u))
}
