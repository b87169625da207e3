package variant

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a parsed path such as $.a.b[3] or $["odd key"][0], for looking
// up a value nested in objects and arrays. Parse a path once and reuse it.
type Path struct {
	steps []pathStep
	text  string
}

type pathStep struct {
	name  string // object field, when index < 0
	index int    // array index, or -1
}

// ParsePath parses a path: "$" followed by any number of steps, each
// either .name (name made of letters, digits, '_' and '-'), ["name"] or
// ['name'] (with backslash escaping the quote and itself), or [n] with a
// non-negative decimal index.
func ParsePath(s string) (Path, error) {
	if !strings.HasPrefix(s, "$") {
		return Path{}, fmt.Errorf("variant path %q: must start with '$'", s)
	}
	p := Path{text: s}
	for i := 1; i < len(s); {
		switch s[i] {
		case '.':
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			if j == i+1 {
				return Path{}, fmt.Errorf("variant path %q: empty name at byte %d", s, i+1)
			}
			p.steps = append(p.steps, pathStep{name: s[i+1 : j], index: -1})
			i = j
		case '[':
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\'') {
				quote := s[i+1]
				var name strings.Builder
				j := i + 2
				for ; j < len(s) && s[j] != quote; j++ {
					if s[j] == '\\' && j+1 < len(s) {
						j++
					}
					name.WriteByte(s[j])
				}
				if j+1 >= len(s) || s[j+1] != ']' {
					return Path{}, fmt.Errorf("variant path %q: unterminated quoted name at byte %d", s, i)
				}
				p.steps = append(p.steps, pathStep{name: name.String(), index: -1})
				i = j + 2
				continue
			}
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return Path{}, fmt.Errorf("variant path %q: missing ']' after byte %d", s, i)
			}
			n, err := strconv.Atoi(s[i+1 : i+j])
			if err != nil || n < 0 || s[i+1] == '+' {
				return Path{}, fmt.Errorf("variant path %q: invalid array index %q at byte %d", s, s[i+1:i+j], i+1)
			}
			p.steps = append(p.steps, pathStep{index: n})
			i += j + 1
		default:
			return Path{}, fmt.Errorf("variant path %q: unexpected %q at byte %d", s, s[i], i)
		}
	}
	return p, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// String returns the path as it was parsed.
func (p Path) String() string { return p.text }

// At follows path p from v. It returns found == false when a step names a
// missing field, an index past the end, or a value of the wrong kind (a
// field of an array, say), and an error only for malformed bytes. It reads
// only the headers and offsets along the path.
func (v Value) At(p Path) (val Value, found bool, err error) {
	for i, st := range p.steps {
		switch {
		case st.index < 0:
			if v.Type() != Object {
				return Value{}, false, nil
			}
			v, found, err = v.Lookup(st.name)
		default:
			if v.Type() != Array || st.index >= v.Len() {
				return Value{}, false, nil
			}
			v, err = v.Index(st.index)
			found = err == nil
		}
		if err != nil {
			return Value{}, false, fmt.Errorf("variant path %s, step %d: %w", p.text, i+1, err)
		}
		if !found {
			return Value{}, false, nil
		}
	}
	return v, true, nil
}
