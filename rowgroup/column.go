package rowgroup

import (
	"fmt"
	"slices"

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

// capacity is the bytes the column's buffers hold, by capacity.
func (c *Column) capacity() int {
	return cap(c.Rep) + cap(c.Def) + cap(c.Bool) + 4*cap(c.Int32) + 8*cap(c.Int64) +
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

// mark is a column's length, to roll a half-written record back.
type mark struct{ levels, values, rep, def, bytes int }

func (c *Column) mark() mark {
	return mark{c.levels, c.values, len(c.Rep), len(c.Def), len(c.Bytes)}
}

func (c *Column) rollback(m mark) {
	c.levels, c.values = m.levels, m.values
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
	return nil
}
