package rowgroup

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"

	"github.com/pqsink/pqsink/schema"
)

// Reasons a date or time string cannot become a column value.
var (
	errSyntax    = errors.New("invalid syntax")
	errPrecision = errors.New("more precision than the column's unit")
	errNoOffset  = errors.New("needs a time zone offset or Z (the column is adjusted to UTC)")
	errOffset    = errors.New("has a non-UTC offset (the column holds local times)")
)

const (
	secondsPerDay = 86400
	// julianUnixEpoch is the Julian day number of 1970-01-01, the base of
	// the legacy INT96 timestamps.
	julianUnixEpoch = 2440588
)

// daysFromCivil returns the days from 1970-01-01 to the proleptic
// Gregorian date y-m-d, valid for any year (the era arithmetic of
// Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func daysInMonth(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// digits2 parses the two decimal digits at b[i:], which the caller has
// checked are there.
func digits2(b []byte, i int) (int64, bool) {
	hi, lo := b[i]-'0', b[i+1]-'0'
	return int64(hi)*10 + int64(lo), hi <= 9 && lo <= 9
}

// parseDate parses "YYYY-MM-DD" at the start of b and returns the days
// since 1970-01-01.
func parseDate(b []byte) (int64, bool) {
	if len(b) < 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	c, n := digits2(b, 0)
	y, ok1 := digits2(b, 2)
	y += c * 100
	m, ok2 := digits2(b, 5)
	d, ok3 := digits2(b, 8)
	if !n || !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// parseClock parses "HH:MM:SS[.fraction]" at the start of b and returns the
// second of the day, the fraction in nanoseconds and the bytes consumed.
// Fraction digits past the ninth must be zeros (errPrecision otherwise).
func parseClock(b []byte) (sec, nanos int64, n int, err error) {
	if len(b) < 8 || b[2] != ':' || b[5] != ':' {
		return 0, 0, 0, errSyntax
	}
	h, ok1 := digits2(b, 0)
	m, ok2 := digits2(b, 3)
	s, ok3 := digits2(b, 6)
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 59 {
		return 0, 0, 0, errSyntax
	}
	n = 8
	if n < len(b) && b[n] == '.' {
		n++
		start := n
		for n < len(b) && isDigit(b[n]) {
			if k := n - start; k < 9 {
				nanos += int64(b[n]-'0') * int64(pow10[8-k])
			} else if b[n] != '0' {
				return 0, 0, 0, errPrecision
			}
			n++
		}
		if n == start {
			return 0, 0, 0, errSyntax
		}
	}
	return h*3600 + m*60 + s, nanos, n, nil
}

// unitsPerSecond returns 10^3, 10^6 or 10^9 for a time unit.
func unitsPerSecond(u schema.TimeUnit) int64 {
	switch u {
	case schema.Millis:
		return 1e3
	case schema.Micros:
		return 1e6
	}
	return 1e9
}

// scaleNanos converts a fraction in nanoseconds to the unit, failing when
// that would drop non-zero digits. The divisors are constants so that no
// division instruction is needed.
func scaleNanos(nanos int64, u schema.TimeUnit) (int64, error) {
	var q, r int64
	switch u {
	case schema.Millis:
		q, r = nanos/1e6, nanos%1e6
	case schema.Micros:
		q, r = nanos/1e3, nanos%1e3
	default:
		return nanos, nil
	}
	if r != 0 {
		return 0, errPrecision
	}
	return q, nil
}

// parseTimeOfDay parses "HH:MM:SS[.fraction]" into a TIME value in unit u.
// A column adjusted to UTC also takes the RFC 3339 full-time that JSON
// Schema's "time" format asks for, with "Z" or a "±HH:MM" offset, and
// stores the time of day in UTC (wrapping around midnight).
func parseTimeOfDay(b []byte, u schema.TimeUnit, utc bool) (int64, error) {
	sec, nanos, n, err := parseClock(b)
	if err != nil {
		return 0, err
	}
	if n != len(b) {
		off, ok := timeOffset(b[n:])
		if !ok || !utc {
			return 0, errSyntax
		}
		sec = ((sec-off)%secondsPerDay + secondsPerDay) % secondsPerDay
	}
	f, err := scaleNanos(nanos, u)
	if err != nil {
		return 0, err
	}
	return sec*unitsPerSecond(u) + f, nil
}

// timeOffset parses "Z" or "±HH:MM" into seconds east of UTC.
func timeOffset(rest []byte) (int64, bool) {
	switch {
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		return 0, true
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		h, ok1 := digits2(rest, 1)
		m, ok2 := digits2(rest, 4)
		if !ok1 || !ok2 || h > 23 || m > 59 {
			return 0, false
		}
		off := h*3600 + m*60
		if rest[0] == '-' {
			off = -off
		}
		return off, true
	}
	return 0, false
}

// dateTime is an RFC 3339 date-time split into its parts.
type dateTime struct {
	days   int64 // days since 1970-01-01 of the written date
	sec    int64 // second of the written day
	nanos  int64
	offset int64 // seconds east of UTC
	zoned  bool  // an offset or Z was written
}

// dateCache remembers the last date a column parsed and its day number:
// the timestamps of a stream mostly fall on the day of the record before,
// and comparing ten bytes is cheaper than the calendar arithmetic. It
// also remembers, for parseTimestampText, the last "YYYY-MM-DDTHH:MM" and
// its seconds since the epoch: mostly the minute of the record before,
// compared in two words, so that only the seconds are left to read.
type dateCache struct {
	text  uint64 // the first 8 bytes of "YYYY-MM-DD", little-endian
	tail  uint16 // the last 2
	days  int64
	valid bool

	minute      [2]uint64 // "YYYY-MM-DDTHH:MM", little-endian
	minuteSec   int64     // its seconds since the epoch
	minuteValid bool

	// And the last ":SS" after that minute, with the instant in the unit
	// the column asked for, when adding any fraction to it cannot
	// overflow: records a millisecond apart share it.
	second      uint32 // ":SS", little-endian
	secondUnit  schema.TimeUnit
	secondValue int64
	secondValid bool
}

// parse is parseDate through the cache; a nil cache parses every time.
func (c *dateCache) parse(b []byte) (int64, bool) {
	if c == nil || len(b) < 10 {
		return parseDate(b)
	}
	text, tail := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint16(b[8:])
	if c.valid && text == c.text && tail == c.tail {
		return c.days, true
	}
	days, ok := parseDate(b)
	if ok {
		c.text, c.tail, c.days, c.valid = text, tail, days, true
	}
	return days, ok
}

// parseDateTime parses "YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]"
// (RFC 3339; 't', 'z' and a space separator accepted as the RFC allows).
// Its date goes through dc, which may be nil.
func parseDateTime(b []byte, dc *dateCache) (dateTime, error) {
	var t dateTime
	if len(b) < 19 {
		return t, errSyntax
	}
	days, ok := dc.parse(b)
	if !ok || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') {
		return t, errSyntax
	}
	sec, nanos, n, err := parseClock(b[11:])
	if err != nil {
		return t, err
	}
	t.days, t.sec, t.nanos = days, sec, nanos
	rest := b[11+n:]
	switch {
	case len(rest) == 0:
		return t, nil
	case len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z'):
		t.zoned = true
		return t, nil
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		h, ok1 := digits2(rest, 1)
		m, ok2 := digits2(rest, 4)
		if !ok1 || !ok2 || h > 23 || m > 59 {
			return t, errSyntax
		}
		t.offset = h*3600 + m*60
		if rest[0] == '-' {
			t.offset = -t.offset
		}
		t.zoned = true
		return t, nil
	}
	return t, errSyntax
}

// utcSeconds returns the instant's seconds since the Unix epoch, the offset
// removed.
func (t dateTime) utcSeconds() int64 {
	return t.days*secondsPerDay + t.sec - t.offset
}

// parseTimestamp parses an RFC 3339 string into a TIMESTAMP(u, utc) value.
// Adjusted-to-UTC columns need an offset and are normalized to UTC; local
// columns take the wall clock as written, with no offset or Z (an explicit
// +00:00 counts as Z).
// Its date goes through dc, which may be nil.
func parseTimestamp(b []byte, u schema.TimeUnit, utc bool, dc *dateCache) (int64, error) {
	t, err := parseDateTime(b, dc)
	if err != nil {
		return 0, err
	}
	switch {
	case utc && !t.zoned:
		return 0, errNoOffset
	case !utc && t.offset != 0:
		return 0, errOffset
	}
	f, err := scaleNanos(t.nanos, u)
	if err != nil {
		return 0, err
	}
	// Constant factors let the compiler drop the overflow check's division.
	switch u {
	case schema.Millis:
		return scaleSeconds(t.utcSeconds(), f, 1e3)
	case schema.Micros:
		return scaleSeconds(t.utcSeconds(), f, 1e6)
	}
	return scaleSeconds(t.utcSeconds(), f, 1e9)
}

// parseTimestampText parses the common spelling of an RFC 3339 timestamp,
// "YYYY-MM-DDTHH:MM:SS[.fraction]Z" with at most 9 fraction digits, at the
// start of b, and returns what parseTimestamp returns for that text and
// its length; ok false means anything else (another spelling, an error),
// which the caller leaves to parseTimestamp. The text holds no byte a
// JSON string must escape, so a caller reading a JSON string whose
// closing quote follows the text need not look for escapes.
func parseTimestampText(b []byte, u schema.TimeUnit, dc *dateCache) (v int64, end int, ok bool) {
	if len(b) < 20 || b[16] != ':' {
		return 0, 0, false
	}
	// The date, hour and minute: the ones of the timestamp before, which
	// were read and checked then, or read and checked now.
	var base int64
	w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:16])
	w2 := binary.LittleEndian.Uint32(b[16:20]) & 0xffffff
	secondHit := false
	if dc != nil && dc.minuteValid && w0 == dc.minute[0] && w1 == dc.minute[1] {
		base = dc.minuteSec
		secondHit = dc.secondValid && w2 == dc.second && u == dc.secondUnit
	} else {
		if b[10] != 'T' || b[13] != ':' {
			return 0, 0, false
		}
		days, ok := dc.parse(b)
		h, ok1 := digits2(b, 11)
		m, ok2 := digits2(b, 14)
		if !ok || !ok1 || !ok2 || h > 23 || m > 59 {
			return 0, 0, false
		}
		base = days*secondsPerDay + h*3600 + m*60
		if dc != nil {
			dc.minute, dc.minuteSec, dc.minuteValid = [2]uint64{w0, w1}, base, true
			dc.secondValid = false
		}
	}
	var sec int64
	if !secondHit {
		var ok3 bool
		if sec, ok3 = digits2(b, 17); !ok3 || sec > 59 {
			return 0, 0, false
		}
	}
	n := 19
	var frac int64
	if n < len(b) && b[n] == '.' {
		n++
		start := n
		if len(b)-n >= 8 {
			// Fewer than 8 digits, the usual milli- and microseconds, are
			// read as one word: the bytes after them are replaced by '0'
			// and the 8 digits converted at once.
			x := binary.LittleEndian.Uint64(b[n : n+8])
			// The high bit of each byte that is not '0'..'9' (see
			// parseDigits' stops); the lowest one is exact.
			stops := ((x - 0x3030303030303030) | (x + 0x4646464646464646) | x) & 0x8080808080808080
			if k := bits.TrailingZeros64(stops) >> 3; k > 0 && k < 8 {
				keep := uint64(1)<<(8*k) - 1
				x = (x&keep | 0x3030303030303030&^keep) - 0x3030303030303030
				x = (x*10 + x>>8) & 0x00ff00ff00ff00ff
				x = (x*100 + x>>16) & 0x0000ffff0000ffff
				x = (x*10000 + x>>32) & 0xffffffff
				frac, n = int64(x)*10, n+k // 8 digits of the 9 of nanoseconds
				goto zone
			}
		}
		for n < len(b) && n-start < 10 {
			c := b[n] - '0'
			if c > 9 {
				break
			}
			frac = frac*10 + int64(c)
			n++
		}
		k := n - start
		if k == 0 || k > 9 {
			return 0, 0, false
		}
		frac *= int64(pow10[9-k]) // nanoseconds
	}
zone:
	if n == len(b) || b[n] != 'Z' {
		return 0, 0, false
	}
	f, err := scaleNanos(frac, u)
	if err != nil {
		return 0, 0, false
	}
	if secondHit {
		return dc.secondValue + f, n + 1, true // through the Z
	}
	utcSec := base + sec
	if dc != nil {
		// The second's instant, for the timestamps after this one, when
		// no fraction can take it out of range (see scaleSeconds).
		var v0 int64
		per := unitsPerSecond(u)
		if v0, err = scaleSeconds(utcSec, 0, per); err == nil && v0 <= math.MaxInt64-per && v0 >= math.MinInt64+per {
			dc.second, dc.secondUnit, dc.secondValue, dc.secondValid = w2, u, v0, true
		}
	}
	switch u {
	case schema.Millis:
		v, err = scaleSeconds(utcSec, f, 1e3)
	case schema.Micros:
		v, err = scaleSeconds(utcSec, f, 1e6)
	default:
		v, err = scaleSeconds(utcSec, f, 1e9)
	}
	return v, n + 1, err == nil // through the Z
}

// scaleSeconds returns sec·per + f (0 <= f < per) with errRange on int64
// overflow. Before the epoch it computes (sec+1)·per - (per-f), so that the
// most negative value is reachable without an intermediate overflow.
func scaleSeconds(sec, f, per int64) (int64, error) {
	if sec >= 0 {
		if sec > (math.MaxInt64-f)/per {
			return 0, errRange
		}
		return sec*per + f, nil
	}
	if sec+1 < math.MinInt64/per {
		return 0, errRange
	}
	v := (sec + 1) * per
	if v < math.MinInt64+(per-f) {
		return 0, errRange
	}
	return v - (per - f), nil
}

// parseInt96 parses an RFC 3339 string into the legacy Impala INT96
// timestamp: nanoseconds of the day (little-endian int64) followed by the
// Julian day (little-endian int32). An offset, when written, is removed;
// without one the wall clock is stored as is.
func parseInt96(b []byte) ([12]byte, error) {
	var v [12]byte
	t, err := parseDateTime(b, nil)
	if err != nil {
		return v, err
	}
	sec := t.utcSeconds()
	day := sec / secondsPerDay
	sec %= secondsPerDay
	if sec < 0 {
		sec += secondsPerDay
		day--
	}
	nanos := sec*1e9 + t.nanos
	julian := day + julianUnixEpoch
	if julian < 0 || julian > math.MaxInt32 {
		return v, errRange
	}
	for i := range 8 {
		v[i] = byte(nanos >> (8 * i))
	}
	for i := range 4 {
		v[8+i] = byte(julian >> (8 * i))
	}
	return v, nil
}
