package archive

import (
	"strings"
	"time"
)

// unit is the finest calendar unit a time layout prints.
type unit uint8

const (
	unitNone unit = iota // prints no time at all
	unitYear
	unitMonth
	unitDay
	unitHour
	unitMinute
	unitSecond
	unitExact // fractions of a second, or a zone whose text may change within any span
)

// layoutUnit reads the finest unit a Go time layout prints. Zone names
// and offsets count as exact: their text changes at a daylight saving
// transition, which Window does not track.
func layoutUnit(layout string) unit {
	finest := unitNone
	for i := 0; i < len(layout); {
		n, u := 1, unitNone
		for _, tok := range layoutTokens {
			if strings.HasPrefix(layout[i:], tok.text) {
				n, u = len(tok.text), tok.unit
				break
			}
		}
		finest = max(finest, u)
		i += n
	}
	return finest
}

// layoutTokens are the elements of Go's time layouts by the unit they
// print, longest first where one is the prefix of another.
var layoutTokens = [...]struct {
	text string
	unit unit
}{
	{"MST", unitExact}, {"Z07", unitExact}, {"-07", unitExact},
	{".0", unitExact}, {".9", unitExact}, {",0", unitExact}, {",9", unitExact},
	{"2006", unitYear}, {"06", unitYear},
	{"January", unitMonth}, {"Jan", unitMonth}, {"01", unitMonth},
	{"Monday", unitDay}, {"Mon", unitDay}, {"002", unitDay}, {"02", unitDay}, {"__2", unitDay}, {"_2", unitDay},
	{"15", unitHour}, {"03", unitHour}, {"PM", unitHour}, {"pm", unitHour},
	{"04", unitMinute}, {"05", unitSecond},
	{"1", unitMonth}, {"2", unitDay}, {"3", unitHour}, {"4", unitMinute}, {"5", unitSecond},
}

// Window returns the span [lo, hi) around at over which every
// {record_time} part of the template prints the same text, at and the
// span in at's location: a record whose time falls in it has the same
// path identity as one at at, all else equal. ok is false when there is no
// such span to rely on: a layout printing fractions of a second or a zone,
// or a time whose unit a change of the location's offset cuts in a way
// the span cannot follow. A span never crosses such a change (a daylight
// saving transition, when local times repeat or are skipped): it ends
// there.
func (t *Template) Window(at time.Time) (lo, hi time.Time, ok bool) {
	finest := unitNone
	for _, p := range t.parts {
		if p.kind == timePart {
			finest = max(finest, layoutUnit(p.text))
		}
	}
	loc := at.Location()
	y, mo, d := at.Date()
	h, mi, s := at.Clock()
	switch finest {
	case unitNone:
		return time.Time{}, time.Time{}, false
	case unitYear:
		lo, hi = time.Date(y, 1, 1, 0, 0, 0, 0, loc), time.Date(y+1, 1, 1, 0, 0, 0, 0, loc)
	case unitMonth:
		lo, hi = time.Date(y, mo, 1, 0, 0, 0, 0, loc), time.Date(y, mo+1, 1, 0, 0, 0, 0, loc)
	case unitDay:
		lo, hi = time.Date(y, mo, d, 0, 0, 0, 0, loc), time.Date(y, mo, d+1, 0, 0, 0, 0, loc)
	case unitHour:
		lo, hi = time.Date(y, mo, d, h, 0, 0, 0, loc), time.Date(y, mo, d, h+1, 0, 0, 0, loc)
	case unitMinute:
		lo, hi = time.Date(y, mo, d, h, mi, 0, 0, loc), time.Date(y, mo, d, h, mi+1, 0, 0, loc)
	case unitSecond:
		lo, hi = time.Date(y, mo, d, h, mi, s, 0, loc), time.Date(y, mo, d, h, mi, s+1, 0, loc)
	default:
		return time.Time{}, time.Time{}, false
	}
	// Only within one offset of the location is local time monotone:
	// clip the span to at's, then make sure its ends print as at does
	// (time.Date resolves a local time that a transition skips or
	// repeats to an instant of its choosing).
	if start, end := at.ZoneBounds(); !start.IsZero() || !end.IsZero() {
		if !start.IsZero() && lo.Before(start) {
			lo = start
		}
		if !end.IsZero() && hi.After(end) {
			hi = end
		}
	}
	if at.Before(lo) || !at.Before(hi) {
		return time.Time{}, time.Time{}, false
	}
	want := t.appendTimes(nil, at)
	if string(t.appendTimes(nil, lo.In(loc))) != string(want) || string(t.appendTimes(nil, hi.Add(-time.Nanosecond).In(loc))) != string(want) {
		return time.Time{}, time.Time{}, false
	}
	return lo, hi, true
}

// appendTimes appends at formatted by each {record_time} part.
func (t *Template) appendTimes(dst []byte, at time.Time) []byte {
	for _, p := range t.parts {
		if p.kind == timePart {
			dst = append(at.AppendFormat(dst, p.text), 0)
		}
	}
	return dst
}
