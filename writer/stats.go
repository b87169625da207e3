package writer

import (
	"bytes"
	"encoding/binary"
	"math"
	"unicode/utf8"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// sortOrder is how a column's min and max are defined (LogicalTypes.md,
// "Sort Order").
type sortOrder uint8

const (
	orderNone        sortOrder = iota // INT96, INTERVAL: no min/max
	orderSigned                       // signed integers, booleans
	orderUnsigned                     // unsigned INTEGER annotations
	orderFloat                        // IEEE 754, NaN excluded
	orderFloat16                      // FIXED[2] FLOAT16, NaN excluded
	orderBytes                        // unsigned lexicographic
	orderSignedBytes                  // big-endian two's complement DECIMAL
)

func orderOf(n *schema.Node) sortOrder {
	l := n.Logical
	switch n.Physical {
	case meta.TypeBoolean:
		return orderSigned
	case meta.TypeInt32, meta.TypeInt64:
		if l.Kind == schema.Int && !l.Signed {
			return orderUnsigned
		}
		return orderSigned
	case meta.TypeFloat, meta.TypeDouble:
		return orderFloat
	case meta.TypeByteArray:
		if l.Kind == schema.Decimal {
			return orderSignedBytes
		}
		return orderBytes
	case meta.TypeFixedLenByteArray:
		switch l.Kind {
		case schema.Decimal:
			return orderSignedBytes
		case schema.Float16:
			return orderFloat16
		case schema.Interval:
			return orderNone
		}
		return orderBytes
	}
	return orderNone
}

// bounds are a min and max in PLAIN encoding (byte arrays without their
// length prefix), as Statistics and ColumnIndex store them.
type bounds struct {
	min, max           []byte
	ok                 bool
	minExact, maxExact bool
	nans               int64 // NaN values, counted for FLOAT, DOUBLE and FLOAT16
	// borrowed: min and max are the column's own bytes, not b's storage,
	// and must not be appended to.
	borrowed bool
}

// borrowBounds is the combined length of a byte-array min and max above
// which pageBounds points into the column instead of copying them: a page
// of one 50 MB value would otherwise copy it twice, only for truncated to
// keep 64 bytes of each.
const borrowBounds = 64 << 10

// empty resets b to no bounds, keeping its storage unless it is borrowed.
func (b bounds) empty() bounds {
	if b.borrowed {
		b.min, b.max = nil, nil
	}
	return bounds{min: b.min[:0], max: b.max[:0], minExact: true, maxExact: true}
}

// countsNaN reports whether a column's statistics carry a nan_count.
func countsNaN(order sortOrder) bool { return order == orderFloat || order == orderFloat16 }

func float32bits(f float32) uint32 { return math.Float32bits(f) }
func float64bits(f float64) uint64 { return math.Float64bits(f) }

// pageBounds returns the min and max of values v0..v1 of c, or ok=false
// when there are none to report (no values, only NaNs, or no order).
// The returned slices reuse b's storage, or, for long byte arrays, are
// the column's own bytes (borrowed), valid while c is.
func pageBounds(b bounds, order sortOrder, c *rowgroup.Column, v0, v1 int) bounds {
	b = b.empty()
	if order == orderNone || v0 == v1 {
		return b
	}
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		lo, hi := true, false
		for _, v := range c.Bool[v0:v1] {
			lo = lo && v
			hi = hi || v
		}
		b.min = append(b.min, boolByte(lo))
		b.max = append(b.max, boolByte(hi))
	case meta.TypeInt32:
		lo, hi := intBounds[int32, uint32](c.Int32[v0:v1], order == orderUnsigned)
		b.min = binary.LittleEndian.AppendUint32(b.min, uint32(lo))
		b.max = binary.LittleEndian.AppendUint32(b.max, uint32(hi))
	case meta.TypeInt64:
		lo, hi := intBounds[int64, uint64](c.Int64[v0:v1], order == orderUnsigned)
		b.min = binary.LittleEndian.AppendUint64(b.min, uint64(lo))
		b.max = binary.LittleEndian.AppendUint64(b.max, uint64(hi))
	case meta.TypeFloat:
		lo, hi, nans, found := floatBounds(c.Float[v0:v1])
		b.nans += nans
		if !found {
			return b
		}
		// A zero bound is written as -0.0 (min) and +0.0 (max), so that
		// readers comparing either zero against it get the right answer.
		if lo == 0 {
			lo = float32(math.Copysign(0, -1))
		}
		if hi == 0 {
			hi = 0
		}
		b.min = binary.LittleEndian.AppendUint32(b.min, math.Float32bits(lo))
		b.max = binary.LittleEndian.AppendUint32(b.max, math.Float32bits(hi))
	case meta.TypeDouble:
		lo, hi, nans, found := floatBounds(c.Double[v0:v1])
		b.nans += nans
		if !found {
			return b
		}
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		b.min = binary.LittleEndian.AppendUint64(b.min, math.Float64bits(lo))
		b.max = binary.LittleEndian.AppendUint64(b.max, math.Float64bits(hi))
	case meta.TypeByteArray, meta.TypeFixedLenByteArray:
		w := int(c.Leaf.Length)
		value := func(i int) []byte {
			if c.Leaf.Physical == meta.TypeFixedLenByteArray {
				return c.Bytes[i*w : (i+1)*w]
			}
			return c.Bytes[c.Offsets[i]:c.Offsets[i+1]]
		}
		var lo, hi []byte
		found := false
		if order == orderBytes && c.Leaf.Physical == meta.TypeByteArray {
			// The common case, without the per-value dispatch below, and
			// comparing values by their first 8 bytes as integers first:
			// only a value that shares them with a bound is compared in
			// full, and bytes.Compare, a call per value, did most of the
			// work here.
			lo = c.Bytes[c.Offsets[v0]:c.Offsets[v0+1]]
			hi = lo
			plo := prefix8(c.Bytes, c.Offsets[v0], c.Offsets[v0+1])
			phi := plo
			for i := v0 + 1; i < v1; i++ {
				start, end := c.Offsets[i], c.Offsets[i+1]
				p := prefix8(c.Bytes, start, end)
				if p < plo || p == plo && bytes.Compare(c.Bytes[start:end], lo) < 0 {
					lo, plo = c.Bytes[start:end], p
				} else if p > phi || p == phi && bytes.Compare(c.Bytes[start:end], hi) > 0 {
					hi, phi = c.Bytes[start:end], p
				}
			}
			v0, found = v1, true
		}
		for i := v0; i < v1; i++ {
			v := value(i)
			if order == orderFloat16 && isFloat16NaN(v) {
				b.nans++
				continue
			}
			if !found {
				lo, hi, found = v, v, true
				continue
			}
			if compareValues(order, c.Leaf.Physical, v, lo) < 0 {
				lo = v
			}
			if compareValues(order, c.Leaf.Physical, v, hi) > 0 {
				hi = v
			}
		}
		if !found {
			return b
		}
		if len(lo)+len(hi) > borrowBounds && order != orderFloat16 {
			b.min, b.max, b.borrowed, b.ok = lo, hi, true, true
			return b
		}
		b.min = append(b.min, lo...)
		b.max = append(b.max, hi...)
		if order == orderFloat16 {
			if float16Zero(b.min) {
				b.min[0], b.min[1] = 0x00, 0x80
			}
			if float16Zero(b.max) {
				b.max[0], b.max[1] = 0x00, 0x00
			}
		}
	default:
		return b
	}
	b.ok = true
	return b
}

// prefix8 is the first 8 bytes of value buf[start:end] as a big-endian
// integer, padded with zeros: when the prefixes of two values differ, they
// order the values as bytes.Compare does (a value that is padded is, up to
// there, a prefix of the other, and so the lesser). A shorter value is
// read as 8 bytes and masked, while the buffer holds 8.
func prefix8(buf []byte, start, end uint32) uint64 {
	n := end - start
	if int(start)+8 <= len(buf) {
		p := binary.BigEndian.Uint64(buf[start:])
		if n < 8 {
			p &^= ^uint64(0) >> (8 * n)
		}
		return p
	}
	var p uint64
	for i, b := range buf[start:min(end, start+8)] {
		p |= uint64(b) << (56 - 8*i)
	}
	return p
}

// intBounds returns the least and greatest of vs (not empty), compared as
// signed integers or as their unsigned bit patterns U.
func intBounds[T int32 | int64, U uint32 | uint64](vs []T, unsigned bool) (lo, hi T) {
	lo, hi = vs[0], vs[0]
	if unsigned {
		for _, v := range vs[1:] {
			if U(v) < U(lo) {
				lo = v
			}
			if U(v) > U(hi) {
				hi = v
			}
		}
		return lo, hi
	}
	for _, v := range vs[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// floatBounds returns the least and greatest of vs that are not NaN
// (found is false when there is none), and how many NaNs there are. Of
// equal zeros, either may be returned: the caller writes a zero bound's
// sign itself. Plain comparisons, which a NaN never passes, cost less
// here than min and max, which order signed zeros and NaNs.
func floatBounds[T float32 | float64](vs []T) (lo, hi T, nans int64, found bool) {
	i := 0
	for i < len(vs) && vs[i] != vs[i] {
		i++
	}
	nans = int64(i)
	if i == len(vs) {
		return 0, 0, nans, false
	}
	lo, hi = vs[i], vs[i]
	for _, v := range vs[i+1:] {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
		if v != v {
			nans++
		}
	}
	return lo, hi, nans, true
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// compareValues orders two PLAIN-encoded values of one column.
func compareValues(order sortOrder, physical meta.Type, a, b []byte) int {
	switch order {
	case orderBytes:
		return bytes.Compare(a, b)
	case orderSignedBytes:
		return compareSignedBigEndian(a, b)
	case orderFloat16:
		return cmpFloat(float16ToFloat32(a), float16ToFloat32(b))
	case orderFloat:
		if physical == meta.TypeFloat {
			return cmpFloat(math.Float32frombits(binary.LittleEndian.Uint32(a)), math.Float32frombits(binary.LittleEndian.Uint32(b)))
		}
		return cmpFloat(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case orderUnsigned:
		if physical == meta.TypeInt32 {
			return cmpOrdered(binary.LittleEndian.Uint32(a), binary.LittleEndian.Uint32(b))
		}
		return cmpOrdered(binary.LittleEndian.Uint64(a), binary.LittleEndian.Uint64(b))
	case orderSigned:
		switch physical {
		case meta.TypeBoolean:
			return cmpOrdered(a[0], b[0])
		case meta.TypeInt32:
			return cmpOrdered(int32(binary.LittleEndian.Uint32(a)), int32(binary.LittleEndian.Uint32(b)))
		}
		return cmpOrdered(int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b)))
	}
	return 0
}

func cmpOrdered[T ~int8 | ~uint8 | ~int32 | ~uint32 | ~int64 | ~uint64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat[T float32 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareSignedBigEndian compares two's complement big-endian integers of
// any lengths, as DECIMAL on BYTE_ARRAY and FIXED is ordered.
func compareSignedBigEndian(a, b []byte) int {
	neg := func(v []byte) bool { return len(v) > 0 && v[0]&0x80 != 0 }
	na, nb := neg(a), neg(b)
	if na != nb {
		if na {
			return -1
		}
		return 1
	}
	ext := byte(0)
	if na {
		ext = 0xFF
	}
	for n := max(len(a), len(b)); n > 0; n-- {
		x, y := ext, ext
		if i := len(a) - n; i >= 0 {
			x = a[i]
		}
		if i := len(b) - n; i >= 0 {
			y = b[i]
		}
		if x != y {
			return cmpOrdered(x, y)
		}
	}
	return 0
}

func isFloat16NaN(v []byte) bool {
	h := binary.LittleEndian.Uint16(v)
	return h&0x7C00 == 0x7C00 && h&0x03FF != 0
}

func float16Zero(v []byte) bool { return binary.LittleEndian.Uint16(v)&0x7FFF == 0 }

func float16ToFloat32(v []byte) float32 {
	h := binary.LittleEndian.Uint16(v)
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1F
	frac := uint32(h & 0x3FF)
	switch exp {
	case 0:
		f := float32(frac) / 1024 / 16384 // subnormal: frac * 2^-24
		if sign != 0 {
			f = -f
		}
		return f
	case 0x1F:
		return math.Float32frombits(sign | 0x7F800000 | frac<<13)
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

// merge widens acc to include b.
func (acc *bounds) merge(order sortOrder, physical meta.Type, b bounds) {
	acc.nans += b.nans
	if !b.ok {
		return
	}
	if !acc.ok {
		acc.min = append(acc.min[:0], b.min...)
		acc.max = append(acc.max[:0], b.max...)
		acc.ok, acc.minExact, acc.maxExact = true, b.minExact, b.maxExact
		return
	}
	if compareValues(order, physical, b.min, acc.min) < 0 {
		acc.min, acc.minExact = append(acc.min[:0], b.min...), b.minExact
	}
	if compareValues(order, physical, b.max, acc.max) > 0 {
		acc.max, acc.maxExact = append(acc.max[:0], b.max...), b.maxExact
	}
}

// truncated returns b with binary bounds cut to n bytes: the min to a
// prefix, the max to the shortest prefix incremented past every value it
// stands for. Only unsigned byte-ordered BYTE_ARRAY columns are cut; text
// is cut on character boundaries so the bounds stay valid UTF-8.
func truncated(b bounds, n int, text bool) bounds {
	if !b.ok || n <= 0 {
		return b
	}
	if len(b.min) > n {
		cut := n
		if text {
			for cut > 0 && !utf8.RuneStart(b.min[cut]) {
				cut--
			}
		}
		b.min, b.minExact = b.min[:cut], false
	}
	if len(b.max) > n {
		if up, ok := incrementPrefix(b.max, n, text); ok {
			b.max, b.maxExact = up, false
		}
	}
	return b
}

func incrementPrefix(v []byte, n int, text bool) ([]byte, bool) {
	if !text || !utf8.Valid(v) {
		p := append([]byte(nil), v[:n]...)
		for i := len(p) - 1; i >= 0; i-- {
			if p[i] != 0xFF {
				p[i]++
				return p[:i+1], true
			}
		}
		return nil, false
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	p := append([]byte(nil), v[:cut]...)
	for len(p) > 0 {
		r, size := utf8.DecodeLastRune(p)
		p = p[:len(p)-size]
		if r == utf8.MaxRune {
			continue
		}
		r++
		if r >= 0xD800 && r <= 0xDFFF {
			r = 0xE000
		}
		if len(p)+utf8.RuneLen(r) > n {
			continue
		}
		return utf8.AppendRune(p, r), true
	}
	return nil, false
}

func isText(n *schema.Node) bool {
	switch n.Logical.Kind {
	case schema.String, schema.Enum, schema.JSON:
		return true
	}
	return false
}
