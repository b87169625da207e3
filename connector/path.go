package connector

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// A pathTemplate turns a record into the key of the object that holds it.
// The key is a pure function of the record (topic, partition, timestamp or
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
//	{field:a.b}             a payload field's value
type pathTemplate struct {
	text   string
	parts  []pathPart
	loc    *time.Location
	fields [][]string // the distinct field paths the template reads
}

type partKind uint8

const (
	partLiteral partKind = iota
	partTopic
	partPartition
	partFirstOffset
	partTime
	partField
)

type pathPart struct {
	kind   partKind
	text   string // partLiteral: the text; partTime: the layout
	field  int    // partField: index into pathTemplate.fields
	source string // the placeholder as written, for messages
}

// offsetMark stands for {first_offset} in a path identity: a byte that
// escaped values and layouts can never produce.
const offsetMark = "\x00"

// hiveNull is the path value of a field that is absent or null, as Hive
// and Spark write it, so that query engines read the partition as NULL.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// parsePathTemplate compiles a template. needTopic says that more than one
// topic can be consumed, so the key must name the topic to stay unique.
func parsePathTemplate(text string, loc *time.Location, needTopic bool) (*pathTemplate, error) {
	t := &pathTemplate{text: text, loc: loc}
	has := map[partKind]bool{}
	rest := text
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			t.parts = append(t.parts, pathPart{kind: partLiteral, text: rest})
			break
		}
		if rest[i] == '}' {
			return nil, fmt.Errorf("path %q: unmatched '}'", text)
		}
		if i > 0 {
			t.parts = append(t.parts, pathPart{kind: partLiteral, text: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("path %q: unterminated placeholder %q", text, rest[i:])
		}
		ph := rest[i+1 : i+j]
		rest = rest[i+j+1:]
		name, arg, hasArg := strings.Cut(ph, ":")
		p := pathPart{source: "{" + ph + "}"}
		switch name {
		case "topic":
			p.kind = partTopic
		case "partition":
			p.kind = partPartition
		case "first_offset":
			p.kind = partFirstOffset
		case "record_time":
			if !hasArg || arg == "" {
				return nil, fmt.Errorf("path %q: {record_time} needs a Go time layout, e.g. {record_time:2006-01-02}", text)
			}
			if strings.ContainsRune(time.Unix(0, 0).Format(arg), 0) {
				return nil, fmt.Errorf("path %q: layout %q holds a NUL byte", text, arg)
			}
			p.kind, p.text = partTime, arg
		case "field":
			if !hasArg || arg == "" {
				return nil, fmt.Errorf("path %q: {field} needs a dotted field path, e.g. {field:user.country}", text)
			}
			path := strings.Split(arg, ".")
			for _, s := range path {
				if s == "" {
					return nil, fmt.Errorf("path %q: field path %q has an empty element", text, arg)
				}
			}
			p.kind, p.field = partField, len(t.fields)
			t.fields = append(t.fields, path)
		default:
			return nil, fmt.Errorf("path %q: unknown placeholder {%s} (allowed: {topic}, {partition}, {first_offset}, {record_time:LAYOUT}, {field:a.b})", text, ph)
		}
		if hasArg && p.kind != partTime && p.kind != partField {
			return nil, fmt.Errorf("path %q: {%s} takes no argument", text, name)
		}
		has[p.kind] = true
		t.parts = append(t.parts, p)
	}
	if !has[partFirstOffset] || !has[partPartition] || (needTopic && !has[partTopic]) {
		need := "{partition} and {first_offset}"
		if needTopic {
			need = "{topic}, {partition} and {first_offset}"
		}
		return nil, fmt.Errorf("path %q: must contain %s, so that every file has a key of its own", text, need)
	}
	if strings.HasPrefix(text, "/") || strings.HasSuffix(text, "/") {
		return nil, fmt.Errorf("path %q: must not start or end with '/'", text)
	}
	return t, nil
}

// usesTime says whether the template reads the record time.
func (t *pathTemplate) usesTime() bool {
	for _, p := range t.parts {
		if p.kind == partTime {
			return true
		}
	}
	return false
}

// identity renders the template for a record with {first_offset} left as
// offsetMark: the record's path, which names the chain of files it belongs
// to within its partition. values holds the rendered field values (escaped)
// in the order of t.fields.
func (t *pathTemplate) identity(dst []byte, topic string, partition int32, ts time.Time, values []string) []byte {
	for _, p := range t.parts {
		switch p.kind {
		case partLiteral:
			dst = append(dst, p.text...)
		case partTopic:
			dst = appendEscaped(dst, topic)
		case partPartition:
			dst = strconv.AppendInt(dst, int64(partition), 10)
		case partFirstOffset:
			dst = append(dst, offsetMark...)
		case partTime:
			dst = ts.In(t.loc).AppendFormat(dst, p.text)
		case partField:
			dst = append(dst, values[p.field]...)
		}
	}
	return dst
}

// perRecord says whether the identity depends on the record (its time or
// fields), not only on its topic and partition.
func (t *pathTemplate) perRecord() bool {
	for _, p := range t.parts {
		if p.kind == partTime || p.kind == partField {
			return true
		}
	}
	return false
}

// objectKey is the key of the file of path identity id whose first record
// has offset first.
func objectKey(id string, first int64) string {
	return strings.ReplaceAll(id, offsetMark, fmt.Sprintf("%020d", first))
}

// appendEscaped appends s with every byte that could change the shape of
// a key percent-encoded, as Hive escapes partition values: separators,
// characters S3 and shells treat specially, control bytes, and a value of
// "." or ".." as a whole.
func appendEscaped(dst []byte, s string) []byte {
	if s == "" {
		return append(dst, hiveNull...)
	}
	if s == "." || s == ".." {
		for range len(s) {
			dst = append(dst, "%2E"...)
		}
		return dst
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(`/\%:=#?{}[]"'*^<>|`+"`", c) >= 0 {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	return dst
}

// errNotScalar is a path field whose value is an object or an array.
var errNotScalar = errors.New("is an object or array, not a value a path can hold")

// errNotObject says that a record is valid JSON but not an object: it has
// none of the path's fields, and whether it is a record at all is the
// format's to say.
var errNotObject = errors.New("the record is not a JSON object")

// fieldLookup finds the scalar values of a few dotted paths in one JSON
// object without decoding the rest, reusing its buffers across records.
type fieldLookup struct {
	paths [][]string
	scan  jsonscan.Scanner
	vals  []string
	found []bool
}

func newFieldLookup(paths [][]string) *fieldLookup {
	return &fieldLookup{paths: paths, vals: make([]string, len(paths)), found: make([]bool, len(paths))}
}

// lookup sets l.vals[i] to the text of paths[i] in doc (strings unescaped,
// numbers and booleans as written, absent and null as ""), and raw[i]
// reports whether it was found.
func (l *fieldLookup) lookup(doc []byte) error {
	for i := range l.vals {
		l.vals[i], l.found[i] = "", false
	}
	if len(l.paths) == 0 {
		return nil
	}
	l.scan.Reset(doc)
	k, err := l.scan.Next()
	if err != nil {
		return err
	}
	if k != jsonscan.BeginObject {
		// Read it to the end, so that bad JSON is a syntax error (reason
		// decode) rather than a record without the path's fields.
		for err == nil {
			_, err = l.scan.Next()
		}
		if !errors.Is(err, io.EOF) {
			return err
		}
		return errNotObject
	}
	return l.object(0, nil)
}

// object walks the members of the object just opened at depth, whose path
// from the root is prefix.
func (l *fieldLookup) object(depth int, prefix []string) error {
	for {
		k, err := l.scan.Next()
		if err != nil {
			return err
		}
		if k == jsonscan.EndObject {
			return nil
		}
		name := string(l.scan.Bytes())
		k, err = l.scan.Next()
		if err != nil {
			return err
		}
		want, leaf := l.wanted(prefix, name)
		switch {
		case !want:
			if k == jsonscan.BeginObject || k == jsonscan.BeginArray {
				if err := l.scan.Skip(); err != nil {
					return err
				}
			}
		case k == jsonscan.BeginObject && leaf < 0:
			if err := l.object(depth+1, append(prefix, name)); err != nil {
				return err
			}
		case leaf >= 0:
			if k == jsonscan.BeginObject || k == jsonscan.BeginArray {
				return fmt.Errorf("field %s %w", strings.Join(l.paths[leaf], "."), errNotScalar)
			}
			if k != jsonscan.Null {
				l.vals[leaf] = string(l.scan.Bytes())
				if k == jsonscan.True {
					l.vals[leaf] = "true"
				} else if k == jsonscan.False {
					l.vals[leaf] = "false"
				}
			}
			l.found[leaf] = true
			// Another wanted path may continue below this one only if it is
			// an object, which it is not; nothing more to do.
		default:
			if k == jsonscan.BeginArray {
				if err := l.scan.Skip(); err != nil {
					return err
				}
			}
		}
	}
}

// wanted says whether prefix+name starts some path, and which path it
// completes (-1 if none).
func (l *fieldLookup) wanted(prefix []string, name string) (bool, int) {
	want, leaf := false, -1
	for i, p := range l.paths {
		if len(p) <= len(prefix) || p[len(prefix)] != name {
			continue
		}
		match := true
		for j, s := range prefix {
			if p[j] != s {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		want = true
		if len(p) == len(prefix)+1 {
			leaf = i
		}
	}
	return want, leaf
}

// parseRecordTime reads a time_field value: an RFC 3339 string or an
// integer number of milliseconds since the Unix epoch.
func parseRecordTime(s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time field %q is neither an RFC 3339 time nor epoch milliseconds", truncate(s, 64))
	}
	return t, nil
}

// truncate shortens s for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
