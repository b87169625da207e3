// Package pathfields reads the values that the object path template's
// {field:PATH} parts and time_field take from a record, for a sink without
// a table: from a JSON record's text (JSON, a field lookup that decodes
// nothing else) or from a binary payload through its format's lookup
// (Payload, from a Spec), and the record time they give.
package pathfields

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// ErrNotScalar is a path field whose value is an object or an array.
var ErrNotScalar = errors.New("is an object or array, not a value a path can hold")

// ErrNotObject says that a record is valid JSON but not an object: it has
// none of the path's fields, and whether it is a record at all is the
// format's to say.
var ErrNotObject = errors.New("the record is not a JSON object")

// JSON finds the scalar values of a few dotted paths in one JSON object
// without decoding the rest, reusing its buffers across records.
type JSON struct {
	paths [][]string
	scan  jsonscan.Scanner
	vals  []string
	found []bool
	kinds []jsonscan.Kind // the token of each value found: String, Number, True, False or Null
}

// NewJSON readies the lookup of paths, each a dotted path split at its dots.
func NewJSON(paths [][]string) *JSON {
	return &JSON{paths: paths, vals: make([]string, len(paths)), found: make([]bool, len(paths)), kinds: make([]jsonscan.Kind, len(paths))}
}

// Lookup reads the values of the paths in doc: Value(i) is the text of
// paths[i] (strings unescaped, numbers and booleans as written, absent and
// null as ""), Found(i) whether it was there and Kind(i) its token.
func (l *JSON) Lookup(doc []byte) error {
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
		return ErrNotObject
	}
	return l.object(0, nil)
}

// object walks the members of the object just opened at depth, whose path
// from the root is prefix.
func (l *JSON) object(depth int, prefix []string) error {
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
				return fmt.Errorf("field %s %w", strings.Join(l.paths[leaf], "."), ErrNotScalar)
			}
			if k != jsonscan.Null {
				l.vals[leaf] = string(l.scan.Bytes())
				if k == jsonscan.True {
					l.vals[leaf] = "true"
				} else if k == jsonscan.False {
					l.vals[leaf] = "false"
				}
			}
			l.found[leaf], l.kinds[leaf] = true, k
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
func (l *JSON) wanted(prefix []string, name string) (bool, int) {
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

// Len is the number of paths looked up.
func (l *JSON) Len() int { return len(l.paths) }

// Value is the text of path i found by the last Lookup.
func (l *JSON) Value(i int) string { return l.vals[i] }

// Found reports whether the last Lookup found path i (null included).
func (l *JSON) Found(i int) bool { return l.found[i] }

// Kind is the token of path i's value found by the last Lookup: String,
// Number, True, False or Null.
func (l *JSON) Kind(i int) jsonscan.Kind { return l.kinds[i] }

// ParseRecordTime reads a time_field value: an RFC 3339 string or an
// integer number of milliseconds since the Unix epoch.
func ParseRecordTime(s string) (time.Time, error) {
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
