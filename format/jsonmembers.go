package format

import (
	"errors"
	"fmt"
	"io"

	"github.com/pqsink/pqsink/internal/jsonscan"
)

// JSONMembers walks the top level of JSON objects for the members of some
// names, the key fields: the one walk of a JSON object's key that the
// JSON formats (JSONKey) and VARIANT's untyped keys share. A JSONMembers
// is not safe for concurrent use.
type JSONMembers struct {
	names []string
	scan  jsonscan.Scanner
	found []bool
}

// NewJSONMembers returns a walker of the members names.
func NewJSONMembers(names []string) *JSONMembers {
	return &JSONMembers{names: names, found: make([]bool, len(names))}
}

// Walk reads text, which must be one JSON object, member by member. Each
// member named names[i] whose value is a scalar (null included) goes to
// visit with its token's kind and bytes (jsonscan's: a string's text, a
// number's digits), valid during the call; visit says whether the member
// counts as found (Found), or returns an error that ends the walk. A
// found member named again, or a named member whose value is an object
// or an array, is an error naming it (as "key field"); other members are
// skipped. With connect, a member payload that is an object (unless it is
// a found key field) is returned, for a Kafka Connect key with its
// schema, whose fields are its payload's.
func (w *JSONMembers) Walk(text []byte, connect bool, visit func(i int, t jsonscan.Kind, b []byte) (bool, error)) (payload []byte, err error) {
	for i := range w.found {
		w.found[i] = false
	}
	s := &w.scan
	s.Reset(text)
	if t, err := s.Next(); err != nil {
		return nil, err
	} else if t != jsonscan.BeginObject {
		return nil, errors.New("not a JSON object")
	}
	for {
		t, err := s.Next()
		if err != nil {
			return nil, err
		}
		if t == jsonscan.EndObject {
			break
		}
		name := s.Bytes()
		i := w.index(name)
		isPayload := connect && string(name) == "payload"
		if t, err = s.Next(); err != nil {
			return nil, err
		}
		switch {
		case i >= 0 && w.found[i]:
			return nil, fmt.Errorf("key field %s appears twice", w.names[i])
		case isPayload && t == jsonscan.BeginObject:
			begin := s.Offset()
			if err := s.Skip(); err != nil {
				return nil, err
			}
			payload = text[begin : s.Offset()+1]
		case i < 0:
			if t == jsonscan.BeginObject || t == jsonscan.BeginArray {
				if err := s.Skip(); err != nil {
					return nil, err
				}
			}
		case t == jsonscan.BeginObject || t == jsonscan.BeginArray:
			return nil, fmt.Errorf("key field %s is not a scalar", w.names[i])
		default:
			found, err := visit(i, t, s.Bytes())
			if err != nil {
				return nil, err
			}
			w.found[i] = found
		}
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return nil, err
	}
	return payload, nil
}

// Found reports whether the last Walk found member i.
func (w *JSONMembers) Found(i int) bool { return w.found[i] }

func (w *JSONMembers) index(name []byte) int {
	for i, n := range w.names {
		if n == string(name) {
			return i
		}
	}
	return -1
}
