package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table/keyindex"
)

// The row key of a record of an upsert table: the values of the table's
// key fields, in table.key order, each in the canonical encoding of
// package table/keyindex. The helpers below read it the way a format's
// shredder reads the same columns: from a record's JSON text with the
// shredder's scalar conversion (rowgroup.ScalarConverter), or from a
// binary payload with the format's Lookup. Both give a column's value in
// Parquet's PLAIN encoding, which AppendKey turns into the key's, so that
// a key read from a value and one read from a Kafka key (another schema,
// another width of integer) are equal bytes when their values are.

// CheckKeyFields refuses a list of key fields that names no field, a
// field twice, or a nested path: key fields are top-level fields of the
// records.
func CheckKeyFields(fields []string) error {
	if len(fields) == 0 {
		return errors.New("key: no key fields")
	}
	for i, f := range fields {
		switch {
		case f == "":
			return fmt.Errorf("key field %d: empty name", i)
		case strings.Contains(f, "."):
			return fmt.Errorf("key field %s: a key field is a top-level field, not a path", f)
		}
		for _, g := range fields[:i] {
			if g == f {
				return fmt.Errorf("key field %s: listed twice", f)
			}
		}
	}
	return nil
}

// KeyLeaves returns the columns of schema s that key fields name, in
// their order, or an error naming the first field that cannot be a key: a
// field s lacks, an optional one (a row without a key would be possible),
// a group, a list, or a type the key encoding does not cover (decimal,
// INT96, unsigned 64-bit, JSON, a half float).
func KeyLeaves(s *schema.Schema, fields []string) ([]*schema.Node, error) {
	if err := CheckKeyFields(fields); err != nil {
		return nil, err
	}
	leaves := make([]*schema.Node, len(fields))
	for i, f := range fields {
		n := s.Lookup(f)
		if n == nil {
			return nil, fmt.Errorf("key field %s: not a field of the schema", f)
		}
		if err := KeyColumn(n); err != nil {
			return nil, fmt.Errorf("key field %s: %w", f, err)
		}
		leaves[i] = n
	}
	return leaves, nil
}

// KeyColumn returns why column n cannot hold a key field's values, or nil
// when it can: a required primitive column of a type the key encoding
// covers.
func KeyColumn(n *schema.Node) error {
	if !n.IsLeaf() || n.Repetition == schema.Repeated {
		return errors.New("not a primitive field (a group, a list or a map)")
	}
	if n.Repetition != schema.Required {
		return errors.New("optional: a key field must be required")
	}
	if _, err := keyKind(n); err != nil {
		return err
	}
	return nil
}

// keyFamily is how a column's PLAIN values become a key's.
type keyFamily uint8

const (
	keyBool keyFamily = iota + 1
	keyInt32
	keyUint32
	keyInt64
	keyFloat
	keyDouble
	keyString
	keyBytes
	keyUUID
)

// width is the bytes of a PLAIN value of the family; 0 when they vary.
func (f keyFamily) width() int {
	switch f {
	case keyBool:
		return 1
	case keyInt32, keyUint32, keyFloat:
		return 4
	case keyInt64, keyDouble:
		return 8
	case keyUUID:
		return 16
	}
	return 0
}

func keyKind(n *schema.Node) (keyFamily, error) {
	l := n.Logical
	switch l.Kind {
	case schema.Decimal, schema.Float16, schema.Interval, schema.JSON, schema.BSON, schema.Geometry, schema.Geography, schema.Unknown:
		return 0, fmt.Errorf("of type %s, which a key cannot be (keys are booleans, integers, dates, times, timestamps, floats, strings, binaries and UUIDs)", n.TypeName()+" ("+l.String()+")")
	}
	switch n.Physical {
	case meta.TypeBoolean:
		return keyBool, nil
	case meta.TypeInt32:
		if l.Kind == schema.Int && !l.Signed {
			return keyUint32, nil
		}
		return keyInt32, nil
	case meta.TypeInt64:
		if l.Kind == schema.Int && !l.Signed {
			return 0, errors.New("an unsigned 64-bit integer, which a key cannot be")
		}
		return keyInt64, nil
	case meta.TypeFloat:
		return keyFloat, nil
	case meta.TypeDouble:
		return keyDouble, nil
	case meta.TypeByteArray:
		if l.Kind == schema.String || l.Kind == schema.Enum {
			return keyString, nil
		}
		return keyBytes, nil
	case meta.TypeFixedLenByteArray:
		if l.Kind == schema.UUID && n.Length == 16 {
			return keyUUID, nil
		}
		return keyBytes, nil
	}
	return 0, fmt.Errorf("of type %s, which a key cannot be", n.TypeName())
}

// AppendKey appends to dst the canonical key encoding of a value of
// column leaf given in Parquet's PLAIN encoding (a BYTE_ARRAY without its
// length), as rowgroup.ScalarConverter and a format's Lookup give it.
func AppendKey(dst []byte, leaf *schema.Node, plain []byte) ([]byte, error) {
	fam, err := keyKind(leaf)
	if err != nil {
		return dst, err
	}
	if width := fam.width(); width != 0 && len(plain) != width {
		return dst, fmt.Errorf("a %s value of %d bytes, want %d", leaf.TypeName(), len(plain), width)
	}
	switch fam {
	case keyBool:
		return keyindex.AppendBool(dst, plain[0] != 0), nil
	case keyInt32:
		return keyindex.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(plain)))), nil
	case keyUint32:
		return keyindex.AppendInt(dst, int64(binary.LittleEndian.Uint32(plain))), nil
	case keyInt64:
		return keyindex.AppendInt(dst, int64(binary.LittleEndian.Uint64(plain))), nil
	case keyFloat:
		return keyindex.AppendFloat(dst, float64(math.Float32frombits(binary.LittleEndian.Uint32(plain)))), nil
	case keyDouble:
		return keyindex.AppendFloat(dst, math.Float64frombits(binary.LittleEndian.Uint64(plain))), nil
	case keyString:
		if !utf8.Valid(plain) {
			return dst, errors.New("a string that is not UTF-8")
		}
		return keyindex.AppendString(dst, string(plain)), nil
	case keyUUID:
		return keyindex.AppendUUID(dst, [16]byte(plain)), nil
	}
	return keyindex.AppendBytes(dst, plain), nil
}

// AppendPlainKey appends to dst the key of a one-field key given as the
// plain bytes of a Kafka key: a string field's UTF-8 text, the decimal
// digits of an integer field (int, long; not a date, time or timestamp),
// or a binary field's bytes.
func AppendPlainKey(dst []byte, leaf *schema.Node, key []byte) ([]byte, error) {
	fam, err := keyKind(leaf)
	if err != nil {
		return dst, err
	}
	switch {
	case fam == keyString:
		if !utf8.Valid(key) {
			return dst, errors.New("the Kafka key is not UTF-8 text, as the string key field needs")
		}
		return keyindex.AppendString(dst, string(key)), nil
	case fam == keyBytes:
		return keyindex.AppendBytes(dst, key), nil
	case (fam == keyInt32 || fam == keyUint32 || fam == keyInt64) && (leaf.Logical.Kind == schema.None || leaf.Logical.Kind == schema.Int):
		bits := 64
		if fam != keyInt64 {
			bits = 32
		}
		var v int64
		if fam == keyUint32 {
			u, perr := strconv.ParseUint(string(key), 10, 32)
			v, err = int64(u), perr
		} else {
			v, err = strconv.ParseInt(string(key), 10, bits)
		}
		if err != nil {
			return dst, fmt.Errorf("the Kafka key %s is not the decimal digits of a %d-bit integer, as the key field needs", quoteKey(key), bits)
		}
		return keyindex.AppendInt(dst, v), nil
	}
	return dst, fmt.Errorf("a plain Kafka key cannot be a %s key field: give the key as a record with the field", leaf.TypeName())
}

// quoteKey quotes at most 64 bytes of a key for an error.
func quoteKey(key []byte) string {
	if len(key) > 64 {
		return strconv.Quote(string(key[:64])) + "..."
	}
	return strconv.Quote(string(key))
}

// JSONKey reads the row key of JSON objects of one schema: the key
// fields' members at the object's top level, each converted as the JSON
// shredder converts its column. A JSONKey is not safe for concurrent use.
type JSONKey struct {
	leaves []*schema.Node
	convs  []*rowgroup.ScalarConverter
	walk   *JSONMembers
	vals   [][]byte // the members' plain values, this object's
}

// NewJSONKey compiles the reading of key columns leaves (KeyLeaves) with
// the shredder's options.
func NewJSONKey(leaves []*schema.Node, opts ...rowgroup.JSONOption) (*JSONKey, error) {
	names := make([]string, len(leaves))
	for i, l := range leaves {
		names[i] = l.Name
	}
	k := &JSONKey{leaves: leaves, walk: NewJSONMembers(names), vals: make([][]byte, len(leaves))}
	for _, l := range leaves {
		c, err := rowgroup.NewScalarConverter(l, opts...)
		if err != nil {
			return nil, fmt.Errorf("key field %s: %w", l.Name, err)
		}
		k.convs = append(k.convs, c)
	}
	return k, nil
}

// Append appends to dst the key of the JSON object text. A text that is
// not an object, or whose key fields are missing, null, nested values or
// values their columns do not take, is an error naming the field.
func (k *JSONKey) Append(dst, text []byte) ([]byte, error) {
	return k.appendObject(dst, text, false)
}

// AppendKafkaKey appends to dst the key read from a Kafka key: a JSON
// object with the key fields (a Kafka Connect key with
// schemas.enable, {"schema": ..., "payload": {...}}, is read from its
// payload), or, for a one-field key that is not a JSON object, the key's
// plain bytes (AppendPlainKey).
func (k *JSONKey) AppendKafkaKey(dst, key []byte) ([]byte, error) {
	if len(key) == 0 {
		return dst, errors.New("the record has no Kafka key")
	}
	if isJSONObject(key) {
		return k.appendObject(dst, key, true)
	}
	if len(k.leaves) != 1 {
		return dst, fmt.Errorf("the Kafka key %s is not a JSON object with the key fields %s", quoteKey(key), k.names())
	}
	return AppendPlainKey(dst, k.leaves[0], key)
}

func (k *JSONKey) names() string {
	names := make([]string, len(k.leaves))
	for i, l := range k.leaves {
		names[i] = l.Name
	}
	return strings.Join(names, ", ")
}

// isJSONObject reports whether b, after whitespace, opens a JSON object.
func isJSONObject(b []byte) bool {
	for _, c := range b {
		if !jsonscan.IsSpace(c) {
			return c == '{'
		}
	}
	return false
}

func (k *JSONKey) appendObject(dst, text []byte, connect bool) ([]byte, error) {
	payload, err := k.walk.Walk(text, connect, k.member)
	if err != nil {
		return dst, err
	}
	for i := range k.leaves {
		if !k.walk.Found(i) {
			if payload != nil {
				// A Kafka Connect key with its schema: the fields are its
				// payload's.
				return k.appendObject(dst, payload, false)
			}
			return dst, fmt.Errorf("key field %s is missing", k.leaves[i].Name)
		}
	}
	for i, l := range k.leaves {
		var err error
		if dst, err = AppendKey(dst, l, k.vals[i]); err != nil {
			return dst, fmt.Errorf("key field %s: %w", l.Name, err)
		}
	}
	return dst, nil
}

// member takes key field i's scalar token: null is an error, another
// value its column's plain value.
func (k *JSONKey) member(i int, t jsonscan.Kind, b []byte) (bool, error) {
	switch t {
	case jsonscan.Null:
		return false, fmt.Errorf("key field %s is null", k.leaves[i].Name)
	case jsonscan.True:
		b = []byte("true")
	case jsonscan.False:
		b = []byte("false")
	}
	plain, err := k.convs[i].Plain(t, b)
	if err != nil {
		return false, fmt.Errorf("key field %s: %w", k.leaves[i].Name, err)
	}
	k.vals[i] = append(k.vals[i][:0], plain...)
	return true, nil
}

// AppendLookupKey appends to dst the key of a binary payload read by l, a
// Lookup of the key fields' paths (one each, in key order): each must be
// a key column (KeyColumn) and present in the payload.
func AppendLookupKey(dst []byte, l Lookup, payload []byte, fields []string) ([]byte, error) {
	if err := l.Read(payload); err != nil {
		return dst, err
	}
	for i, f := range fields {
		leaf := l.Leaf(i)
		if leaf == nil {
			return dst, fmt.Errorf("key field %s is not a field of the record's schema", f)
		}
		v := l.Value(i)
		if v == nil {
			return dst, fmt.Errorf("key field %s is null or absent", f)
		}
		var err error
		if dst, err = AppendKey(dst, leaf, v); err != nil {
			return dst, fmt.Errorf("key field %s: %w", f, err)
		}
	}
	return dst, nil
}

// LookupKey is the Lookup of the key fields in the payloads of one
// schema (NewLookup over KeyPaths), or why its records have no key.
type LookupKey struct {
	Lookup Lookup
	Err    error
}

// NewLookupKey checks a Lookup of the key fields (l and err, as a
// Schema's NewLookup returns them) with CheckLookupKey; an error is
// prefixed with the schema's name.
func NewLookupKey(l Lookup, err error, fields []string, name string) *LookupKey {
	if err == nil {
		err = CheckLookupKey(l, fields)
	}
	if err != nil {
		return &LookupKey{Err: fmt.Errorf("%s: %w", name, err)}
	}
	return &LookupKey{Lookup: l}
}

// Append appends the key of payload, or returns why it has none.
func (k *LookupKey) Append(dst, payload []byte, fields []string) ([]byte, error) {
	if k.Err != nil {
		return dst, k.Err
	}
	return AppendLookupKey(dst, k.Lookup, payload, fields)
}

// CheckLookupKey returns why the columns l looks up cannot be key fields
// (KeyColumn), naming the field, or nil.
func CheckLookupKey(l Lookup, fields []string) error {
	for i, f := range fields {
		leaf := l.Leaf(i)
		if leaf == nil {
			return fmt.Errorf("key field %s: not a field of the schema", f)
		}
		if err := KeyColumn(leaf); err != nil {
			return fmt.Errorf("key field %s: %w", f, err)
		}
	}
	return nil
}

// KeyPaths are the one-name paths of key fields, for a Lookup.
func KeyPaths(fields []string) [][]string {
	paths := make([][]string, len(fields))
	for i, f := range fields {
		paths[i] = []string{f}
	}
	return paths
}
