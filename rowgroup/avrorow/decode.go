package avrorow

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/pqsink/pqsink/rowgroup"
)

// maxEmptyItems bounds the items of one array or map whose items take no
// bytes (nulls, empty records). Any other item takes at least a byte, so
// the bytes left bound its count; these would let a record of a few bytes
// claim 2^62 items and fill the row group for ever. A million null items in
// one record is far beyond any real use.
const maxEmptyItems = 1 << 20

var errTruncated = errors.New("record ends early")

// avroReader reads one record's binary encoding.
type avroReader struct {
	buf  []byte
	pos  int
	uuid [16]byte
	cut  int64 // nanosecond timestamps cut to microseconds (nanosMicros)
}

func (r *avroReader) fail(op *avroOp, err error) error {
	if err == nil {
		err = errTruncated
	}
	return avroError(op.path, r.pos, err)
}

// long reads a zig-zag varint.
func (r *avroReader) long() (int64, bool) {
	if r.pos < len(r.buf) {
		if b := r.buf[r.pos]; b < 0x80 {
			r.pos++
			return int64(b>>1) ^ -int64(b&1), true
		}
	}
	u, n := binary.Uvarint(r.buf[r.pos:])
	if n <= 0 {
		return 0, false
	}
	r.pos += n
	return int64(u>>1) ^ -int64(u&1), true
}

// longErr says why long failed.
func (r *avroReader) longErr() error {
	_, n := binary.Uvarint(r.buf[r.pos:])
	if n < 0 {
		return errors.New("varint longer than 10 bytes")
	}
	return errTruncated
}

// bytes reads a length-prefixed byte string.
func (r *avroReader) bytes(op *avroOp) ([]byte, error) {
	n, ok := r.long()
	if !ok {
		return nil, r.fail(op, r.longErr())
	}
	if n < 0 || n > int64(len(r.buf)-r.pos) {
		return nil, r.fail(op, fmt.Errorf("length %d, with %d bytes left", n, len(r.buf)-r.pos))
	}
	b := r.buf[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader) int32(op *avroOp) (int32, error) {
	v, ok := r.long()
	if !ok {
		return 0, r.fail(op, r.longErr())
	}
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, r.fail(op, fmt.Errorf("int %d out of the 32-bit range", v))
	}
	return int32(v), nil
}

func (r *avroReader) fixed(op *avroOp, n int) ([]byte, error) {
	if n > len(r.buf)-r.pos {
		return nil, r.fail(op, errTruncated)
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// blockCount reads the count of an array or map block; a negative count is
// followed by the block's size in bytes. It returns the count, the size
// (-1 when not given), and checks the count against the bytes left.
func (r *avroReader) blockCount(op *avroOp, total *int64) (int64, int64, error) {
	n, ok := r.long()
	if !ok {
		return 0, 0, r.fail(op, r.longErr())
	}
	size := int64(-1)
	if n < 0 {
		if n == math.MinInt64 {
			return 0, 0, r.fail(op, fmt.Errorf("block count %d", n))
		}
		n = -n
		if size, ok = r.long(); !ok {
			return 0, 0, r.fail(op, r.longErr())
		}
		if size < 0 || size > int64(len(r.buf)-r.pos) {
			return 0, 0, r.fail(op, fmt.Errorf("block size %d, with %d bytes left", size, len(r.buf)-r.pos))
		}
	}
	m := op.items.minSize
	if m == 0 && (op.code == avroMap || op.code == avroSkipMap) {
		m = 1 // the key's length
	}
	if m > 0 {
		if n > int64(len(r.buf)-r.pos)/int64(m) {
			return 0, 0, r.fail(op, fmt.Errorf("block of %d items, with %d bytes left", n, len(r.buf)-r.pos))
		}
	} else {
		*total += n
		if *total > maxEmptyItems {
			return 0, 0, r.fail(op, fmt.Errorf("more than %d items that take no bytes", maxEmptyItems))
		}
	}
	return n, size, nil
}

// decode reads one value of op into its columns; rep is the repetition
// level of the first level slot each column takes.
func (r *avroReader) decode(op *avroOp, rep uint8) error {
	switch op.code {
	case avroRecord:
		for _, f := range op.fields {
			if err := r.decode(f, rep); err != nil {
				return err
			}
		}
	case avroLongI64:
		v, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		op.col.AppendInt64(rep, v)
	case avroMillisMicros:
		v, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return r.fail(op, fmt.Errorf("timestamp of %d milliseconds is out of the range of microseconds", v))
		}
		op.col.AppendInt64(rep, v*1000)
	case avroNanosMicros:
		if err := r.nanosMicros(op, rep); err != nil {
			return err
		}
	case avroTimeMicros:
		if err := r.timeMillisMicros(op, rep); err != nil {
			return err
		}
	case avroString:
		b, err := r.bytes(op)
		if err != nil {
			return err
		}
		if !utf8.Valid(b) {
			return r.fail(op, errors.New("string is not valid UTF-8"))
		}
		op.col.AppendBytes(rep, b)
	case avroDoubleF64:
		b, err := r.fixed(op, 8)
		if err != nil {
			return err
		}
		op.col.AppendDouble(rep, math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case avroIntI32:
		v, err := r.int32(op)
		if err != nil {
			return err
		}
		op.col.AppendInt32(rep, v)
	case avroBool:
		if r.pos >= len(r.buf) {
			return r.fail(op, errTruncated)
		}
		b := r.buf[r.pos]
		if b > 1 {
			return r.fail(op, fmt.Errorf("boolean byte 0x%02x, want 0 or 1", b))
		}
		r.pos++
		op.col.AppendBool(rep, b == 1)
	case avroUnion:
		i, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		if i < 0 || i >= int64(len(op.branches)) {
			return r.fail(op, fmt.Errorf("union branch %d, the union has %d", i, len(op.branches)))
		}
		return r.decode(op.branches[i], rep)
	case avroNull:
		for _, c := range op.cols {
			c.Null(rep, op.def)
		}
	case avroToUnion:
		for _, o := range op.others {
			for _, c := range o.cols {
				c.Null(rep, o.def)
			}
		}
		return r.decode(op.items, rep)
	case avroArray, avroMap:
		return r.collection(op, rep)
	case avroIntI64:
		v, err := r.int32(op)
		if err != nil {
			return err
		}
		op.col.AppendInt64(rep, int64(v))
	case avroIntF32:
		v, err := r.int32(op)
		if err != nil {
			return err
		}
		op.col.AppendFloat(rep, float32(v))
	case avroIntF64:
		v, err := r.int32(op)
		if err != nil {
			return err
		}
		op.col.AppendDouble(rep, float64(v))
	case avroLongF32, avroLongF64:
		v, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		if op.code == avroLongF32 {
			op.col.AppendFloat(rep, float32(v))
		} else {
			op.col.AppendDouble(rep, float64(v))
		}
	case avroFloatF32, avroFloatF64:
		b, err := r.fixed(op, 4)
		if err != nil {
			return err
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(b))
		if op.code == avroFloatF32 {
			op.col.AppendFloat(rep, f)
		} else {
			op.col.AppendDouble(rep, float64(f))
		}
	case avroBytes:
		b, err := r.bytes(op)
		if err != nil {
			return err
		}
		op.col.AppendBytes(rep, b)
	case avroDecimal:
		b, err := r.bytes(op)
		if err != nil {
			return err
		}
		if len(b) == 0 {
			b = zeroDecimal[:] // no bytes is the unscaled value 0
		}
		op.col.AppendBytes(rep, b)
	case avroUUIDText:
		b, err := r.bytes(op)
		if err != nil {
			return err
		}
		u, err := rowgroup.AppendUUID(r.uuid[:0], b)
		if err != nil {
			return r.fail(op, fmt.Errorf("%q is not a UUID (8-4-4-4-12 hex digits)", b))
		}
		op.col.AppendBytes(rep, u)
	case avroFixed:
		b, err := r.fixed(op, op.size)
		if err != nil {
			return err
		}
		op.col.AppendBytes(rep, b)
	case avroEnum:
		i, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		if i < 0 || i >= int64(len(op.symbols)) {
			return r.fail(op, fmt.Errorf("enum index %d, the enum has %d symbols", i, len(op.symbols)))
		}
		op.col.AppendBytes(rep, op.symbols[i])
	case avroDefault:
		d := avroReader{buf: op.value}
		return d.decode(op.items, rep)
	default:
		return r.skip(op)
	}
	return nil
}

var zeroDecimal = [1]byte{0}

// collection reads an array or a map: blocks of items until a block of 0.
func (r *avroReader) collection(op *avroOp, rep uint8) error {
	itemRep := rep
	var total int64
	items := 0
	for {
		n, _, err := r.blockCount(op, &total)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		for range n {
			if op.code == avroMap {
				k, err := r.bytes(op)
				if err != nil {
					return err
				}
				if !utf8.Valid(k) {
					return r.fail(op, errors.New("map key is not valid UTF-8"))
				}
				op.key.AppendBytes(itemRep, k)
			}
			if err := r.decode(op.items, itemRep); err != nil {
				return err
			}
			itemRep = op.rep
			items++
		}
	}
	if items == 0 {
		for _, c := range op.cols {
			c.Null(rep, op.def)
		}
	}
	return nil
}

// skip reads past a value that the reader does not keep.
func (r *avroReader) skip(op *avroOp) error {
	switch op.code {
	case avroSkipLong:
		if _, ok := r.long(); !ok {
			return r.fail(op, r.longErr())
		}
	case avroSkipFixedN:
		if _, err := r.fixed(op, op.size); err != nil {
			return err
		}
	case avroSkipBytes:
		if _, err := r.bytes(op); err != nil {
			return err
		}
	case avroSkipRecord:
		for _, f := range op.fields {
			if err := r.skip(f); err != nil {
				return err
			}
		}
	case avroSkipUnion:
		i, ok := r.long()
		if !ok {
			return r.fail(op, r.longErr())
		}
		if i < 0 || i >= int64(len(op.branches)) {
			return r.fail(op, fmt.Errorf("union branch %d, the union has %d", i, len(op.branches)))
		}
		return r.skip(op.branches[i])
	case avroSkipArray, avroSkipMap:
		var total int64
		for {
			n, size, err := r.blockCount(op, &total)
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if size >= 0 {
				r.pos += int(size) // checked against the bytes left by blockCount
				continue
			}
			for range n {
				if op.code == avroSkipMap {
					if _, err := r.bytes(op); err != nil {
						return err
					}
				}
				if err := r.skip(op.items); err != nil {
					return err
				}
			}
		}
	default:
		return r.fail(op, fmt.Errorf("internal error: step %d", op.code))
	}
	return nil
}
