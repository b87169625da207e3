package variant

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// ParseShapePaths builds a Shape from a list of shredded paths, one per
// line, each a path and a type separated by white space:
//
//	$.event_type         string
//	$.user.id            int64
//	$.price              decimal(9,2)
//	$.tags[*]            string
//	$.items[*].sku       string
//
// A path is "$" followed by steps: .name (letters, digits, '_', '-'),
// ["name"] (with backslash escapes), or [*] for every element of an
// array. The objects and arrays on the way are implied. Types are the
// lower-case Variant type names of Type.String (int8 … int64, float,
// double, boolean, string, binary, date, time_ntz, timestamp,
// timestamp_ntz, timestamp_nanos, timestamp_ntz_nanos, uuid) and
// decimal(P,S), which becomes decimal4, decimal8 or decimal16 by P.
// Blank lines and lines starting with '#' are ignored.
func ParseShapePaths(text string) (Shape, error) {
	var root Shape
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexAny(line, " \t")
		if i < 0 {
			return Shape{}, fmt.Errorf("shape line %d: want PATH TYPE, got %q", n, line)
		}
		path, typ := strings.TrimSpace(line[:i]), line[i+1:]
		leaf, err := parseShapeType(typ)
		if err != nil {
			return Shape{}, fmt.Errorf("shape line %d: %w", n, err)
		}
		if err := addShapePath(&root, path, leaf); err != nil {
			return Shape{}, fmt.Errorf("shape line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Shape{}, err
	}
	root.SortFields()
	if err := root.Check(); err != nil {
		return Shape{}, err
	}
	return root, nil
}

func parseShapeType(s string) (Shape, error) {
	if rest, ok := strings.CutPrefix(s, "decimal("); ok && strings.HasSuffix(rest, ")") {
		ps, ss, ok := strings.Cut(strings.TrimSuffix(rest, ")"), ",")
		p, err1 := strconv.Atoi(strings.TrimSpace(ps))
		sc, err2 := strconv.Atoi(strings.TrimSpace(ss))
		if !ok || err1 != nil || err2 != nil || p < 1 || p > 38 || sc < 0 || sc > p {
			return Shape{}, fmt.Errorf("type %q: want decimal(P,S) with 1 <= P <= 38 and 0 <= S <= P", s)
		}
		t := Decimal16
		switch {
		case p <= 9:
			t = Decimal4
		case p <= 18:
			t = Decimal8
		}
		return Shape{Type: t, Precision: uint8(p), Scale: uint8(sc)}, nil
	}
	for t := Boolean; t < Object; t++ {
		if t.String() == s && t != Decimal4 && t != Decimal8 && t != Decimal16 {
			return Shape{Type: t}, nil
		}
	}
	return Shape{}, fmt.Errorf("unknown shredded type %q", s)
}

// addShapePath merges the path ending in leaf into root.
func addShapePath(root *Shape, path string, leaf Shape) error {
	if !strings.HasPrefix(path, "$") {
		return fmt.Errorf("path %q must start with '$'", path)
	}
	cur := root
	for i := 1; i < len(path); {
		var name string
		elem := false
		switch {
		case path[i] == '.':
			j := i + 1
			for j < len(path) && isNameByte(path[j]) {
				j++
			}
			if j == i+1 {
				return fmt.Errorf("path %q: empty name at byte %d", path, i+1)
			}
			name, i = path[i+1:j], j
		case strings.HasPrefix(path[i:], "[*]"):
			elem, i = true, i+3
		case strings.HasPrefix(path[i:], `["`):
			unq, err := strconv.QuotedPrefix(path[i+1:])
			if err != nil || !strings.HasPrefix(path[i+1+len(unq):], "]") {
				return fmt.Errorf("path %q: bad quoted name at byte %d", path, i)
			}
			name, _ = strconv.Unquote(unq)
			i += 1 + len(unq) + 1
		default:
			return fmt.Errorf("path %q: unexpected %q at byte %d", path, path[i], i)
		}
		if elem {
			if cur.Type == Invalid {
				cur.Type, cur.Element = Array, &Shape{}
			}
			if cur.Type != Array {
				return fmt.Errorf("path %q: %s is both an array and a %v", path, path[:i-3], cur.Type)
			}
			cur = cur.Element
			continue
		}
		if cur.Type == Invalid {
			cur.Type = Object
		}
		if cur.Type != Object {
			return fmt.Errorf("path %q: a field of a %v", path, cur.Type)
		}
		k := -1
		for j := range cur.Fields {
			if cur.Fields[j].Name == name {
				k = j
			}
		}
		if k < 0 {
			cur.Fields = append(cur.Fields, ShapeField{Name: name})
			k = len(cur.Fields) - 1
		}
		cur = &cur.Fields[k].Shape
	}
	if cur.Type != Invalid {
		return fmt.Errorf("path %q is given twice, or also has fields or elements", path)
	}
	*cur = leaf
	return nil
}
