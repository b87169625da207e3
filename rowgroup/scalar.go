package rowgroup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// A ScalarConverter converts single JSON values to the values of one leaf
// column exactly as a JSONShredder writes them into that column, for a
// caller that needs a record's value of a column before (or without)
// shredding the record: the sink computes a table's partition values from
// them. It is not safe for concurrent use.
type ScalarConverter struct {
	s    JSONShredder
	plan *jsonPlan
	col  *Column
	out  []byte
}

// NewScalarConverter prepares the conversion of JSON values to leaf's
// column, with the options of the shredder it must agree with
// (LossyNumbers). Leaves of a JSON, INTERVAL or unknown type, whose values
// are not one scalar, are refused.
func NewScalarConverter(leaf *schema.Node, opts ...JSONOption) (*ScalarConverter, error) {
	if leaf == nil || !leaf.IsLeaf() {
		return nil, errors.New("rowgroup: a scalar conversion needs a leaf column")
	}
	c := &ScalarConverter{}
	for _, o := range opts {
		if err := o(&c.s.opts); err != nil {
			return nil, err
		}
	}
	col := newColumn(leaf)
	p := &jsonPlan{node: leaf, name: leaf.Name, kind: planLeaf, def: uint8(leaf.MaxDef), col: col, required: leaf.Repetition == schema.Required}
	if err := p.compileLeaf(); err != nil {
		return nil, err
	}
	if err := retimeLeaf(p, c.s.opts.units); err != nil {
		return nil, err
	}
	switch p.conv {
	case convJSON, convInterval, convNull:
		return nil, fmt.Errorf("field %s: %s values are not scalars", leaf.PathString(), p.typeName)
	}
	c.plan, c.col = p, col
	return c, nil
}

// Plain converts the scalar JSON token k with bytes b (a string
// unescaped, a number as written) and returns the value in Parquet's
// PLAIN encoding of the leaf's physical type (a BYTE_ARRAY without its
// length prefix), the form of a column's statistics. The result is valid
// until the next call. A value the shredder would refuse is an error, the
// shredder's.
func (c *ScalarConverter) Plain(k jsonscan.Kind, b []byte) ([]byte, error) {
	col := c.col
	col.Bool, col.Int32, col.Int64, col.Int96 = col.Bool[:0], col.Int32[:0], col.Int64[:0], col.Int96[:0]
	col.Float, col.Double, col.Bytes = col.Float[:0], col.Double[:0], col.Bytes[:0]
	col.Rep, col.Def, col.levels, col.values = col.Rep[:0], col.Def[:0], 0, 0
	if col.byteArray {
		col.Offsets = col.Offsets[:1]
	}
	if err := c.s.leaf(c.plan, 0, k, b, false); err != nil {
		return nil, err
	}
	out := c.out[:0]
	switch col.Leaf.Physical {
	case meta.TypeBoolean:
		v := byte(0)
		if col.Bool[0] {
			v = 1
		}
		out = append(out, v)
	case meta.TypeInt32:
		out = binary.LittleEndian.AppendUint32(out, uint32(col.Int32[0]))
	case meta.TypeInt64:
		out = binary.LittleEndian.AppendUint64(out, uint64(col.Int64[0]))
	case meta.TypeInt96:
		out = append(out, col.Int96[0][:]...)
	case meta.TypeFloat:
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(col.Float[0]))
	case meta.TypeDouble:
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(col.Double[0]))
	default:
		out = append(out, col.Bytes...)
	}
	c.out = out
	return out, nil
}
