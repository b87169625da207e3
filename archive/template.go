package archive

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A Template turns a record into the key of the object that holds it. The
// key is a pure function of the record (topic, partition, timestamp or
// payload fields) and of the offset of the file's first record, never of
// the clock or of chance: that is what lets a restarted or competing owner
// of a partition arrive at the same key for the same file (the
// exactly-once protocol rests on it).
//
// Placeholders:
//
//	{topic}                 the record's topic
//	{partition}             its partition number
//	{first_offset}          the offset of the file's first record, 20 digits
//	{record_time:LAYOUT}    the record time formatted with a Go time layout
//	{field:a.b}             a payload field's value, escaped (see Escape)
//
// A Template is immutable and safe for concurrent use.
type Template struct {
	text       string
	parts      []part
	fields     [][]string // the field paths of the {field} parts, in order
	timeLayout string     // the {record_time} layouts joined by timeSep
	times      int        // how many {record_time} parts there are
}

type kind uint8

const (
	literal kind = iota
	topicPart
	partitionPart
	offsetPart
	timePart
	fieldPart
)

type part struct {
	kind kind
	text string // literal: the text; timePart: the layout
}

// DefaultPath is the path template of a sink configured without one: a
// folder per topic, and a file name that says the topic, partition and
// first offset.
const DefaultPath = "{topic}/{topic}+{partition}+{first_offset}.parquet"

// offsetMark stands for {first_offset} in a path identity: a byte that
// escaped values and layouts can never produce.
const offsetMark = "\x00"

// offsetDigits is how many digits {first_offset} has.
const offsetDigits = 20

// timeSep joins the {record_time} parts of a key for parsing them at
// once; no layout or rendered time holds it.
const timeSep = "\x01"

// Parse compiles and validates a template. Every key must hold the
// partition and the first offset, and the topic when there can be more
// than one (needTopic): the exactly-once protocol relies on two files of
// different partitions never sharing a key. The error quotes the
// template; the caller adds which setting it came from.
func Parse(text string, needTopic bool) (*Template, error) {
	t := &Template{text: text}
	var seen [fieldPart + 1]bool
	for rest := text; rest != ""; {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest})
			break
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("%s: a '}' without its '{'", quote(text))
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, fmt.Errorf("%s: a '{' without its '}'", quote(text))
		}
		if open > 0 {
			t.parts = append(t.parts, part{kind: literal, text: rest[:open]})
		}
		placeholder := rest[open+1 : open+1+end]
		rest = rest[open+1+end+1:]
		name, arg, hasArg := strings.Cut(placeholder, ":")
		var p part
		switch name {
		case "topic":
			p.kind = topicPart
		case "partition":
			p.kind = partitionPart
		case "first_offset":
			p.kind = offsetPart
		case "record_time":
			if !hasArg || arg == "" {
				return nil, fmt.Errorf("%s: {record_time} needs a Go time layout, like {record_time:2006-01-02}", quote(text))
			}
			if strings.ContainsRune(time.Unix(0, 0).Format(arg), 0) {
				return nil, fmt.Errorf("%s: layout %q holds a NUL byte", quote(text), arg)
			}
			p.kind, p.text = timePart, arg
			if t.times > 0 {
				t.timeLayout += timeSep
			}
			t.timeLayout += arg
			t.times++
		case "field":
			path := strings.Split(arg, ".")
			if !hasArg || slices.Contains(path, "") {
				return nil, fmt.Errorf("%s: {field} needs a dotted payload field, like {field:user.country}", quote(text))
			}
			p.kind = fieldPart
			t.fields = append(t.fields, path)
		default:
			return nil, fmt.Errorf("%s: unknown placeholder {%s}; allowed: {topic}, {partition}, {first_offset}, {record_time:LAYOUT}, {field:a.b}", quote(text), placeholder)
		}
		if hasArg && p.kind != timePart && p.kind != fieldPart {
			return nil, fmt.Errorf("%s: {%s} takes no format", quote(text), name)
		}
		seen[p.kind] = true
		t.parts = append(t.parts, p)
	}
	for _, need := range []struct {
		kind kind
		name string
	}{{partitionPart, "partition"}, {offsetPart, "first_offset"}} {
		if !seen[need.kind] {
			return nil, fmt.Errorf("%s lacks {%s}: every key needs {partition} and {first_offset}, so that no two files can share a key", quote(text), need.name)
		}
	}
	if needTopic && !seen[topicPart] {
		return nil, fmt.Errorf("%s lacks {topic}: with more than one topic, every key needs {topic}, {partition} and {first_offset}, so that no two files can share a key", quote(text))
	}
	if strings.HasPrefix(text, "/") || strings.HasSuffix(text, "/") || strings.Contains(text, "//") {
		return nil, fmt.Errorf("%s: must not start or end with '/' or contain '//'", quote(text))
	}
	for _, seg := range strings.Split(text, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("%s: must not contain \".\" or \"..\" segments", quote(text))
		}
	}
	return t, nil
}

// quote quotes a template for a message, cut short when it is long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// String returns the template as written.
func (t *Template) String() string { return t.text }

// Fields returns the field paths of the template's {field} parts, in the
// order they appear, one path per part; AppendIdentity takes their values
// in that order. The caller must not modify them.
func (t *Template) Fields() [][]string { return t.fields }

// PerRecord says whether the identity depends on the record (its time or
// fields), not only on its topic and partition.
func (t *Template) PerRecord() bool {
	for _, p := range t.parts {
		if p.kind == timePart || p.kind == fieldPart {
			return true
		}
	}
	return false
}

// AppendIdentity appends the template rendered for a record with
// {first_offset} left as a mark: the record's path identity, which names
// the chain of files it belongs to within its partition; ObjectKey turns
// it into the key of one of them. The {record_time} parts format at in
// its own location, so the caller gives the time in the path's time zone.
// values holds the field values, already escaped (AppendEscaped), in the
// order of Fields. It allocates nothing beyond growing dst.
func (t *Template) AppendIdentity(dst []byte, topic string, partition int32, at time.Time, values []string) []byte {
	field := 0
	for _, p := range t.parts {
		switch p.kind {
		case literal:
			dst = append(dst, p.text...)
		case topicPart:
			dst = AppendEscaped(dst, topic)
		case partitionPart:
			dst = strconv.AppendInt(dst, int64(partition), 10)
		case offsetPart:
			dst = append(dst, offsetMark...)
		case timePart:
			dst = at.AppendFormat(dst, p.text)
		case fieldPart:
			dst = append(dst, values[field]...)
			field++
		}
	}
	return dst
}

// ObjectKey is the key of the file of path identity id whose first record
// has offset first.
func ObjectKey(id string, first int64) string {
	return strings.ReplaceAll(id, offsetMark, fmt.Sprintf("%020d", first))
}
