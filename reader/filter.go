package reader

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pqsink/pqsink/bloom"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Op is the comparison of a Filter.
type Op uint8

// Comparisons.
const (
	Eq Op = iota + 1 // column = value
	Lt               // column < value
	Le               // column <= value
	Gt               // column > value
	Ge               // column >= value
)

var opNames = [...]string{Eq: "=", Lt: "<", Le: "<=", Gt: ">", Ge: ">="}

// String returns the operator's symbol, e.g. "<=".
func (o Op) String() string {
	if o >= Eq && o <= Ge {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", o)
}

// Filter is a predicate "Column Op Value" on a leaf column that is not
// repeated. Value is a bool for BOOLEAN columns; an integer of any Go
// integer type for INT32 and INT64 columns (their stored value: days for a
// DATE, the unit count for a TIMESTAMP, the unscaled value for a DECIMAL),
// compared unsigned when the column is an unsigned INTEGER; a float or an
// integer for FLOAT and DOUBLE; a string or []byte for BYTE_ARRAY and
// FIXED_LEN_BYTE_ARRAY columns, compared byte-wise. A null never matches.
type Filter struct {
	Column string
	Op     Op
	Value  any
}

// order is how the filter compares: the sort order of the column.
type order uint8

const (
	orderSigned order = iota
	orderUnsigned
	orderFloat
	orderBytes
	orderBool
)

type compiledFilter struct {
	leaf  *schema.Node
	op    Op
	order order
	i     int64 // orderSigned, orderBool (0 or 1)
	u     uint64
	f     float64
	b     []byte
}

func compileFilter(s *schema.Schema, f Filter) (*compiledFilter, error) {
	leaf := s.Leaf(f.Column)
	if leaf == nil {
		return nil, fmt.Errorf("filter: no leaf column %q", f.Column)
	}
	if leaf.MaxRep > 0 {
		return nil, fmt.Errorf("filter: column %q is repeated", f.Column)
	}
	if f.Op < Eq || f.Op > Ge {
		return nil, fmt.Errorf("filter: invalid operator %v", f.Op)
	}
	c := &compiledFilter{leaf: leaf, op: f.Op}
	bad := func() error {
		return fmt.Errorf("filter: %T value for %v column %q", f.Value, leaf.Physical, f.Column)
	}
	i, u, isInt, neg := intValue(f.Value)
	switch leaf.Physical {
	case meta.TypeBoolean:
		v, ok := f.Value.(bool)
		if !ok {
			return nil, bad()
		}
		c.order = orderBool
		if v {
			c.i = 1
		}
	case meta.TypeInt32, meta.TypeInt64:
		if !isInt {
			return nil, bad()
		}
		if leaf.Logical.Kind == schema.Int && !leaf.Logical.Signed {
			if neg {
				return nil, fmt.Errorf("filter: negative value %v for unsigned column %q", f.Value, f.Column)
			}
			c.order, c.u = orderUnsigned, u
		} else {
			if !neg && u > math.MaxInt64 {
				return nil, fmt.Errorf("filter: value %v overflows column %q", f.Value, f.Column)
			}
			c.order, c.i = orderSigned, i
		}
	case meta.TypeFloat, meta.TypeDouble:
		c.order = orderFloat
		switch v := f.Value.(type) {
		case float32:
			c.f = float64(v)
		case float64:
			c.f = v
		default:
			if !isInt {
				return nil, bad()
			}
			c.f = float64(i)
			if !neg {
				c.f = float64(u)
			}
		}
		if math.IsNaN(c.f) {
			return nil, fmt.Errorf("filter: NaN compares with nothing")
		}
	case meta.TypeByteArray, meta.TypeFixedLenByteArray:
		switch leaf.Logical.Kind {
		case schema.Decimal, schema.Float16, schema.Interval:
			return nil, fmt.Errorf("filter: %v column %q cannot be compared byte-wise", leaf.Logical, f.Column)
		}
		c.order = orderBytes
		switch v := f.Value.(type) {
		case string:
			c.b = []byte(v)
		case []byte:
			c.b = v
		default:
			return nil, bad()
		}
	default:
		return nil, fmt.Errorf("filter: %v column %q has no sort order", leaf.Physical, f.Column)
	}
	return c, nil
}

// intValue returns an integer of any Go integer type as int64 and uint64,
// and whether it is negative.
func intValue(v any) (i int64, u uint64, ok, neg bool) {
	switch x := v.(type) {
	case int:
		i = int64(x)
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case uint:
		return int64(x), uint64(x), true, false
	case uint8:
		return int64(x), uint64(x), true, false
	case uint16:
		return int64(x), uint64(x), true, false
	case uint32:
		return int64(x), uint64(x), true, false
	case uint64:
		return int64(x), x, true, false
	default:
		return 0, 0, false, false
	}
	return i, uint64(i), true, i < 0
}

// compare compares the PLAIN-encoded statistic b with the filter's value:
// -1, 0 or 1, and false when b cannot be read.
func (c *compiledFilter) compare(b []byte) (int, bool) {
	switch c.leaf.Physical {
	case meta.TypeBoolean:
		if len(b) < 1 {
			return 0, false
		}
		return cmp.Compare(int64(b[0]&1), c.i), true
	case meta.TypeInt32:
		if len(b) != 4 {
			return 0, false
		}
		x := binary.LittleEndian.Uint32(b)
		if c.order == orderUnsigned {
			return cmp.Compare(uint64(x), c.u), true
		}
		return cmp.Compare(int64(int32(x)), c.i), true
	case meta.TypeInt64:
		if len(b) != 8 {
			return 0, false
		}
		x := binary.LittleEndian.Uint64(b)
		if c.order == orderUnsigned {
			return cmp.Compare(x, c.u), true
		}
		return cmp.Compare(int64(x), c.i), true
	case meta.TypeFloat:
		if len(b) != 4 {
			return 0, false
		}
		return c.compareFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case meta.TypeDouble:
		if len(b) != 8 {
			return 0, false
		}
		return c.compareFloat(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return bytes.Compare(b, c.b), true
}

func (c *compiledFilter) compareFloat(x float64) (int, bool) {
	if math.IsNaN(x) {
		return 0, false
	}
	return cmp.Compare(x, c.f), true
}

// rangeMayMatch reports whether a column whose values lie in [min, max]
// may hold a match. Unreadable bounds may always match.
func (c *compiledFilter) rangeMayMatch(min, max []byte) bool {
	lo, okLo := c.compare(min)
	hi, okHi := c.compare(max)
	switch c.op {
	case Eq:
		return (!okLo || lo <= 0) && (!okHi || hi >= 0)
	case Lt:
		return !okLo || lo < 0
	case Le:
		return !okLo || lo <= 0
	case Gt:
		return !okHi || hi > 0
	case Ge:
		return !okHi || hi >= 0
	}
	return true
}

// trustsLegacyStats reports whether the deprecated min and max fields of
// Statistics, written with signed comparison, are valid for the column.
func (c *compiledFilter) trustsLegacyStats() bool {
	return c.order == orderSigned || c.order == orderFloat || c.order == orderBool
}

// chunkMayMatch judges a column chunk by its statistics and Bloom filter.
func (c *compiledFilter) chunkMayMatch(f *File, rowGroup int, cc *meta.ColumnChunk) bool {
	cm := cc.MetaData
	if st := cm.Statistics; st != nil {
		if st.NullCount != nil && *st.NullCount == cm.NumValues && cm.NumValues > 0 {
			return false // only nulls, which match nothing
		}
		min, max := st.MinValue, st.MaxValue
		if (min == nil || max == nil) && c.trustsLegacyStats() {
			min, max = st.Min, st.Max
		}
		if min != nil && max != nil && !c.rangeMayMatch(min, max) {
			return false
		}
	}
	if c.op == Eq && cm.BloomFilterOffset != nil {
		// A filter that cannot be read is no evidence: read the chunk.
		if bf, err := f.BloomFilter(rowGroup, c.leaf.Column); err == nil && bf != nil && !bf.Check(c.hash()) {
			return false
		}
	}
	return true
}

// hash returns the Bloom filter hash of the filter's value.
func (c *compiledFilter) hash() uint64 {
	switch c.leaf.Physical {
	case meta.TypeInt32:
		if c.order == orderUnsigned {
			return bloom.HashInt32(int32(uint32(c.u)))
		}
		return bloom.HashInt32(int32(c.i))
	case meta.TypeInt64:
		if c.order == orderUnsigned {
			return bloom.HashInt64(int64(c.u))
		}
		return bloom.HashInt64(c.i)
	case meta.TypeFloat:
		return bloom.HashFloat(float32(c.f))
	case meta.TypeDouble:
		return bloom.HashDouble(c.f)
	}
	return bloom.HashBytes(c.b)
}

// rowRange is a half-open range of rows of a row group.
type rowRange struct{ start, end int64 }

// pageRanges returns the rows of a row group that the column index rules
// out, from the pages that hold only nulls or whose bounds exclude the
// value. It returns nil when the chunk has no page index.
func (c *compiledFilter) pageRanges(f *File, rowGroup int, rows int64) ([]rowRange, error) {
	ci, err := f.ColumnIndex(rowGroup, c.leaf.Column)
	if err != nil || ci == nil {
		return nil, err
	}
	oi, err := f.OffsetIndex(rowGroup, c.leaf.Column)
	if err != nil || oi == nil {
		return nil, err
	}
	locs := oi.PageLocations
	if len(locs) != len(ci.NullPages) {
		return nil, fmt.Errorf("reader: %s: %w: %d pages in the offset index, %d in the column index",
			f.where(rowGroup, c.leaf.Column, "page index"), ErrCorrupt, len(locs), len(ci.NullPages))
	}
	var out []rowRange
	for i := range locs {
		if !ci.NullPages[i] && c.rangeMayMatch(ci.MinValues[i], ci.MaxValues[i]) {
			continue
		}
		r := rowRange{locs[i].FirstRowIndex, rows}
		if i+1 < len(locs) {
			r.end = locs[i+1].FirstRowIndex
		}
		if n := len(out); n > 0 && out[n-1].end == r.start {
			out[n-1].end = r.end
		} else {
			out = append(out, r)
		}
	}
	return out, nil
}

// match checks one value of the column.
func (c *compiledFilter) match(v Value) bool {
	var r int
	switch v.kind {
	case KindNull:
		return false
	case KindBool:
		r = cmp.Compare(int64(v.num), c.i)
	case KindInt32:
		if c.order == orderUnsigned {
			r = cmp.Compare(uint64(uint32(v.Int32())), c.u)
		} else {
			r = cmp.Compare(int64(v.Int32()), c.i)
		}
	case KindInt64:
		if c.order == orderUnsigned {
			r = cmp.Compare(uint64(v.Int64()), c.u)
		} else {
			r = cmp.Compare(v.Int64(), c.i)
		}
	case KindFloat, KindDouble:
		x := v.Double()
		if v.kind == KindFloat {
			x = float64(v.Float())
		}
		if math.IsNaN(x) {
			return false
		}
		r = cmp.Compare(x, c.f)
	case KindBytes:
		r = bytes.Compare(v.bytes, c.b)
	default:
		return false
	}
	switch c.op {
	case Eq:
		return r == 0
	case Lt:
		return r < 0
	case Le:
		return r <= 0
	case Gt:
		return r > 0
	}
	return r >= 0
}
