package reader

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/writer/encoding"
)

// Values holds the non-null values of a page or a dictionary, in the typed
// representation of package writer/encoding: the slice that matches Type is
// filled and the others are empty.
type Values struct {
	Type   meta.Type
	Size   int // width of a FIXED_LEN_BYTE_ARRAY value
	Bool   []bool
	Int32  []int32
	Int64  []int64
	Int96  [][12]byte
	Float  []float32
	Double []float64
	// Data holds BYTE_ARRAY values back to back, value i being
	// Data[Offsets[i]:Offsets[i+1]], and FIXED_LEN_BYTE_ARRAY values of Size
	// bytes each.
	Data    []byte
	Offsets []uint32

	// shared says that a record refers to Data: the next page is decoded
	// into a new buffer rather than over it.
	shared bool
}

// Len returns the number of values.
func (v *Values) Len() int {
	switch v.Type {
	case meta.TypeBoolean:
		return len(v.Bool)
	case meta.TypeInt32:
		return len(v.Int32)
	case meta.TypeInt64:
		return len(v.Int64)
	case meta.TypeInt96:
		return len(v.Int96)
	case meta.TypeFloat:
		return len(v.Float)
	case meta.TypeDouble:
		return len(v.Double)
	case meta.TypeByteArray:
		if len(v.Offsets) == 0 {
			return 0
		}
		return len(v.Offsets) - 1
	case meta.TypeFixedLenByteArray:
		if v.Size <= 0 {
			return 0
		}
		return len(v.Data) / v.Size
	}
	return 0
}

// Bytes returns BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY value i.
func (v *Values) Bytes(i int) []byte {
	if v.Type == meta.TypeFixedLenByteArray {
		return v.Data[i*v.Size : (i+1)*v.Size : (i+1)*v.Size]
	}
	return v.Data[v.Offsets[i]:v.Offsets[i+1]:v.Offsets[i+1]]
}

// reset empties v, keeping its buffers, for values of type t.
func (v *Values) reset(t meta.Type, size int) {
	if v.shared {
		v.Data = nil
	}
	*v = Values{
		Type: t, Size: size,
		Bool: v.Bool[:0], Int32: v.Int32[:0], Int64: v.Int64[:0], Int96: v.Int96[:0],
		Float: v.Float[:0], Double: v.Double[:0], Data: v.Data[:0], Offsets: v.Offsets[:0],
	}
}

// valueEncoding returns the decoder of a value encoding.
func valueEncoding(e meta.Encoding) (encoding.Encoding, error) {
	if enc, ok := encoding.ByID(int32(e)); ok {
		return enc, nil
	}
	return nil, fmt.Errorf("%w: value encoding %v", ErrUnsupported, e)
}

// minEncodedBytes is a lower bound on the bytes n PLAIN values of type t
// take, so that a count can be checked before anything is allocated.
func minEncodedBytes(t meta.Type, size, n int) int64 {
	switch t {
	case meta.TypeBoolean:
		return (int64(n) + 7) / 8
	case meta.TypeInt32, meta.TypeFloat, meta.TypeByteArray:
		return 4 * int64(n)
	case meta.TypeInt64, meta.TypeDouble:
		return 8 * int64(n)
	case meta.TypeInt96:
		return 12 * int64(n)
	case meta.TypeFixedLenByteArray:
		return int64(size) * int64(n)
	}
	return 0
}

// grow makes room for n more values and data more bytes of byte array
// data, so that decoding them does not grow the buffers step by step.
func (v *Values) grow(n int, data int64) {
	switch v.Type {
	case meta.TypeBoolean:
		v.Bool = slices.Grow(v.Bool, n)
	case meta.TypeInt32:
		v.Int32 = slices.Grow(v.Int32, n)
	case meta.TypeInt64:
		v.Int64 = slices.Grow(v.Int64, n)
	case meta.TypeInt96:
		v.Int96 = slices.Grow(v.Int96, n)
	case meta.TypeFloat:
		v.Float = slices.Grow(v.Float, n)
	case meta.TypeDouble:
		v.Double = slices.Grow(v.Double, n)
	case meta.TypeByteArray:
		v.Data = slices.Grow(v.Data, int(data))
		v.Offsets = slices.Grow(v.Offsets, n+1)
	case meta.TypeFixedLenByteArray:
		v.Data = slices.Grow(v.Data, n*v.Size)
	}
}

// plainInPlace decodes n PLAIN byte array values of src, a buffer v may
// keep, into an empty v by moving the values over their length prefixes:
// Data becomes the front of src, and a page of one huge value is held once
// instead of twice. It reports false, with v unchanged, when src does not
// hold n values; Plain's decoder then says what is wrong.
func (v *Values) plainInPlace(src []byte, n int) bool {
	if v.Type != meta.TypeByteArray || len(v.Offsets) != 0 || n <= 0 {
		return false
	}
	pos, total := 0, 0
	for range n {
		if len(src)-pos < 4 {
			return false
		}
		size := int(binary.LittleEndian.Uint32(src[pos:]))
		if size > len(src)-pos-4 {
			return false
		}
		pos += 4 + size
		total += size
	}
	if total > math.MaxUint32 {
		return false
	}
	offsets := slices.Grow(v.Offsets[:0], n+1)
	offsets = append(offsets, 0)
	pos, w := 0, 0
	for range n {
		size := int(binary.LittleEndian.Uint32(src[pos:]))
		w += copy(src[w:], src[pos+4:pos+4+size])
		pos += 4 + size
		offsets = append(offsets, uint32(w))
	}
	v.Data, v.Offsets = src[:w], offsets
	return true
}

// decode appends n values encoded with enc in src to v.
func (v *Values) decode(enc encoding.Encoding, src []byte, n int) error {
	var err error
	switch v.Type {
	case meta.TypeBoolean:
		v.Bool, err = enc.DecodeBoolean(v.Bool, src, n)
	case meta.TypeInt32:
		v.Int32, err = enc.DecodeInt32(v.Int32, src, n)
	case meta.TypeInt64:
		v.Int64, err = enc.DecodeInt64(v.Int64, src, n)
	case meta.TypeInt96:
		v.Int96, err = enc.DecodeInt96(v.Int96, src, n)
	case meta.TypeFloat:
		v.Float, err = enc.DecodeFloat(v.Float, src, n)
	case meta.TypeDouble:
		v.Double, err = enc.DecodeDouble(v.Double, src, n)
	case meta.TypeByteArray:
		v.Data, v.Offsets, err = enc.DecodeByteArray(v.Data, v.Offsets, src, n)
	case meta.TypeFixedLenByteArray:
		v.Data, err = enc.DecodeFixedLenByteArray(v.Data, src, v.Size, n)
	default:
		return fmt.Errorf("%w: physical type %v", ErrUnsupported, v.Type)
	}
	if err == nil && v.Len() != n {
		// A decoder that reports success must have produced n values;
		// check rather than trust, since the levels index into them.
		err = fmt.Errorf("decoded %d values, want %d", v.Len(), n)
	}
	return err
}

// capacity returns the bytes v's buffers hold.
func (v *Values) capacity() int64 {
	return int64(cap(v.Bool)) + 4*int64(cap(v.Int32)) + 8*int64(cap(v.Int64)) + 12*int64(cap(v.Int96)) +
		4*int64(cap(v.Float)) + 8*int64(cap(v.Double)) + int64(cap(v.Data)) + 4*int64(cap(v.Offsets))
}

// decodedSize returns the bytes n values of v's type take once decoded,
// with data bytes of byte array data.
func (v *Values) decodedSize(n int, data int64) int64 {
	switch v.Type {
	case meta.TypeByteArray:
		return data + 4*int64(n+1)
	case meta.TypeFixedLenByteArray:
		return int64(n) * int64(v.Size)
	}
	return int64(n) * typeSize(v.Type)
}

// typeSize returns the bytes of one decoded value of a fixed-size type.
func typeSize(t meta.Type) int64 {
	switch t {
	case meta.TypeBoolean:
		return 1
	case meta.TypeInt32, meta.TypeFloat:
		return 4
	case meta.TypeInt64, meta.TypeDouble:
		return 8
	case meta.TypeInt96:
		return 12
	}
	return 0
}

// checkIndices fails on an index outside the dictionary.
func (v *Values) checkIndices(dict *Values, idx []int32) error {
	n := int32(dict.Len())
	for i, k := range idx {
		if k < 0 || k >= n {
			return fmt.Errorf("dictionary index %d at position %d outside the %d-entry dictionary", k, i, n)
		}
	}
	return nil
}

// gatheredSize returns the bytes gather(dict, idx) fills, for indices that
// checkIndices accepted.
func (v *Values) gatheredSize(dict *Values, idx []int32) int64 {
	if v.Type != meta.TypeByteArray {
		return v.decodedSize(len(idx), 0)
	}
	var total int64
	for _, k := range idx {
		total += int64(dict.Offsets[k+1] - dict.Offsets[k])
	}
	return v.decodedSize(len(idx), total)
}

// gather appends dict[i] to v for every index, which checkIndices must
// have accepted.
func (v *Values) gather(dict *Values, idx []int32) error {
	switch v.Type {
	case meta.TypeBoolean:
		for _, k := range idx {
			v.Bool = append(v.Bool, dict.Bool[k])
		}
	case meta.TypeInt32:
		for _, k := range idx {
			v.Int32 = append(v.Int32, dict.Int32[k])
		}
	case meta.TypeInt64:
		for _, k := range idx {
			v.Int64 = append(v.Int64, dict.Int64[k])
		}
	case meta.TypeInt96:
		for _, k := range idx {
			v.Int96 = append(v.Int96, dict.Int96[k])
		}
	case meta.TypeFloat:
		for _, k := range idx {
			v.Float = append(v.Float, dict.Float[k])
		}
	case meta.TypeDouble:
		for _, k := range idx {
			v.Double = append(v.Double, dict.Double[k])
		}
	case meta.TypeByteArray:
		var total int64
		for _, k := range idx {
			total += int64(dict.Offsets[k+1] - dict.Offsets[k])
		}
		if total+int64(len(v.Data)) > math.MaxUint32 {
			return fmt.Errorf("dictionary-encoded values expand to %d bytes, over the 4 GiB a page's values can address", total)
		}
		v.Data = slices.Grow(v.Data, int(total))
		v.Offsets = slices.Grow(v.Offsets, len(idx)+1)
		if len(v.Offsets) == 0 {
			v.Offsets = append(v.Offsets, uint32(len(v.Data)))
		}
		for _, k := range idx {
			v.Data = append(v.Data, dict.Data[dict.Offsets[k]:dict.Offsets[k+1]]...)
			v.Offsets = append(v.Offsets, uint32(len(v.Data)))
		}
	case meta.TypeFixedLenByteArray:
		v.Data = slices.Grow(v.Data, len(idx)*v.Size)
		for _, k := range idx {
			v.Data = append(v.Data, dict.Data[int(k)*v.Size:(int(k)+1)*v.Size]...)
		}
	default:
		return fmt.Errorf("%w: physical type %v", ErrUnsupported, v.Type)
	}
	return nil
}
