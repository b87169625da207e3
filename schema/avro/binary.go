package avro

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"
)

// EncodeDefault returns the Avro binary encoding of a field default, given
// as JSON in the schema, in type t: what a reader fills a field with when
// the writer's record lacks it. As the specification says, the default of
// a union is of its first branch; a default of another branch is accepted
// too, as several implementations do. Bytes and fixed defaults are strings
// whose code points 0–255 are the bytes.
func EncodeDefault(t *Type, raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("default %s: %w", raw, err)
	}
	b, err := appendDefault(nil, t, v)
	if err != nil {
		return nil, fmt.Errorf("default %s: %w", raw, err)
	}
	return b, nil
}

// AppendLong appends v in Avro's zig-zag varint encoding.
func AppendLong(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

func appendDefault(b []byte, t *Type, v any) ([]byte, error) {
	bad := func() ([]byte, error) { return nil, fmt.Errorf("%v is not a %s", v, describe(t)) }
	switch t.Kind {
	case Null:
		if v != nil {
			return bad()
		}
		return b, nil
	case Boolean:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		if x {
			return append(b, 1), nil
		}
		return append(b, 0), nil
	case Int, Long:
		n, ok := v.(json.Number)
		if !ok {
			return bad()
		}
		x, err := n.Int64()
		if err != nil || (t.Kind == Int && (x < math.MinInt32 || x > math.MaxInt32)) {
			return bad()
		}
		return AppendLong(b, x), nil
	case Float, Double:
		var x float64
		switch n := v.(type) {
		case json.Number:
			f, err := n.Float64()
			if err != nil {
				return bad()
			}
			x = f
		case string: // "NaN", "Infinity", "-Infinity", as Java writes them
			switch n {
			case "NaN":
				x = math.NaN()
			case "Infinity":
				x = math.Inf(1)
			case "-Infinity":
				x = math.Inf(-1)
			default:
				return bad()
			}
		default:
			return bad()
		}
		if t.Kind == Float {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x))), nil
		}
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(x)), nil
	case String:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		b = AppendLong(b, int64(len(s)))
		return append(b, s...), nil
	case Bytes, Fixed:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		raw, ok := latin1(s)
		if !ok {
			return nil, fmt.Errorf("%q has code points above 255, which bytes cannot hold", s)
		}
		if t.Kind == Fixed {
			if len(raw) != t.Size {
				return nil, fmt.Errorf("%d bytes for fixed %s of size %d", len(raw), t.Name, t.Size)
			}
			return append(b, raw...), nil
		}
		b = AppendLong(b, int64(len(raw)))
		return append(b, raw...), nil
	case Enum:
		s, ok := v.(string)
		i := slices.Index(t.Symbols, s)
		if !ok || i < 0 {
			return bad()
		}
		return AppendLong(b, int64(i)), nil
	case Array:
		list, ok := v.([]any)
		if !ok {
			return bad()
		}
		if len(list) > 0 {
			b = AppendLong(b, int64(len(list)))
			for _, e := range list {
				var err error
				if b, err = appendDefault(b, t.Items, e); err != nil {
					return nil, err
				}
			}
		}
		return append(b, 0), nil
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		if len(m) > 0 {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			b = AppendLong(b, int64(len(keys)))
			for _, k := range keys {
				b = AppendLong(b, int64(len(k)))
				b = append(b, k...)
				var err error
				if b, err = appendDefault(b, t.Values, m[k]); err != nil {
					return nil, err
				}
			}
		}
		return append(b, 0), nil
	case Record:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		for _, f := range t.Fields {
			fv, has := m[f.Name]
			if !has {
				if !f.HasDefault {
					return nil, fmt.Errorf("record %s: field %s has no value and no default", t.Name, f.Name)
				}
				d, err := EncodeDefault(f.Type, f.Default)
				if err != nil {
					return nil, err
				}
				b = append(b, d...)
				continue
			}
			var err error
			if b, err = appendDefault(b, f.Type, fv); err != nil {
				return nil, err
			}
		}
		return b, nil
	case Union:
		var first error
		for i, br := range t.Branches {
			enc, err := appendDefault(nil, br, v)
			if err != nil {
				if first == nil {
					first = err
				}
				continue
			}
			b = AppendLong(b, int64(i))
			return append(b, enc...), nil
		}
		if first == nil {
			return bad()
		}
		return nil, first
	}
	return bad()
}

// latin1 returns the bytes of s's code points, when all are below 256.
func latin1(s string) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if r > 255 {
			return nil, false
		}
		out = append(out, byte(r))
		s = s[n:]
	}
	return out, true
}
