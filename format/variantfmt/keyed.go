package variantfmt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/table/keyindex"
)

// keyed is the VARIANT format read as changes to an upsert table's rows
// (format.Keyer). A VARIANT column has no types for the key fields, so
// the key is read from the top level of each value's JSON text by the
// JSON types of its members: a string is a string key field, a number
// an integer one when it has an integral value within ±2^63 (1, 1.0 and
// 1e0 are one key), a float one otherwise, true and false booleans.
// Reading the text rather than the row the shredder built is also what
// the shredder's output allows: a shredded or encoded VARIANT value is
// not a record's fields at hand.
type keyed struct {
	*variantFormat
	opts format.KeyOptions
}

// Keyed implements format.Keyer. Key fields are not checked against a
// schema (the VARIANT column has none): a value without them is a
// rejection (reason key). The Debezium envelope is not read yet.
func (f *variantFormat) Keyed(opts format.KeyOptions) (format.Keyed, error) {
	if err := format.CheckKeyOptions(opts, Name); err != nil {
		return nil, err
	}
	return &keyed{variantFormat: f, opts: opts}, nil
}

func (k *keyed) NewDecoder(p format.Partition) format.Decoder { return k.NewChangeDecoder(p) }

func (k *keyed) NewChangeDecoder(p format.Partition) format.ChangeDecoder {
	r := &untypedKey{fields: k.opts.Fields, walk: format.NewJSONMembers(k.opts.Fields), kinds: make([]jsonscan.Kind, len(k.opts.Fields)), vals: make([][]byte, len(k.opts.Fields))}
	return &format.ChangeReader{Decoder: k.variantFormat.NewDecoder(p),
		ValueKey: func(dst []byte, d format.Decoded) ([]byte, error) { return r.appendObject(dst, format.JSONText(d)) },
		KafkaKey: func(_ context.Context, dst, key []byte, _ int64) ([]byte, error, error) {
			out, err := r.appendKafkaKey(dst, key)
			return out, err, nil
		}}
}

// untypedKey reads keys from JSON by their members' JSON types.
type untypedKey struct {
	fields []string
	walk   *format.JSONMembers
	scan   jsonscan.Scanner // of a Kafka key's scalar
	kinds  []jsonscan.Kind
	vals   [][]byte
}

// appendObject appends the key of a JSON object's text.
func (r *untypedKey) appendObject(dst, text []byte) ([]byte, error) {
	if _, err := r.walk.Walk(text, false, r.member); err != nil {
		return dst, err
	}
	for i, f := range r.fields {
		if !r.walk.Found(i) {
			return dst, fmt.Errorf("key field %s is missing or null", f)
		}
		dst = appendUntyped(dst, r.kinds[i], r.vals[i])
	}
	return dst, nil
}

// member takes key field i's scalar token; a null is as if absent.
func (r *untypedKey) member(i int, t jsonscan.Kind, b []byte) (bool, error) {
	if t == jsonscan.Null {
		return false, nil
	}
	r.kinds[i] = t
	r.vals[i] = append(r.vals[i][:0], b...)
	return true, nil
}

// appendKafkaKey appends the key of a Kafka key: a JSON object with the
// key fields, or for one field a JSON scalar, or else the key's bytes as
// a string.
func (r *untypedKey) appendKafkaKey(dst, key []byte) ([]byte, error) {
	if len(key) == 0 {
		return dst, errors.New("the record has no Kafka key")
	}
	if strings.HasPrefix(strings.TrimLeft(string(key[:min(len(key), 64)]), " \t\r\n"), "{") {
		return r.appendObject(dst, key)
	}
	if len(r.fields) != 1 {
		return dst, fmt.Errorf("the Kafka key is not a JSON object with the key fields %s", strings.Join(r.fields, ", "))
	}
	s := &r.scan
	s.Reset(key)
	if t, err := s.Next(); err == nil && t != jsonscan.BeginArray && t != jsonscan.Null {
		val := append([]byte(nil), s.Bytes()...)
		if _, err := s.Next(); errors.Is(err, io.EOF) {
			return appendUntyped(dst, t, val), nil
		}
	}
	if !utf8.Valid(key) {
		return dst, errors.New("the Kafka key is neither JSON nor UTF-8 text")
	}
	return keyindex.AppendString(dst, string(key)), nil
}

// appendUntyped appends the key of a JSON scalar token by its type.
func appendUntyped(dst []byte, t jsonscan.Kind, b []byte) []byte {
	switch t {
	case jsonscan.True:
		return keyindex.AppendBool(dst, true)
	case jsonscan.False:
		return keyindex.AppendBool(dst, false)
	case jsonscan.Number:
		if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
			return keyindex.AppendInt(dst, v)
		}
		f, _ := strconv.ParseFloat(string(b), 64) // a JSON number; ±Inf when out of range
		if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
			return keyindex.AppendInt(dst, int64(f))
		}
		return keyindex.AppendFloat(dst, f)
	}
	return keyindex.AppendString(dst, string(b))
}
