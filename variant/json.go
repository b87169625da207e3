package variant

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/pqsink/pqsink/internal/jsontext"
)

// MaxDepth bounds the nesting of objects and arrays that this package
// reads or writes. Reading recurses once per level, so without a bound a
// value of a few megabytes could nest a million levels deep; 1000 is far
// beyond real data and is also the JSON scanner's limit, so any JSON
// document the Encoder accepts can be decoded again.
const MaxDepth = 1000

// microsPerDay bounds a TimeNTZ value.
const microsPerDay = 24 * 60 * 60 * 1_000_000

// Validate checks that (metadata, value) is a well-formed Variant: the
// metadata as ParseMetadata does; every header, offset and length in
// bounds; known primitive types; UTF-8 strings; decimal scales of at most
// 38 and unscaled values within the precision of their width; times of
// day within a day; object field ids inside the dictionary with names in
// strictly increasing order (so unique); nesting of at most MaxDepth; and
// no trailing bytes.
//
// It also rejects objects and arrays whose elements together take more
// bytes than the values region that holds them, i.e. elements sharing
// bytes. The spec describes every nested value as contiguous and self
// contained; allowing shared elements would let a few bytes stand for an
// exponentially large value.
func Validate(metadata, value []byte) error {
	v, err := New(metadata, value)
	if err != nil {
		return err
	}
	d := decoder{meta: v.meta}
	_, err = d.walk(nil, v.raw, 0)
	return err
}

// AppendJSON appends the JSON text of the Variant (metadata, value) to
// dst, checking the input as Validate does. See the package documentation
// for how each type is rendered.
func AppendJSON(dst, metadata, value []byte) ([]byte, error) {
	v, err := New(metadata, value)
	if err != nil {
		return dst, err
	}
	return v.AppendJSON(dst)
}

// AppendJSON appends the JSON text of v to dst, checking v as Validate
// does.
func (v Value) AppendJSON(dst []byte) ([]byte, error) {
	if len(v.raw) == 0 {
		return dst, fmt.Errorf("variant: empty value")
	}
	d := decoder{meta: v.meta, emit: true}
	return d.walk(dst, v.raw, 0)
}

// decoder walks a value, checking it and, when emit is set, rendering it.
type decoder struct {
	meta Metadata
	emit bool
}

// walk checks the value b (whose size is known to be len(b)) at depth
// and appends its JSON to dst when d.emit is set. pos in errors is the
// byte offset within the enclosing top-level value when known.
func (d *decoder) walk(dst, b []byte, depth int) ([]byte, error) {
	switch b[0] & 3 {
	case basicShortString:
		s := b[1:]
		if !utf8.Valid(s) {
			return dst, fmt.Errorf("variant: short string is not valid UTF-8")
		}
		if d.emit {
			dst = jsontext.AppendStringBytes(dst, s)
		}
		return dst, nil
	case basicPrimitive:
		return d.primitive(dst, b)
	}
	if depth >= MaxDepth {
		return dst, fmt.Errorf("variant: nesting deeper than %d levels", MaxDepth)
	}
	c := containerOf(b)
	isObject := b[0]&3 == basicObject
	if d.emit {
		if isObject {
			dst = append(dst, '{')
		} else {
			dst = append(dst, '[')
		}
	}
	total := 0
	var prev []byte
	for i := 0; i < c.n; i++ {
		child, err := c.child(i)
		if err != nil {
			return dst, fmt.Errorf("variant %s: %w", kindName(isObject), err)
		}
		total += len(child)
		if total > len(c.fields) {
			return dst, fmt.Errorf("variant %s: elements overlap: %d elements take more than the %d bytes of values", kindName(isObject), i+1, len(c.fields))
		}
		if d.emit && i > 0 {
			dst = append(dst, ',')
		}
		if isObject {
			id := c.id(i)
			if id >= d.meta.n {
				return dst, fmt.Errorf("variant object: field %d has id %d, dictionary has %d names", i, id, d.meta.n)
			}
			name := d.meta.Key(id)
			if i > 0 && bytes.Compare(prev, name) >= 0 {
				return dst, fmt.Errorf("variant object: field %d %q is not after field %d %q", i, name, i-1, prev)
			}
			prev = name
			if d.emit {
				dst = jsontext.AppendStringBytes(dst, name)
				dst = append(dst, ':')
			}
			dst, err = d.walk(dst, child, depth+1)
			if err != nil {
				return dst, fmt.Errorf("field %q: %w", name, err)
			}
			continue
		}
		dst, err = d.walk(dst, child, depth+1)
		if err != nil {
			return dst, fmt.Errorf("element %d: %w", i, err)
		}
	}
	if d.emit {
		if isObject {
			dst = append(dst, '}')
		} else {
			dst = append(dst, ']')
		}
	}
	return dst, nil
}

func kindName(isObject bool) string {
	if isObject {
		return "object"
	}
	return "array"
}

func (d *decoder) primitive(dst, b []byte) ([]byte, error) {
	id := b[0] >> 2
	v := Value{meta: d.meta, raw: b}
	data := b[1:]
	switch id {
	case primNull:
		return d.add(dst, "null"), nil
	case primTrue:
		return d.add(dst, "true"), nil
	case primFalse:
		return d.add(dst, "false"), nil
	case primInt8, primInt16, primInt32, primInt64:
		if d.emit {
			i, _ := v.Int()
			dst = strconv.AppendInt(dst, i, 10)
		}
		return dst, nil
	case primDouble:
		f, _ := v.Double()
		if d.emit {
			dst = jsontext.AppendFloat(dst, f, 64)
		}
		return dst, nil
	case primFloat:
		f, _ := v.Float()
		if d.emit {
			dst = jsontext.AppendFloat(dst, float64(f), 32)
		}
		return dst, nil
	case primDecimal4, primDecimal8, primDecimal16:
		dec, _ := v.Decimal()
		if dec.Scale > 38 {
			return dst, fmt.Errorf("variant %v: scale %d above 38", primTypes[id], dec.Scale)
		}
		hi, lo, _ := dec.magnitude()
		if id == primDecimal16 {
			// 10^38 = 0x4b3b4ca85a86c47a:098a224000000000
			if hi > 0x4b3b4ca85a86c47a || hi == 0x4b3b4ca85a86c47a && lo >= 0x098a224000000000 {
				return dst, fmt.Errorf("variant decimal16: unscaled value has more than 38 digits")
			}
		} else if hi != 0 || lo > maxUnscaled(id) {
			return dst, fmt.Errorf("variant %v: unscaled value %s has too many digits", primTypes[id], dec.Big())
		}
		if d.emit {
			dst = dec.AppendText(dst)
		}
		return dst, nil
	case primDate:
		if d.emit {
			days, _ := v.Date()
			dst = append(dst, '"')
			dst = time.Unix(int64(days)*86400, 0).UTC().AppendFormat(dst, "2006-01-02")
			dst = append(dst, '"')
		}
		return dst, nil
	case primTimestamp, primTimestampNTZ, primTimestampNanos, primTimestampNTZNanos:
		if d.emit {
			ts, _ := v.Timestamp()
			var t time.Time
			layout := "2006-01-02T15:04:05.000000"
			if id == primTimestampNanos || id == primTimestampNTZNanos {
				t = time.Unix(0, ts).UTC()
				layout = "2006-01-02T15:04:05.000000000"
			} else {
				t = time.UnixMicro(ts).UTC()
			}
			if id == primTimestamp || id == primTimestampNanos {
				layout += "Z07:00"
			}
			dst = append(dst, '"')
			dst = t.AppendFormat(dst, layout)
			dst = append(dst, '"')
		}
		return dst, nil
	case primTimeNTZ:
		t, _ := v.TimeNTZ()
		if t < 0 || t >= microsPerDay {
			return dst, fmt.Errorf("variant time_ntz: %d microseconds is not a time of day", t)
		}
		if d.emit {
			dst = appendTimeOfDay(dst, t)
		}
		return dst, nil
	case primBinary:
		if d.emit {
			p, _ := v.Bytes()
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, p)
			dst = append(dst, '"')
		}
		return dst, nil
	case primString:
		s := data[4:]
		if !utf8.Valid(s) {
			return dst, fmt.Errorf("variant string: not valid UTF-8")
		}
		if d.emit {
			dst = jsontext.AppendStringBytes(dst, s)
		}
		return dst, nil
	case primUUID:
		if d.emit {
			u, _ := v.UUID()
			dst = appendUUID(dst, u)
		}
		return dst, nil
	}
	// valueSize rejected unknown ids before we got here.
	return dst, fmt.Errorf("variant: unknown primitive type %d", id)
}

func (d *decoder) add(dst []byte, lit string) []byte {
	if d.emit {
		dst = append(dst, lit...)
	}
	return dst
}

func appendTimeOfDay(dst []byte, micros int64) []byte {
	secs := micros / 1_000_000
	frac := micros % 1_000_000
	dst = append(dst, '"')
	dst = append2(dst, secs/3600)
	dst = append(dst, ':')
	dst = append2(dst, secs/60%60)
	dst = append(dst, ':')
	dst = append2(dst, secs%60)
	dst = append(dst, '.')
	for div := int64(100_000); div > 0; div /= 10 {
		dst = append(dst, byte('0'+frac/div%10))
	}
	return append(dst, '"')
}

func append2(dst []byte, v int64) []byte { return append(dst, byte('0'+v/10), byte('0'+v%10)) }

func appendUUID(dst []byte, u [16]byte) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
	}
	return append(dst, '"')
}

// maxUnscaled is the largest unscaled magnitude of decimal4 or decimal8:
// the spec ties decimal4 to precision 9 and decimal8 to 18.
func maxUnscaled(id byte) uint64 {
	if id == primDecimal4 {
		return 999_999_999
	}
	return 999_999_999_999_999_999
}
