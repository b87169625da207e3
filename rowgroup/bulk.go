package rowgroup

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
)

// Bulk appends: the entries of a decoded page at once, for a caller that
// copies columns from a file rather than shredding records (a merge of
// files). A page's levels go in with AppendLevels and its values with the
// one of AppendBools ... AppendFixed that matches the leaf's physical type;
// the rows they complete are counted with EndRows once every column has
// them. RowGroup.Check (which the writer runs) verifies that the values
// match the levels and that every column holds the same rows.

// AppendLevels appends n level slots: rep and def hold their repetition
// and definition levels, each nil when the leaf's maximum level is 0 and n
// long otherwise. It returns the number of slots that hold a value (those
// at the maximum definition level), which the caller appends next. Levels
// above the leaf's maximum are refused, and nothing is appended then.
func (c *Column) AppendLevels(rep, def []uint8, n int) (values int, err error) {
	if n < 0 {
		return 0, fmt.Errorf("column %s: %d levels", c.Leaf.PathString(), n)
	}
	if (c.maxRep > 0 && len(rep) != n) || (c.maxRep == 0 && len(rep) != 0) {
		return 0, fmt.Errorf("column %s: %d repetition levels for %d slots (maximum level %d)", c.Leaf.PathString(), len(rep), n, c.maxRep)
	}
	if (c.maxDef > 0 && len(def) != n) || (c.maxDef == 0 && len(def) != 0) {
		return 0, fmt.Errorf("column %s: %d definition levels for %d slots (maximum level %d)", c.Leaf.PathString(), len(def), n, c.maxDef)
	}
	for i, r := range rep {
		if r > c.maxRep {
			return 0, fmt.Errorf("column %s: repetition level %d of slot %d above the maximum %d", c.Leaf.PathString(), r, i, c.maxRep)
		}
	}
	values = n
	if c.maxDef > 0 {
		values = 0
		for i, d := range def {
			switch {
			case d == c.maxDef:
				values++
			case d > c.maxDef:
				return 0, fmt.Errorf("column %s: definition level %d of slot %d above the maximum %d", c.Leaf.PathString(), d, i, c.maxDef)
			}
		}
	}
	if c.maxRep > 0 {
		c.Rep = append(c.Rep, rep...)
	}
	if c.maxDef > 0 {
		c.Def = append(c.Def, def...)
	}
	c.levels += n
	c.values += values
	return values, nil
}

// AppendBools appends BOOLEAN values after their levels.
func (c *Column) AppendBools(v []bool) { c.Bool = append(c.Bool, v...) }

// AppendInt32s appends INT32 values after their levels.
func (c *Column) AppendInt32s(v []int32) { c.Int32 = append(c.Int32, v...) }

// AppendInt64s appends INT64 values after their levels.
func (c *Column) AppendInt64s(v []int64) { c.Int64 = append(c.Int64, v...) }

// AppendInt96s appends INT96 values after their levels.
func (c *Column) AppendInt96s(v [][12]byte) { c.Int96 = append(c.Int96, v...) }

// AppendFloats appends FLOAT values after their levels.
func (c *Column) AppendFloats(v []float32) { c.Float = append(c.Float, v...) }

// AppendDoubles appends DOUBLE values after their levels.
func (c *Column) AppendDoubles(v []float64) { c.Double = append(c.Double, v...) }

// AppendByteArrays appends BYTE_ARRAY values after their levels: value i
// is data[offsets[i]-offsets[0]:offsets[i+1]-offsets[0]], so offsets holds
// one more entry than there are values and data what they span. The
// offsets must not decrease and must stay within data.
func (c *Column) AppendByteArrays(data []byte, offsets []uint32) error {
	if c.Leaf.Physical != meta.TypeByteArray {
		return fmt.Errorf("column %s: byte arrays appended to a %s column", c.Leaf.PathString(), c.Leaf.Physical)
	}
	if len(offsets) == 0 {
		return nil
	}
	base := offsets[0]
	prev := base
	for _, o := range offsets[1:] {
		if o < prev {
			return fmt.Errorf("column %s: byte array offsets decrease (%d after %d)", c.Leaf.PathString(), o, prev)
		}
		prev = o
	}
	if int64(prev-base) > int64(len(data)) {
		return fmt.Errorf("column %s: byte array offsets span %d bytes, the data holds %d", c.Leaf.PathString(), prev-base, len(data))
	}
	start := uint32(len(c.Bytes))
	if uint64(start)+uint64(prev-base) > 1<<32-1 {
		return fmt.Errorf("column %s: more than 4 GiB of byte arrays in one row group", c.Leaf.PathString())
	}
	c.Bytes = append(c.Bytes, data[:prev-base]...)
	shift := start - base // modular: o - base + start
	for _, o := range offsets[1:] {
		c.Offsets = append(c.Offsets, o+shift)
	}
	return nil
}

// AppendFixed appends FIXED_LEN_BYTE_ARRAY values, back to back, after
// their levels.
func (c *Column) AppendFixed(data []byte) { c.Bytes = append(c.Bytes, data...) }

// EndRows counts n complete rows: the rows that bulk appends added to
// every column.
func (g *RowGroup) EndRows(n int) { g.rows += n }
