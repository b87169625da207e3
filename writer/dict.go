package writer

import (
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/writer/encoding"
)

// dictionary maps a column chunk's distinct values to indices, in order of
// first appearance. It can be cut back to an earlier length, which is how a
// chunk undoes the page that pushed it over its size limit.
type dictionary interface {
	// add appends to idx the index of each value v0..v1 of c.
	add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32
	len() int
	// size is the dictionary page's PLAIN-encoded size.
	size() int
	truncate(n int)
	encode(dst []byte) ([]byte, error)
	reset()
}

func newDictionary(physical meta.Type, width int) dictionary {
	switch physical {
	case meta.TypeInt32:
		return &fixedDict[int32]{m: map[int32]int32{}, width: 4, values: func(c *rowgroup.Column) []int32 { return c.Int32 },
			enc: func(dst []byte, v []int32) ([]byte, error) { return encoding.Plain{}.EncodeInt32(dst, v) }}
	case meta.TypeInt64:
		return &fixedDict[int64]{m: map[int64]int32{}, width: 8, values: func(c *rowgroup.Column) []int64 { return c.Int64 },
			enc: func(dst []byte, v []int64) ([]byte, error) { return encoding.Plain{}.EncodeInt64(dst, v) }}
	case meta.TypeInt96:
		return &fixedDict[[12]byte]{m: map[[12]byte]int32{}, width: 12, values: func(c *rowgroup.Column) [][12]byte { return c.Int96 },
			enc: func(dst []byte, v [][12]byte) ([]byte, error) { return encoding.Plain{}.EncodeInt96(dst, v) }}
	case meta.TypeFloat:
		// Keyed by bit pattern: -0 and +0, and distinct NaNs, stay distinct.
		return &floatDict[float32, uint32]{m: map[uint32]int32{}, width: 4, values: func(c *rowgroup.Column) []float32 { return c.Float },
			bits: float32bits, enc: func(dst []byte, v []float32) ([]byte, error) { return encoding.Plain{}.EncodeFloat(dst, v) }}
	case meta.TypeDouble:
		return &floatDict[float64, uint64]{m: map[uint64]int32{}, width: 8, values: func(c *rowgroup.Column) []float64 { return c.Double },
			bits: float64bits, enc: func(dst []byte, v []float64) ([]byte, error) { return encoding.Plain{}.EncodeDouble(dst, v) }}
	case meta.TypeByteArray:
		return &bytesDict{m: map[string]int32{}, offsets: []uint32{0}}
	case meta.TypeFixedLenByteArray:
		return &bytesDict{m: map[string]int32{}, width: width}
	}
	return nil
}

type fixedDict[T comparable] struct {
	m      map[T]int32
	list   []T
	width  int
	values func(*rowgroup.Column) []T
	enc    func([]byte, []T) ([]byte, error)
}

func (d *fixedDict[T]) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	for _, v := range d.values(c)[v0:v1] {
		i, ok := d.m[v]
		if !ok {
			i = int32(len(d.list))
			d.m[v] = i
			d.list = append(d.list, v)
		}
		idx = append(idx, i)
	}
	return idx
}

func (d *fixedDict[T]) len() int  { return len(d.list) }
func (d *fixedDict[T]) size() int { return len(d.list) * d.width }
func (d *fixedDict[T]) truncate(n int) {
	for _, v := range d.list[n:] {
		delete(d.m, v)
	}
	d.list = d.list[:n]
}
func (d *fixedDict[T]) encode(dst []byte) ([]byte, error) { return d.enc(dst, d.list) }
func (d *fixedDict[T]) reset()                            { clear(d.m); d.list = d.list[:0] }

type floatDict[F float32 | float64, B uint32 | uint64] struct {
	m      map[B]int32
	list   []F
	width  int
	values func(*rowgroup.Column) []F
	bits   func(F) B
	enc    func([]byte, []F) ([]byte, error)
}

func (d *floatDict[F, B]) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	for _, v := range d.values(c)[v0:v1] {
		b := d.bits(v)
		i, ok := d.m[b]
		if !ok {
			i = int32(len(d.list))
			d.m[b] = i
			d.list = append(d.list, v)
		}
		idx = append(idx, i)
	}
	return idx
}

func (d *floatDict[F, B]) len() int  { return len(d.list) }
func (d *floatDict[F, B]) size() int { return len(d.list) * d.width }
func (d *floatDict[F, B]) truncate(n int) {
	for _, v := range d.list[n:] {
		delete(d.m, d.bits(v))
	}
	d.list = d.list[:n]
}
func (d *floatDict[F, B]) encode(dst []byte) ([]byte, error) { return d.enc(dst, d.list) }
func (d *floatDict[F, B]) reset()                            { clear(d.m); d.list = d.list[:0] }

// bytesDict serves BYTE_ARRAY (width 0) and FIXED_LEN_BYTE_ARRAY values.
type bytesDict struct {
	m       map[string]int32
	data    []byte
	offsets []uint32 // BYTE_ARRAY only
	count   int
	width   int
}

func (d *bytesDict) value(c *rowgroup.Column, i int) []byte {
	if d.width > 0 {
		return c.Bytes[i*d.width : (i+1)*d.width]
	}
	return c.Bytes[c.Offsets[i]:c.Offsets[i+1]]
}

func (d *bytesDict) add(idx []int32, c *rowgroup.Column, v0, v1 int) []int32 {
	for i := v0; i < v1; i++ {
		v := d.value(c, i)
		j, ok := d.m[string(v)]
		if !ok {
			j = int32(d.count)
			d.m[string(v)] = j
			d.data = append(d.data, v...)
			if d.width == 0 {
				d.offsets = append(d.offsets, uint32(len(d.data)))
			}
			d.count++
		}
		idx = append(idx, j)
	}
	return idx
}

func (d *bytesDict) len() int { return d.count }

func (d *bytesDict) size() int {
	if d.width > 0 {
		return len(d.data)
	}
	return len(d.data) + 4*d.count
}

func (d *bytesDict) entry(i int) []byte {
	if d.width > 0 {
		return d.data[i*d.width : (i+1)*d.width]
	}
	return d.data[d.offsets[i]:d.offsets[i+1]]
}

func (d *bytesDict) truncate(n int) {
	for i := n; i < d.count; i++ {
		delete(d.m, string(d.entry(i)))
	}
	if d.width > 0 {
		d.data = d.data[:n*d.width]
	} else {
		d.data = d.data[:d.offsets[n]]
		d.offsets = d.offsets[:n+1]
	}
	d.count = n
}

func (d *bytesDict) encode(dst []byte) ([]byte, error) {
	if d.width > 0 {
		return encoding.Plain{}.EncodeFixedLenByteArray(dst, d.data, d.width)
	}
	return encoding.Plain{}.EncodeByteArray(dst, d.data, d.offsets)
}

func (d *bytesDict) reset() {
	clear(d.m)
	d.data = d.data[:0]
	if d.width == 0 {
		d.offsets = d.offsets[:1]
	}
	d.count = 0
}
