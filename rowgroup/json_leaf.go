package rowgroup

import (
	"errors"
	"io"
	"math"
	"strconv"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Ranges of the integer forms of dates and 32-bit columns.
var (
	int32Range  = intRange{neg: 1 << 31, pos: math.MaxInt32}
	int64Range  = intRange{neg: 1 << 63, pos: math.MaxInt64}
	uint32Range = intRange{pos: math.MaxUint32}
)

// leaf converts the scalar token k with bytes b (the unescaped string or
// the number literal) to p's column type and appends it at rep. key says b
// is a map member name, for messages. JSON and INTERVAL leaves read the
// rest of an object or array from the scanner.
func (s *JSONShredder) leaf(p *jsonPlan, rep uint8, k jsonscan.Kind, b []byte, key bool) error {
	c := p.col
	switch p.conv {
	case convNull:
		return s.valueErr(key, "%s field accepts only null, got %s", p.typeName, describe(k))

	case convBool:
		switch k {
		case jsonscan.True:
			c.AppendBool(rep, true)
			return nil
		case jsonscan.False:
			c.AppendBool(rep, false)
			return nil
		}
		return s.mismatch(p, k, key, "true or false")

	case convInt:
		if k != jsonscan.Number {
			return s.mismatch(p, k, key, "number")
		}
		v, err := parseInteger(b, p.rng)
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		appendInt(c, rep, v)
		return nil

	case convDate:
		var v int64
		var err error
		switch k {
		case jsonscan.Number:
			v, err = parseInteger(b, int32Range)
		case jsonscan.String:
			var ok bool
			if v, ok = parseDate(b); !ok || len(b) != 10 {
				err = errSyntax
			}
		default:
			return s.mismatch(p, k, key, `"YYYY-MM-DD" string or number of days`)
		}
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		c.AppendInt32(rep, int32(v))
		return nil

	case convTime:
		v, ok, err := timeValue(p, k, b, p.node.Logical.Unit)
		if !ok {
			return s.mismatch(p, k, key, `"HH:MM:SS[.fraction]" string or number`)
		}
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		appendInt(c, rep, v)
		return nil

	case convTimestamp:
		v, ok, err := timestampValue(p, k, b, p.node.Logical.Unit)
		if !ok {
			return s.mismatch(p, k, key, "RFC 3339 string or number")
		}
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		c.AppendInt64(rep, v)
		return nil

	case convTimestampMillis:
		return s.timestampMillis(p, rep, k, b, key)

	case convTimestampNanos:
		return s.timestampNanos(p, rep, k, b, key)

	case convTimeMillis:
		return s.timeMillis(p, rep, k, b, key)

	case convInt96:
		if k != jsonscan.String {
			return s.mismatch(p, k, key, "RFC 3339 string")
		}
		v, err := parseInt96(b)
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		c.AppendInt96(rep, v)
		return nil

	case convFloat, convDouble, convFloat16:
		if k != jsonscan.Number && k != jsonscan.String {
			return s.mismatch(p, k, key, "number")
		}
		if k == jsonscan.String {
			if _, special := specialFloat(b); !special {
				return s.mismatch(p, k, key, `number (or "NaN", "Infinity", "-Infinity")`)
			}
		}
		// A Number token (or a map key taken for one) has been validated.
		parse := parseFloat
		if k == jsonscan.Number {
			if p.conv == convDouble { // the common case, a direct call
				v, err := parseNumber(b, 64)
				if err != nil && !s.lossyUnderflow(err) {
					return s.convErr(p, b, k, key, err)
				}
				c.AppendDouble(rep, v)
				return nil
			}
			parse = parseNumber
		}
		switch p.conv {
		case convFloat16:
			v, err := parseFloat16(b)
			if err != nil {
				return s.convErr(p, b, k, key, err)
			}
			c.AppendBytes(rep, append(s.buf[:0], byte(v), byte(v>>8)))
		case convFloat:
			v, err := parse(b, 32)
			if err != nil && !s.lossyUnderflow(err) {
				return s.convErr(p, b, k, key, err)
			}
			c.AppendFloat(rep, float32(v))
		default:
			v, err := parse(b, 64)
			if err != nil && !s.lossyUnderflow(err) {
				return s.convErr(p, b, k, key, err)
			}
			c.AppendDouble(rep, v)
		}
		return nil

	case convString:
		if k != jsonscan.String {
			return s.mismatch(p, k, key, "string")
		}
		c.AppendBytes(rep, b)
		return nil

	case convJSON:
		if k == jsonscan.String {
			if err := s.validJSON(b); err != nil {
				return s.valueErr(key, "string is not JSON text for the %s field: %v", p.typeName, err)
			}
			c.AppendBytes(rep, b)
			return nil
		}
		raw, err := s.rawValue(k)
		if err != nil {
			return err
		}
		s.buf = appendCompactJSON(s.buf[:0], raw)
		c.AppendBytes(rep, s.buf)
		return nil

	case convBinary:
		if k != jsonscan.String {
			return s.mismatch(p, k, key, "base64 string")
		}
		var err error
		if s.buf, err = appendBase64(s.buf[:0], b); err != nil {
			return s.convErr(p, b, k, key, err)
		}
		if err := s.fixedLength(p, key); err != nil {
			return err
		}
		c.AppendBytes(rep, s.buf)
		return nil

	case convUUID:
		if k != jsonscan.String {
			return s.mismatch(p, k, key, "UUID string")
		}
		var err error
		if s.buf, err = appendUUID(s.buf[:0], b); err != nil {
			return s.convErr(p, b, k, key, err)
		}
		c.AppendBytes(rep, s.buf)
		return nil

	case convDecimal:
		if k != jsonscan.Number && k != jsonscan.String {
			return s.mismatch(p, k, key, "number or numeric string")
		}
		return s.decimal(p, rep, k, b, key)

	case convInterval:
		if k != jsonscan.BeginObject {
			return s.mismatch(p, k, key, `{"months":m,"days":d,"millis":ms} object`)
		}
		return s.interval(p, rep)
	}
	return s.valueErr(key, "no conversion for %s", p.typeName)
}

// appendInt appends v to an INT32 or INT64 column; 32-bit columns keep the
// low bits, which is the bit pattern of unsigned values.
func appendInt(c *Column, rep uint8, v int64) {
	if c.Leaf.Physical == meta.TypeInt32 {
		c.AppendInt32(rep, int32(v))
		return
	}
	c.AppendInt64(rep, v)
}

func (s *JSONShredder) decimal(p *jsonPlan, rep uint8, k jsonscan.Kind, b []byte, key bool) error {
	l := p.node.Logical
	c := p.col
	switch c.Leaf.Physical {
	case meta.TypeInt32, meta.TypeInt64:
		v, err := parseDecimalInt(b, l.Precision, l.Scale)
		if err != nil {
			return s.convErr(p, b, k, key, err)
		}
		appendInt(c, rep, v)
		return nil
	}
	fixed := c.Leaf.Physical == meta.TypeFixedLenByteArray
	var err error
	s.buf, err = appendDecimal(s.buf[:0], b, l.Precision, l.Scale, int(c.Leaf.Length), fixed, &s.dec)
	if err != nil {
		return s.convErr(p, b, k, key, err)
	}
	c.AppendBytes(rep, s.buf)
	return nil
}

// interval reads the members of an INTERVAL object after its BeginObject.
func (s *JSONShredder) interval(p *jsonPlan, rep uint8) error {
	var parts [3]uint32 // months, days, millis
	var seen [3]bool
	for {
		k, err := s.next()
		if err != nil {
			return err
		}
		if k == jsonscan.EndObject {
			break
		}
		name := s.scan.Bytes()
		var i int
		switch string(name) {
		case "months":
			i = 0
		case "days":
			i = 1
		case "millis":
			i = 2
		default:
			return s.at(fieldStep(string(name)), s.errorf("unknown INTERVAL member (want months, days, millis)"))
		}
		step := fieldStep(intervalParts[i])
		if seen[i] {
			return s.at(step, s.errorf("member appears twice in the object"))
		}
		seen[i] = true
		if k, err = s.next(); err != nil {
			return s.at(step, err)
		}
		if k != jsonscan.Number {
			return s.at(step, s.errorf("expected number for INTERVAL %s, got %s", intervalParts[i], describe(k)))
		}
		b := s.scan.Bytes()
		v, err := parseInteger(b, uint32Range)
		if err != nil {
			return s.at(step, s.convErr(p, b, k, false, err))
		}
		parts[i] = uint32(v)
	}
	buf := s.buf[:0]
	for _, v := range parts {
		buf = append(buf, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	s.buf = buf
	p.col.AppendBytes(rep, buf)
	return nil
}

var intervalParts = [3]string{"months", "days", "millis"}

func (s *JSONShredder) fixedLength(p *jsonPlan, key bool) error {
	if p.col.Leaf.Physical == meta.TypeFixedLenByteArray && len(s.buf) != int(p.col.Leaf.Length) {
		return s.valueErr(key, "%d bytes for %s, which holds %d", len(s.buf), p.typeName, p.col.Leaf.Length)
	}
	return nil
}

// validJSON checks that b holds exactly one JSON value.
func (s *JSONShredder) validJSON(b []byte) error {
	s.check.Reset(b)
	for {
		_, err := s.check.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// mismatch reports a value of the wrong JSON kind.
func (s *JSONShredder) mismatch(p *jsonPlan, k jsonscan.Kind, key bool, want string) error {
	if key {
		return s.valueErr(key, "cannot be converted to %s", p.typeName)
	}
	return s.valueErr(key, "expected %s for %s, got %s", want, p.typeName, describe(k))
}

// lossyUnderflow reports whether err is an underflow that the shredder
// takes, as IEEE 754 rounds it, under LossyNumbers.
func (s *JSONShredder) lossyUnderflow(err error) bool {
	return s.opts.lossyNumbers && errors.Is(err, errUnderflow)
}

// convErr reports a value of the right kind that does not convert.
func (s *JSONShredder) convErr(p *jsonPlan, b []byte, k jsonscan.Kind, key bool, err error) error {
	v := quoteValue(b, k == jsonscan.String || key)
	switch {
	case errors.Is(err, errRange):
		return s.valueErr(key, "value %s out of range for %s", v, p.typeName)
	case errors.Is(err, errNotInteger):
		return s.valueErr(key, "value %s is not an integer, as %s requires", v, p.typeName)
	case errors.Is(err, errFraction):
		return s.valueErr(key, "value %s has more than %d fractional digits for %s", v, p.node.Logical.Scale, p.typeName)
	case errors.Is(err, errUnderflow):
		return s.valueErr(key, "value %s is too small for %s, which would store it as 0 or a nearby subnormal (lossy numbers allow that)", v, p.typeName)
	case errors.Is(err, errPrecision):
		return s.valueErr(key, "value %s has more precision than %s keeps", v, p.typeName)
	case errors.Is(err, errNotNumber), errors.Is(err, errSyntax), errors.Is(err, errBase64), errors.Is(err, errUUID):
		return s.valueErr(key, "invalid %s value %s: %v", p.typeName, v, err)
	}
	return s.valueErr(key, "value %s for %s %v", v, p.typeName, err)
}

func (s *JSONShredder) valueErr(key bool, format string, args ...any) error {
	if key {
		format = "map key: " + format
	}
	return s.errorf(format, args...)
}

// quoteValue renders a value for a message, cut to a readable length.
func quoteValue(b []byte, str bool) string {
	const maxLen = 64
	more := ""
	if len(b) > maxLen {
		b, more = b[:maxLen], "..."
	}
	if str {
		return strconv.Quote(string(b)) + more
	}
	return string(b) + more
}

// timestampValue reads the JSON value b, of kind k, as a timestamp in
// unit: a number in that unit, or an RFC 3339 string (in p's column's
// zone rule). ok is false for a value of another kind.
func timestampValue(p *jsonPlan, k jsonscan.Kind, b []byte, unit schema.TimeUnit) (v int64, ok bool, err error) {
	switch k {
	case jsonscan.Number:
		v, err = parseInteger(b, int64Range)
	case jsonscan.String:
		if t, n, plain := parseTimestampText(b, unit, &p.dates); plain && n == len(b) {
			return t, true, nil // the common spelling, quicker
		}
		v, err = parseTimestamp(b, unit, p.node.Logical.UTC, &p.dates)
	default:
		return 0, false, nil
	}
	return v, true, err
}

// timeValue reads the JSON value b, of kind k, as a time of day in unit:
// a number of that unit within the day, or an "HH:MM:SS[.fraction]"
// string. ok is false for a value of another kind.
func timeValue(p *jsonPlan, k jsonscan.Kind, b []byte, unit schema.TimeUnit) (v int64, ok bool, err error) {
	switch k {
	case jsonscan.Number:
		v, err = parseInteger(b, intRange{pos: uint64(secondsPerDay*unitsPerSecond(unit) - 1)})
	case jsonscan.String:
		v, err = parseTimeOfDay(b, unit, p.node.Logical.UTC)
	default:
		return 0, false, nil
	}
	return v, true, err
}
