package rowgroup

import (
	"errors"
	"math"

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

// digits parses exactly n decimal digits at b[i:].
func digits(b []byte, i, n int) (int64, bool) {
	if i+n > len(b) {
		return 0, false
	}
	var v int64
	for _, c := range b[i : i+n] {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseDate parses "YYYY-MM-DD" at the start of b and returns the days
// since 1970-01-01.
func parseDate(b []byte) (int64, bool) {
	y, ok1 := digits(b, 0, 4)
	m, ok2 := digits(b, 5, 2)
	d, ok3 := digits(b, 8, 2)
	if !ok1 || !ok2 || !ok3 || b[4] != '-' || b[7] != '-' ||
		m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// parseClock parses "HH:MM:SS[.fraction]" at the start of b and returns the
// second of the day, the fraction in nanoseconds and the bytes consumed.
// Fraction digits past the ninth must be zeros (errPrecision otherwise).
func parseClock(b []byte) (sec, nanos int64, n int, err error) {
	h, ok1 := digits(b, 0, 2)
	m, ok2 := digits(b, 3, 2)
	s, ok3 := digits(b, 6, 2)
	if !ok1 || !ok2 || !ok3 || b[2] != ':' || b[5] != ':' || h > 23 || m > 59 || s > 59 {
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
// that would drop non-zero digits.
func scaleNanos(nanos int64, u schema.TimeUnit) (int64, error) {
	div := 1e9 / unitsPerSecond(u)
	if nanos%div != 0 {
		return 0, errPrecision
	}
	return nanos / div, nil
}

// parseTimeOfDay parses "HH:MM:SS[.fraction]" into a TIME value in unit u.
func parseTimeOfDay(b []byte, u schema.TimeUnit) (int64, error) {
	sec, nanos, n, err := parseClock(b)
	if err != nil {
		return 0, err
	}
	if n != len(b) {
		return 0, errSyntax
	}
	f, err := scaleNanos(nanos, u)
	if err != nil {
		return 0, err
	}
	return sec*unitsPerSecond(u) + f, nil
}

// dateTime is an RFC 3339 date-time split into its parts.
type dateTime struct {
	days   int64 // days since 1970-01-01 of the written date
	sec    int64 // second of the written day
	nanos  int64
	offset int64 // seconds east of UTC
	zoned  bool  // an offset or Z was written
}

// parseDateTime parses "YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM]"
// (RFC 3339; 't', 'z' and a space separator accepted as the RFC allows).
func parseDateTime(b []byte) (dateTime, error) {
	var t dateTime
	if len(b) < 19 {
		return t, errSyntax
	}
	days, ok := parseDate(b)
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
		h, ok1 := digits(rest, 1, 2)
		m, ok2 := digits(rest, 4, 2)
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
func parseTimestamp(b []byte, u schema.TimeUnit, utc bool) (int64, error) {
	t, err := parseDateTime(b)
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
	return scaleSeconds(t.utcSeconds(), f, unitsPerSecond(u))
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
	t, err := parseDateTime(b)
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
