package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// orderIndex keeps the schema documents as ordered trees, so that a
// group's fields follow the order in which the schema lists its
// properties: the compiled schema holds them in a Go map.
type orderIndex struct {
	docs map[string]*tree // by URL, without fragment
}

// tree is a JSON value with its object members in document order.
type tree struct {
	keys    []string
	members map[string]*tree
	items   []*tree
}

func newOrderIndex() *orderIndex { return &orderIndex{docs: map[string]*tree{}} }

func (x *orderIndex) add(u string, text []byte) error {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	t, err := readTree(d, 0)
	if err != nil {
		return fmt.Errorf("json schema %s: %w", u, err)
	}
	x.docs[u] = t
	return nil
}

// maxTreeDepth bounds the nesting read, as the validator's own decoder
// (encoding/json) bounds it.
const maxTreeDepth = 10000

func readTree(d *json.Decoder, depth int) (*tree, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxTreeDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	t := &tree{}
	switch tok {
	case json.Delim('{'):
		t.members = map[string]*tree{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			key, _ := k.(string)
			v, err := readTree(d, depth+1)
			if err != nil {
				return nil, err
			}
			if _, dup := t.members[key]; !dup {
				t.keys = append(t.keys, key)
			}
			t.members[key] = v
		}
		_, err = d.Token()
	case json.Delim('['):
		for d.More() {
			v, err := readTree(d, depth+1)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, v)
		}
		_, err = d.Token()
	}
	return t, err
}

// at returns the value at the JSON pointer ptr ("/properties/a").
func (t *tree) at(ptr string) *tree {
	if ptr == "" {
		return t
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch {
		case t == nil:
			return nil
		case t.members != nil:
			t = t.members[tok]
		default:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(t.items) {
				return nil
			}
			t = t.items[i]
		}
	}
	return t
}

// propertyOrder returns the names of s's properties in the order its
// document lists them; by name when the document is not at hand.
func (x *orderIndex) propertyOrder(s *jsv.Schema) []string {
	loc := s.Location
	base, frag, _ := strings.Cut(loc, "#")
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	var order []string
	if doc := x.docs[base]; doc != nil {
		if props := doc.at(frag).at("/properties"); props != nil && props.members != nil {
			for _, k := range props.keys {
				if _, ok := s.Properties[k]; ok {
					order = append(order, k)
				}
			}
		}
	}
	if len(order) == len(s.Properties) {
		return order
	}
	order = order[:0]
	for k := range s.Properties {
		order = append(order, k)
	}
	sort.Strings(order)
	return order
}
