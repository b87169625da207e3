package archive

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Key is an object key taken back to its parts by Template.Match.
type Key struct {
	// Topic is the {topic} value, "" when the template has none.
	Topic string
	// Partition is the {partition} value.
	Partition int32
	// FirstOffset is the {first_offset} value: the offset of the file's
	// first record.
	FirstOffset int64
	// Identity is the key with {first_offset} left as the mark that
	// AppendIdentity leaves: the path identity of the chain of files the
	// object belongs to.
	Identity string
	// Times holds the text of the {record_time} parts, in order.
	Times []string
	// Fields holds the text of the {field} parts, in order, still escaped
	// (see Unescape).
	Fields []string
}

// Match takes an object key back to its parts, or says that the key is
// not one the template renders. Each placeholder matches what the sink
// can put there: {topic} a run of the characters of Kafka topic names,
// {partition} a run of digits, {first_offset} 20 digits, and
// {record_time:...} and {field:...} any text without a newline, as short
// as lets the rest of the key match. The {topic} parts must agree, and so
// must the {partition} and the {first_offset} parts.
func (t *Template) Match(key string) (Key, bool) {
	spans, ok := t.spans(key)
	if !ok {
		return Key{}, false
	}
	k := Key{Partition: -1, FirstOffset: -1}
	var id strings.Builder
	from := 0 // of key, not yet in id
	for i, p := range t.parts {
		v := key[spans[2*i]:spans[2*i+1]]
		switch p.kind {
		case topicPart:
			if k.Topic == "" {
				k.Topic = v
			} else if v != k.Topic {
				return Key{}, false
			}
		case partitionPart:
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || (k.Partition >= 0 && int32(n) != k.Partition) {
				return Key{}, false
			}
			k.Partition = int32(n)
		case offsetPart:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || (k.FirstOffset >= 0 && n != k.FirstOffset) {
				return Key{}, false
			}
			k.FirstOffset = n
			id.WriteString(key[from:spans[2*i]])
			id.WriteString(offsetMark)
			from = spans[2*i+1]
		case timePart:
			k.Times = append(k.Times, v)
		case fieldPart:
			k.Fields = append(k.Fields, v)
		}
	}
	id.WriteString(key[from:])
	k.Identity = id.String()
	return k, true
}

// spans matches key against the template's parts, without the checks
// between parts: spans[2*i:2*i+2] is where part i lies in key. Of the
// ways the parts can cover the key, it takes the first one found by
// trying, part by part from the left, the longest run of {topic} and
// {partition} first and the shortest text of {record_time} and {field}
// first: a regular expression's leftmost-first choice.
func (t *Template) spans(key string) ([]int, bool) {
	m := matcher{t: t, key: key, spans: make([]int, 2*len(t.parts))}
	m.failed = make([]uint64, ((len(t.parts)+1)*(len(key)+1)+63)/64)
	return m.spans, m.from(0, 0)
}

// matcher is the state of one match: the parts placed so far, and the
// (part, position) pairs from which the rest is known not to match, so
// that a key is never tried twice from the same place.
type matcher struct {
	t      *Template
	key    string
	spans  []int
	failed []uint64 // bit i*(len(key)+1)+pos
}

// from says whether parts i... match key[pos:], placing them.
func (m *matcher) from(i, pos int) bool {
	parts := m.t.parts
	if i == len(parts) {
		return pos == len(m.key)
	}
	bit := i*(len(m.key)+1) + pos
	if m.failed[bit/64]&(1<<(bit%64)) != 0 {
		return false
	}
	rest := m.key[pos:]
	switch p := parts[i]; p.kind {
	case literal:
		if strings.HasPrefix(rest, p.text) && m.place(i, pos, pos+len(p.text)) {
			return true
		}
	case topicPart, partitionPart:
		n := 0
		for n < len(rest) && (isDigit(rest[n]) || p.kind == topicPart && isTopicByte(rest[n])) {
			n++
		}
		for end := pos + n; end > pos; end-- {
			if m.place(i, pos, end) {
				return true
			}
		}
	case offsetPart:
		n := 0
		for n < offsetDigits && n < len(rest) && isDigit(rest[n]) {
			n++
		}
		if n == offsetDigits && m.place(i, pos, pos+n) {
			return true
		}
	case timePart, fieldPart:
		for end := pos; ; {
			if m.place(i, pos, end) {
				return true
			}
			if end == len(m.key) {
				break
			}
			r, w := utf8.DecodeRuneInString(m.key[end:])
			if r == '\n' {
				break
			}
			end += w
		}
	}
	m.failed[bit/64] |= 1 << (bit % 64)
	return false
}

// place puts part i at key[start:end] and says whether the parts after it
// match from end.
func (m *matcher) place(i, start, end int) bool {
	if !m.from(i+1, end) {
		return false
	}
	m.spans[2*i], m.spans[2*i+1] = start, end
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isTopicByte says whether c may be in a Kafka topic name.
func isTopicByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// TimeBucket returns the interval [from, to) of record times that a key's
// {record_time} parts stand for, in zone loc; ok is false when the parts
// do not name an interval (no year, sub-second layouts, a key the
// template's parts do not cover). Only the shape of the key counts, not
// the checks between its parts that Match makes.
func (t *Template) TimeBucket(key string, loc *time.Location) (from, to time.Time, ok bool) {
	if t.times == 0 || loc == nil {
		return from, to, false
	}
	spans, matched := t.spans(key)
	if !matched {
		return from, to, false
	}
	var value strings.Builder
	n := 0
	for i, p := range t.parts {
		if p.kind != timePart {
			continue
		}
		if n > 0 {
			value.WriteString(timeSep)
		}
		value.WriteString(key[spans[2*i]:spans[2*i+1]])
		n++
	}
	from, err := time.ParseInLocation(t.timeLayout, value.String(), loc)
	if err != nil || from.Year() == 0 {
		return from, to, false
	}
	// The bucket is as long as the finest unit the layout shows, and every
	// coarser unit must show too (hr=15 under dt=2006-01-02, not alone).
	ref := time.Date(2001, 2, 3, 4, 5, 6, 0, loc)
	shows := func(later time.Time) bool { return ref.Format(t.timeLayout) != later.Format(t.timeLayout) }
	if shows(ref.Add(time.Millisecond)) {
		return from, to, false
	}
	units := []func(time.Time) time.Time{
		func(x time.Time) time.Time { return x.Add(time.Second) },
		func(x time.Time) time.Time { return x.Add(time.Minute) },
		func(x time.Time) time.Time { return x.Add(time.Hour) },
		func(x time.Time) time.Time { return x.AddDate(0, 0, 1) },
		func(x time.Time) time.Time { return x.AddDate(0, 1, 0) },
		func(x time.Time) time.Time { return x.AddDate(1, 0, 0) },
	}
	finest := -1
	for i, next := range units {
		switch {
		case shows(next(ref)) && finest < 0:
			finest = i
		case !shows(next(ref)) && finest >= 0:
			return from, to, false
		}
	}
	if finest < 0 {
		return from, to, false
	}
	return from, units[finest](from), true
}
