package rowgroup

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// Column buffers one leaf column of a row group: its repetition and
// definition levels, one entry per level slot, and the non-null values in
// the typed slice that matches the leaf's physical type.
//
// Levels are only stored when the leaf can have them: Rep is empty when
// MaxRep is 0 and Def is empty when MaxDef is 0. A required, non-repeated
// leaf therefore holds one value per row and nothing else.
//
// The buffers are for reading: Rep may be a view of another column's
// equal levels (leaves under the same list share them after a huge
// record), so only the column's methods may change them.
type Column struct {
	Leaf *schema.Node

	Rep []uint8
	Def []uint8

	Bool    []bool
	Int32   []int32
	Int64   []int64
	Int96   [][12]byte
	Float   []float32
	Double  []float64
	Bytes   []byte   // BYTE_ARRAY values concatenated, or FIXED_LEN_BYTE_ARRAY values back to back
	Offsets []uint32 // BYTE_ARRAY only: value i is Bytes[Offsets[i]:Offsets[i+1]]

	// repOf is the column whose repetition levels Rep may be a view of
	// (see shareRep), or nil.
	repOf *Column

	maxDef    uint8
	maxRep    uint8
	byteArray bool // Leaf.Physical == BYTE_ARRAY: values have offsets
	levels    int  // level slots, valid even when Def and Rep are not stored
	values    int  // non-null values
}

func newColumn(leaf *schema.Node) *Column {
	c := &Column{Leaf: leaf, maxDef: uint8(leaf.MaxDef), maxRep: uint8(leaf.MaxRep), byteArray: leaf.Physical == meta.TypeByteArray}
	if c.byteArray {
		c.Offsets = []uint32{0}
	}
	return c
}

// MaxDef is the leaf's maximum definition level.
func (c *Column) MaxDef() uint8 { return c.maxDef }

// MaxRep is the leaf's maximum repetition level.
func (c *Column) MaxRep() uint8 { return c.maxRep }

// NumLevels is the number of level slots: values plus nulls and empty lists.
func (c *Column) NumLevels() int { return c.levels }

// NumValues is the number of non-null values.
func (c *Column) NumValues() int { return c.values }

// Null appends a slot without a value, defined up to level def (< MaxDef).
func (c *Column) Null(rep, def uint8) {
	c.levels++
	if c.maxRep > 0 {
		c.Rep = append(c.Rep, rep)
	}
	if c.maxDef > 0 {
		c.Def = append(c.Def, def)
	}
}

func (c *Column) value(rep uint8) {
	c.levels++
	c.values++
	if c.maxRep > 0 {
		c.Rep = append(c.Rep, rep)
	}
	if c.maxDef > 0 {
		c.Def = append(c.Def, c.maxDef)
	}
}

// AppendBool appends a BOOLEAN value at repetition level rep.
func (c *Column) AppendBool(rep uint8, v bool) { c.value(rep); c.Bool = append(c.Bool, v) }

// AppendInt32 appends an INT32 value at repetition level rep.
func (c *Column) AppendInt32(rep uint8, v int32) { c.value(rep); c.Int32 = append(c.Int32, v) }

// AppendInt64 appends an INT64 value at repetition level rep.
func (c *Column) AppendInt64(rep uint8, v int64) { c.value(rep); c.Int64 = append(c.Int64, v) }

// AppendInt96 appends an INT96 value at repetition level rep.
func (c *Column) AppendInt96(rep uint8, v [12]byte) { c.value(rep); c.Int96 = append(c.Int96, v) }

// AppendFloat appends a FLOAT value at repetition level rep.
func (c *Column) AppendFloat(rep uint8, v float32) { c.value(rep); c.Float = append(c.Float, v) }

// AppendDouble appends a DOUBLE value at repetition level rep.
func (c *Column) AppendDouble(rep uint8, v float64) { c.value(rep); c.Double = append(c.Double, v) }

// AppendBytes appends a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value at
// repetition level rep. For fixed-length leaves len(v) must equal the
// leaf's length; the shredders check that before calling.
func (c *Column) AppendBytes(rep uint8, v []byte) {
	c.value(rep)
	c.Bytes = append(c.Bytes, v...)
	if c.byteArray {
		c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
	}
}

// appendText is AppendBytes for a BYTE_ARRAY leaf, which the caller
// knows it is: the shredders' string columns.
func (c *Column) appendText(rep uint8, v []byte) {
	c.value(rep)
	c.Bytes = append(c.Bytes, v...)
	c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
}

// appendString is AppendBytes for a string, without converting it.
func (c *Column) appendString(rep uint8, v string) {
	c.value(rep)
	c.Bytes = append(c.Bytes, v...)
	if c.byteArray {
		c.Offsets = append(c.Offsets, uint32(len(c.Bytes)))
	}
}

// ByteArray returns BYTE_ARRAY value i (an index into the non-null values).
func (c *Column) ByteArray(i int) []byte { return c.Bytes[c.Offsets[i]:c.Offsets[i+1]] }

// size estimates the bytes the column holds in memory.
func (c *Column) size() int {
	return len(c.Rep) + len(c.Def) + len(c.Bool) + 4*len(c.Int32) + 8*len(c.Int64) +
		12*len(c.Int96) + 4*len(c.Float) + 8*len(c.Double) + len(c.Bytes) + 4*len(c.Offsets)
}

// capacity is the bytes the column's buffers hold, by capacity; levels
// that are a view of another column's are counted there.
func (c *Column) capacity() int {
	rep := cap(c.Rep)
	if c.sharesRep() {
		rep = 0
	}
	return rep + cap(c.Def) + cap(c.Bool) + 4*cap(c.Int32) + 8*cap(c.Int64) +
		12*cap(c.Int96) + 4*cap(c.Float) + 8*cap(c.Double) + cap(c.Bytes) + 4*cap(c.Offsets)
}

// reserve grows each buffer to f times its length.
func (c *Column) reserve(f float64) {
	c.Rep = growBy(c.Rep, f)
	c.Def = growBy(c.Def, f)
	c.Bool = growBy(c.Bool, f)
	c.Int32 = growBy(c.Int32, f)
	c.Int64 = growBy(c.Int64, f)
	c.Int96 = growBy(c.Int96, f)
	c.Float = growBy(c.Float, f)
	c.Double = growBy(c.Double, f)
	c.Bytes = growBy(c.Bytes, f)
	c.Offsets = growBy(c.Offsets, f)
}

func growBy[T any](s []T, f float64) []T {
	if len(s) == 0 {
		return s
	}
	return slices.Grow(s, int(float64(len(s))*f)-len(s))
}

// extrapolate grows the column's buffers for a record of which the part
// shredded since m is 1/f: each buffer gets room for f times what the
// record has added to it, with a little margin. A huge record of many
// small values would otherwise grow them by append, 1.25 times at a
// time: every step copies, holds the old and the new buffer at once,
// leaves the old one as garbage, and the last leaves up to a quarter of
// the buffer unused; one step to about the right size does neither.
func (c *Column) extrapolate(m mark, f float64) {
	want := func(start, now int) int {
		return start + int(float64(now-start)*f)
	}
	if c.maxRep > 0 {
		c.Rep = growTo(c.Rep, want(m.rep, len(c.Rep)))
	}
	if c.maxDef > 0 {
		c.Def = growTo(c.Def, want(m.def, len(c.Def)))
	}
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		c.Bool = growTo(c.Bool, want(m.values, len(c.Bool)))
	case meta.TypeInt32:
		c.Int32 = growTo(c.Int32, want(m.values, len(c.Int32)))
	case meta.TypeInt64:
		c.Int64 = growTo(c.Int64, want(m.values, len(c.Int64)))
	case meta.TypeInt96:
		c.Int96 = growTo(c.Int96, want(m.values, len(c.Int96)))
	case meta.TypeFloat:
		c.Float = growTo(c.Float, want(m.values, len(c.Float)))
	case meta.TypeDouble:
		c.Double = growTo(c.Double, want(m.values, len(c.Double)))
	case meta.TypeByteArray:
		c.Offsets = growTo(c.Offsets, want(m.values+1, len(c.Offsets)))
		c.Bytes = growTo(c.Bytes, want(m.bytes, len(c.Bytes)))
	case meta.TypeFixedLenByteArray:
		c.Bytes = growTo(c.Bytes, want(m.bytes, len(c.Bytes)))
	}
}

// trim lets go of the room extrapolate reserved beyond what a record
// used, when it is a large part of a large buffer: a record that is
// uniform at its start and not later is reserved too much.
func (c *Column) trim() {
	c.Rep = trimmed(c.Rep)
	c.Def = trimmed(c.Def)
	c.Bool = trimmed(c.Bool)
	c.Int32 = trimmed(c.Int32)
	c.Int64 = trimmed(c.Int64)
	c.Int96 = trimmed(c.Int96)
	c.Float = trimmed(c.Float)
	c.Double = trimmed(c.Double)
	c.Bytes = trimmed(c.Bytes)
	c.Offsets = trimmed(c.Offsets)
}

// shareRep makes c's repetition levels a view of src's when they are
// equal, as they are for leaves under the same innermost list: a huge
// record of many small values in a list then holds its repetition levels
// once, not once per leaf. The view's capacity ends at its length, so
// that appending to c copies it rather than writing into src's buffer,
// and rollback copies what it keeps.
func (c *Column) shareRep(src *Column) {
	if c.sharesRep() || len(c.Rep) != len(src.Rep) || !bytes.Equal(c.Rep, src.Rep) {
		return
	}
	n := len(src.Rep)
	c.Rep, c.repOf = src.Rep[:n:n], src
}

// sharesRep reports whether Rep is a view of another column's buffer.
func (c *Column) sharesRep() bool {
	return c.repOf != nil && cap(c.Rep) > 0 && unsafe.SliceData(c.Rep) == unsafe.SliceData(c.repOf.Rep)
}

// growTo returns s with a capacity of at least n: when it must grow, to
// n and a 32nd rather than by append's rounding (up to a quarter more for
// large slices). The margin is for an estimate that creeps up as more of
// the record is seen, which would otherwise copy the buffer at every
// look; and growing by at least a quarter, as append does, bounds the
// copies when the estimate keeps rising.
func growTo[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s
	}
	t := make([]T, len(s), max(n+n/32, cap(s)+cap(s)/4))
	copy(t, s)
	return t
}

// trimmed returns s in a buffer of its length when over an eighth of its
// capacity, and over 64 KiB, is unused.
func trimmed[T any](s []T) []T {
	var zero T
	free := (cap(s) - len(s)) * int(unsafe.Sizeof(zero))
	if free <= 64<<10 || cap(s)-len(s) <= cap(s)/8 {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

// mark is a column's length, to roll a half-written record back.
type mark struct{ levels, values, rep, def, bytes int }

func (c *Column) mark() mark {
	return mark{c.levels, c.values, len(c.Rep), len(c.Def), len(c.Bytes)}
}

func (c *Column) rollback(m mark) {
	c.levels, c.values = m.levels, m.values
	if m.rep < len(c.Rep) && c.sharesRep() {
		// The levels past m.rep would be written again, by both columns.
		c.Rep = slices.Clone(c.Rep[:m.rep])
	}
	c.Rep, c.Def, c.Bytes = c.Rep[:m.rep], c.Def[:m.def], c.Bytes[:m.bytes]
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		c.Bool = c.Bool[:m.values]
	case meta.TypeInt32:
		c.Int32 = c.Int32[:m.values]
	case meta.TypeInt64:
		c.Int64 = c.Int64[:m.values]
	case meta.TypeInt96:
		c.Int96 = c.Int96[:m.values]
	case meta.TypeFloat:
		c.Float = c.Float[:m.values]
	case meta.TypeDouble:
		c.Double = c.Double[:m.values]
	case meta.TypeByteArray:
		c.Offsets = c.Offsets[:m.values+1]
	}
}

func (c *Column) reset() {
	c.rollback(mark{})
}

// release empties the column and drops its buffers.
func (c *Column) release() {
	fresh := newColumn(c.Leaf)
	*c = *fresh
}

// check verifies the column's invariants; tests and the writer use it to
// catch a shredder bug before it becomes a corrupt file.
func (c *Column) check() error {
	if c.maxRep > 0 && len(c.Rep) != c.levels {
		return fmt.Errorf("column %s: %d repetition levels for %d slots", c.Leaf.PathString(), len(c.Rep), c.levels)
	}
	if c.maxDef > 0 && len(c.Def) != c.levels {
		return fmt.Errorf("column %s: %d definition levels for %d slots", c.Leaf.PathString(), len(c.Def), c.levels)
	}
	if c.maxDef == 0 && c.values != c.levels {
		return fmt.Errorf("column %s: %d values for %d slots of a required column", c.Leaf.PathString(), c.values, c.levels)
	}
	n := 0
	switch c.Leaf.Physical {
	case meta.TypeBoolean:
		n = len(c.Bool)
	case meta.TypeInt32:
		n = len(c.Int32)
	case meta.TypeInt64:
		n = len(c.Int64)
	case meta.TypeInt96:
		n = len(c.Int96)
	case meta.TypeFloat:
		n = len(c.Float)
	case meta.TypeDouble:
		n = len(c.Double)
	case meta.TypeByteArray:
		n = len(c.Offsets) - 1
	case meta.TypeFixedLenByteArray:
		if c.Leaf.Length <= 0 || len(c.Bytes)%int(c.Leaf.Length) != 0 {
			return fmt.Errorf("column %s: %d bytes of fixed values of width %d", c.Leaf.PathString(), len(c.Bytes), c.Leaf.Length)
		}
		n = len(c.Bytes) / int(c.Leaf.Length)
	}
	if n != c.values {
		return fmt.Errorf("column %s: %d values stored, %d counted", c.Leaf.PathString(), n, c.values)
	}
	if c.byteArray && isText(c.Leaf.Logical.Kind) {
		if i := invalidUTF8(c.Bytes, c.Offsets); i >= 0 {
			return fmt.Errorf("column %s: value %d is not valid UTF-8, which a %s column must hold", c.Leaf.PathString(), i, c.Leaf.Logical.Kind)
		}
	}
	return nil
}

// isText reports whether a BYTE_ARRAY of logical type k holds UTF-8 text.
// Readers refuse a file (arrow) or every query on the column (DuckDB) when
// such a column holds anything else, so no shredder may put it there.
func isText(k schema.Kind) bool {
	return k == schema.String || k == schema.JSON || k == schema.Enum
}

// invalidUTF8 returns the index of the first value of data (cut at
// offsets) that is not valid UTF-8, or -1. Most text is ASCII, so the
// values are first checked together for a byte above 0x7f, eight bytes at
// a time; only then value by value, since a sequence cut by a value's end
// is valid when two values are read as one.
func invalidUTF8(data []byte, offsets []uint32) int {
	if isASCII(data) {
		return -1
	}
	for i := 0; i+1 < len(offsets); i++ {
		if !utf8.Valid(data[offsets[i]:offsets[i+1]]) {
			return i
		}
	}
	return -1
}

func isASCII(b []byte) bool {
	const high = 0x8080808080808080
	// Four words a step, their high bits tested together: text is
	// checked at memory speed, not a word's branch at a time.
	for len(b) >= 32 {
		w := binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
		if w&high != 0 {
			return false
		}
		b = b[32:]
	}
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&high != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
