package avrorow

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// Lookup reads the values of a few scalar fields of Avro binary records
// written with one writer schema, each converted exactly as a Decoder of
// that schema writes the field's column: it is a Decoder of the writer
// schema read as its projection onto the fields' paths, into a row group
// of one row, so that the values, and the errors of a record that does not
// decode, are the shredder's own. It reads a record only as far as the
// last field it looks up. A Lookup is not safe for concurrent use.
type Lookup struct {
	paths  [][]string
	leaves []*schema.Node // nil: the writer schema has no such field
	cols   []*rowgroup.Column
	g      *rowgroup.RowGroup
	dec    *Decoder // nil when the writer schema has none of the fields
	vals   [][]byte
	buf    [][8]byte
}

// NewLookup compiles a lookup of the dotted paths (each a path of field
// names from the root record, e.g. ["payload", "nested", "level"]) in
// records written with writer. A path that the writer schema lacks (a
// field absent from its record, or from a record on the way) is always
// null. A path to a field that is not a scalar column of the writer's
// Parquet schema (a record, an array, a map, a union of several types),
// or through one that is not a record, is an error. Of the options, only
// MicrosTimestamps and MicrosTimes apply.
func NewLookup(writer *avro.Schema, paths [][]string, opts ...Option) (*Lookup, error) {
	var o options
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	l := &Lookup{paths: paths, leaves: make([]*schema.Node, len(paths)), cols: make([]*rowgroup.Column, len(paths)),
		vals: make([][]byte, len(paths)), buf: make([][8]byte, len(paths))}
	root, err := project(writer.Root, paths, "", 0)
	if err != nil {
		return nil, fmt.Errorf("avro lookup: %w", err)
	}
	if root == nil {
		return l, nil
	}
	proj := &avro.Schema{Root: root}
	ps, err := proj.Parquet()
	if err != nil {
		return nil, fmt.Errorf("avro lookup: %w", err)
	}
	if o.micros {
		if ps, _, err = schema.NarrowNanos(ps); err != nil {
			return nil, fmt.Errorf("avro lookup: %w", err)
		}
	}
	if o.times {
		if ps, _, err = schema.WidenTimeMillis(ps); err != nil {
			return nil, fmt.Errorf("avro lookup: %w", err)
		}
	}
	for i, p := range paths {
		n := ps.Lookup(p...)
		if n == nil {
			continue
		}
		if !n.IsLeaf() || n.MaxRep > 0 {
			return nil, fmt.Errorf("avro lookup: field %s is not a value a column holds outside lists and maps", strings.Join(p, "."))
		}
		l.leaves[i] = n
	}
	l.g = rowgroup.New(ps)
	if l.dec, err = NewDecoder(l.g, writer, ReaderSchema(proj), Prefix()); err != nil {
		return nil, fmt.Errorf("avro lookup: %w", err)
	}
	// The fields after the last one looked up need not be read.
	if f := l.dec.root.fields; l.dec.root.code == avroRecord {
		n := len(f)
		for n > 0 && f[n-1].code >= avroSkipLong {
			n--
		}
		l.dec.root.fields = f[:n]
	}
	for i, n := range l.leaves {
		if n != nil {
			l.cols[i] = l.g.Column(n.Column)
		}
	}
	return l, nil
}

// maxLookupDepth bounds the records a path goes through.
const maxLookupDepth = 64

// project returns the type t holding only the fields on paths (from t's
// root), or nil when t has none of them.
func project(t *avro.Type, paths [][]string, at string, depth int) (*avro.Type, error) {
	if depth > maxLookupDepth {
		return nil, fmt.Errorf("field %s: nested more than %d deep", at, maxLookupDepth)
	}
	if depth == 0 && t.Kind != avro.Record {
		// A root that is not a record is the one column "value".
		for _, p := range paths {
			if len(p) == 1 && p[0] == avro.ValueField {
				return t, nil
			}
		}
		return nil, nil
	}
	if t.Kind == avro.Union {
		// A record that may be null.
		nb, ok := t.Nullable()
		if !ok || len(t.Branches) != 2 {
			return nil, fmt.Errorf("field %s is a union of several types, not a record", at)
		}
		inner, err := project(t.Branches[1-nb], paths, at, depth)
		if err != nil || inner == nil {
			return nil, err
		}
		u := *t
		u.Branches = []*avro.Type{t.Branches[0], t.Branches[1]}
		u.Branches[1-nb] = inner
		return &u, nil
	}
	if t.Kind != avro.Record {
		return nil, fmt.Errorf("field %s is a%s %s, not a record", at, article(t.Kind.String()), t.Kind)
	}
	var fields []*avro.Field
	for _, f := range t.Fields {
		var below [][]string
		whole := false
		for _, p := range paths {
			if len(p) == 0 || p[0] != f.Name {
				continue
			}
			if len(p) == 1 {
				whole = true
			} else {
				below = append(below, p[1:])
			}
		}
		if !whole && below == nil {
			continue
		}
		nf := *f
		if !whole {
			inner, err := project(f.Type, below, join(at, f.Name), depth+1)
			if err != nil {
				return nil, err
			}
			if inner == nil {
				continue
			}
			nf.Type = inner
		}
		fields = append(fields, &nf)
	}
	if fields == nil {
		return nil, nil
	}
	r := *t
	r.Fields = fields
	return &r, nil
}

func article(s string) string {
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "n"
	}
	return ""
}

// Leaf returns the column of the writer schema's Parquet schema that path
// i names, or nil when the writer schema has no such field.
func (l *Lookup) Leaf(i int) *schema.Node { return l.leaves[i] }

// Read reads the fields of value, one record in Avro binary (the bytes
// after the Confluent wire format's header). A record that does not decode
// as far as the last field is an error, a *rowgroup.RecordError worded
// as the Decoder words it.
func (l *Lookup) Read(value []byte) error {
	for i := range l.vals {
		l.vals[i] = nil
	}
	if l.dec == nil {
		return nil
	}
	l.g.Reset()
	if err := l.dec.Fill(value); err != nil {
		return err
	}
	for i, c := range l.cols {
		if c == nil || c.NumValues() == 0 {
			continue
		}
		b := l.buf[i][:0]
		switch l.leaves[i].Physical {
		case meta.TypeBoolean:
			v := byte(0)
			if c.Bool[0] {
				v = 1
			}
			b = append(b, v)
		case meta.TypeInt32:
			b = binary.LittleEndian.AppendUint32(b, uint32(c.Int32[0]))
		case meta.TypeInt64:
			b = binary.LittleEndian.AppendUint64(b, uint64(c.Int64[0]))
		case meta.TypeFloat:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(c.Float[0]))
		case meta.TypeDouble:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.Double[0]))
		case meta.TypeByteArray:
			b = c.ByteArray(0)
		default: // FIXED_LEN_BYTE_ARRAY
			b = c.Bytes[:l.leaves[i].Length]
		}
		l.vals[i] = b
	}
	return nil
}

// Value returns the value of path i in the record Read last, in Parquet's
// PLAIN encoding of its Leaf's physical type (a BYTE_ARRAY without its
// length), or nil when it is null or absent. It is valid until the next
// Read.
func (l *Lookup) Value(i int) []byte { return l.vals[i] }
