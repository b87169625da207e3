package reader

import (
	"time"

	"github.com/pqsink/pqsink/schema"
)

// tsCache renders the TIMESTAMP values of one column as appendTimestamp
// does, byte for byte, keeping the date, hour and minute of the last
// minute seen: the timestamps of a column of records in offset order
// mostly fall in the same minute as the one before, and then only the
// seconds and the fraction are written.
type tsCache struct {
	minute int64    // Unix minute of prefix, when ok
	prefix [18]byte // `"YYYY-MM-DDTHH:MM:`
	ok     bool
}

// append appends the JSON of TIMESTAMP value x of unit u.
func (c *tsCache) append(dst []byte, x int64, u schema.TimeUnit, utc bool) []byte {
	var perSec int64
	digits := 0
	switch u {
	case schema.Millis:
		perSec, digits = 1e3, 3
	case schema.Micros:
		perSec, digits = 1e6, 6
	default:
		perSec, digits = 1e9, 9
	}
	sec, frac := x/perSec, x%perSec
	if frac < 0 {
		sec, frac = sec-1, frac+perSec
	}
	minute, s := sec/60, sec%60
	if s < 0 {
		minute, s = minute-1, s+60
	}
	if !c.ok || minute != c.minute {
		t := time.Unix(minute*60, 0).UTC()
		year, month, day := t.Date()
		if year < 0 || year > 9999 {
			return appendTimestamp(dst, unitTime(x, u), u, utc)
		}
		hour, min, _ := t.Clock()
		p := appendMinute(c.prefix[:0], year, int(month), day, hour, min)
		c.prefix = [18]byte(p) // p is c.prefix already; this checks its length
		c.minute, c.ok = minute, true
	}
	dst = append(dst, c.prefix[:]...)
	dst = append(dst, byte('0'+s/10), byte('0'+s%10), '.')
	dst = appendDigitsInPlace(dst, uint64(frac), digits)
	if utc {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}
