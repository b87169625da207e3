// Package encoding implements the value encodings of the Parquet format
// (PLAIN, RLE, RLE_DICTIONARY, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY,
// DELTA_BYTE_ARRAY and BYTE_STREAM_SPLIT) and the RLE/bit-packing hybrid used
// for definition and repetition levels.
//
// Every encoding satisfies the Encoding interface. Encoders append to a
// destination byte slice and return it grown; decoders append decoded values to
// a typed destination slice. Neither allocates per value: with enough capacity
// in the destination, encoding does not allocate at all.
//
// Values are represented with one Go type per physical type:
//
//	BOOLEAN               []bool
//	INT32                 []int32
//	INT64                 []int64
//	INT96                 [][12]byte
//	FLOAT                 []float32
//	DOUBLE                []float64
//	BYTE_ARRAY            data []byte plus offsets []uint32, len(offsets) == n+1,
//	                      value i is data[offsets[i]:offsets[i+1]]
//	FIXED_LEN_BYTE_ARRAY  data []byte of n*size bytes plus size
//
// Decoders read untrusted bytes: they validate every header, length and bit
// width, return an error instead of panicking, and grow their output only as
// far as the input accounts for it. The value count n comes from the page
// header; callers should bound it before decoding, because run-length and
// delta encodings can legitimately describe many values in a few bytes.
package encoding

import (
	"errors"
	"fmt"
)

// Encoding is one Parquet value encoding. An encoding that does not support a
// physical type returns an error wrapping ErrNotSupported from that type's
// methods.
type Encoding interface {
	// String returns the encoding's name as spelled in parquet.thrift.
	String() string

	EncodeBoolean(dst []byte, src []bool) ([]byte, error)
	EncodeInt32(dst []byte, src []int32) ([]byte, error)
	EncodeInt64(dst []byte, src []int64) ([]byte, error)
	EncodeInt96(dst []byte, src [][12]byte) ([]byte, error)
	EncodeFloat(dst []byte, src []float32) ([]byte, error)
	EncodeDouble(dst []byte, src []float64) ([]byte, error)
	EncodeByteArray(dst []byte, data []byte, offsets []uint32) ([]byte, error)
	EncodeFixedLenByteArray(dst []byte, data []byte, size int) ([]byte, error)

	// The decoders append exactly n values decoded from src to dst and return
	// the grown slice. They return an error, never panic, when src is short
	// or malformed. On error the returned slice holds dst's original values.
	DecodeBoolean(dst []bool, src []byte, n int) ([]bool, error)
	DecodeInt32(dst []int32, src []byte, n int) ([]int32, error)
	DecodeInt64(dst []int64, src []byte, n int) ([]int64, error)
	DecodeInt96(dst [][12]byte, src []byte, n int) ([][12]byte, error)
	DecodeFloat(dst []float32, src []byte, n int) ([]float32, error)
	DecodeDouble(dst []float64, src []byte, n int) ([]float64, error)
	// DecodeByteArray appends n values to data and their end offsets to
	// offsets. If offsets is empty it first appends 0.
	DecodeByteArray(data []byte, offsets []uint32, src []byte, n int) ([]byte, []uint32, error)
	DecodeFixedLenByteArray(dst []byte, src []byte, size, n int) ([]byte, error)
}

// ErrNotSupported is wrapped by the errors an encoding returns for physical
// types it cannot represent.
var ErrNotSupported = errors.New("not supported")

// Compile-time checks that every encoding implements the interface.
var (
	_ Encoding = Plain{}
	_ Encoding = RLE{}
	_ Encoding = RLEDictionary{}
	_ Encoding = DeltaBinaryPacked{}
	_ Encoding = DeltaLengthByteArray{}
	_ Encoding = DeltaByteArray{}
	_ Encoding = ByteStreamSplit{}
)

// unsupported provides every method of Encoding as an error. Encodings embed
// it and override the methods of the types they support; E names the
// embedding encoding so that errors say which encoding refused.
type unsupported[E fmt.Stringer] struct{}

func (unsupported[E]) err(typ string) error {
	var e E
	return fmt.Errorf("%s encoding of %s values: %w", e.String(), typ, ErrNotSupported)
}

func (u unsupported[E]) EncodeBoolean(dst []byte, _ []bool) ([]byte, error) {
	return dst, u.err("BOOLEAN")
}

func (u unsupported[E]) EncodeInt32(dst []byte, _ []int32) ([]byte, error) {
	return dst, u.err("INT32")
}

func (u unsupported[E]) EncodeInt64(dst []byte, _ []int64) ([]byte, error) {
	return dst, u.err("INT64")
}

func (u unsupported[E]) EncodeInt96(dst []byte, _ [][12]byte) ([]byte, error) {
	return dst, u.err("INT96")
}

func (u unsupported[E]) EncodeFloat(dst []byte, _ []float32) ([]byte, error) {
	return dst, u.err("FLOAT")
}

func (u unsupported[E]) EncodeDouble(dst []byte, _ []float64) ([]byte, error) {
	return dst, u.err("DOUBLE")
}

func (u unsupported[E]) EncodeByteArray(dst []byte, _ []byte, _ []uint32) ([]byte, error) {
	return dst, u.err("BYTE_ARRAY")
}

func (u unsupported[E]) EncodeFixedLenByteArray(dst []byte, _ []byte, _ int) ([]byte, error) {
	return dst, u.err("FIXED_LEN_BYTE_ARRAY")
}

func (u unsupported[E]) DecodeBoolean(dst []bool, _ []byte, _ int) ([]bool, error) {
	return dst, u.err("BOOLEAN")
}

func (u unsupported[E]) DecodeInt32(dst []int32, _ []byte, _ int) ([]int32, error) {
	return dst, u.err("INT32")
}

func (u unsupported[E]) DecodeInt64(dst []int64, _ []byte, _ int) ([]int64, error) {
	return dst, u.err("INT64")
}

func (u unsupported[E]) DecodeInt96(dst [][12]byte, _ []byte, _ int) ([][12]byte, error) {
	return dst, u.err("INT96")
}

func (u unsupported[E]) DecodeFloat(dst []float32, _ []byte, _ int) ([]float32, error) {
	return dst, u.err("FLOAT")
}

func (u unsupported[E]) DecodeDouble(dst []float64, _ []byte, _ int) ([]float64, error) {
	return dst, u.err("DOUBLE")
}

func (u unsupported[E]) DecodeByteArray(data []byte, offsets []uint32, _ []byte, _ int) ([]byte, []uint32, error) {
	return data, offsets, u.err("BYTE_ARRAY")
}

func (u unsupported[E]) DecodeFixedLenByteArray(dst []byte, _ []byte, _, _ int) ([]byte, error) {
	return dst, u.err("FIXED_LEN_BYTE_ARRAY")
}

// checkCount rejects a negative value count.
func checkCount(n int) error {
	if n < 0 {
		return fmt.Errorf("negative value count %d", n)
	}
	return nil
}

// checkFixedSize validates a FIXED_LEN_BYTE_ARRAY value size and, when data is
// non-nil, that data holds a whole number of values.
func checkFixedSize(data []byte, size int) error {
	if size <= 0 {
		return fmt.Errorf("fixed length byte array: invalid size %d", size)
	}
	if len(data)%size != 0 {
		return fmt.Errorf("fixed length byte array: %d bytes is not a multiple of size %d", len(data), size)
	}
	return nil
}

// checkOffsets validates BYTE_ARRAY offsets against data and returns the
// number of values they describe.
func checkOffsets(data []byte, offsets []uint32) (int, error) {
	if len(offsets) == 0 {
		return 0, nil
	}
	prev := offsets[0]
	for i, off := range offsets[1:] {
		if off < prev {
			return 0, fmt.Errorf("byte array: offsets[%d]=%d < offsets[%d]=%d", i+1, off, i, prev)
		}
		prev = off
	}
	if int64(prev) > int64(len(data)) {
		return 0, fmt.Errorf("byte array: last offset %d beyond %d data bytes", prev, len(data))
	}
	return len(offsets) - 1, nil
}

// startOffsets prepares offsets for appending decoded byte arrays: it appends
// the leading 0 when offsets is empty.
func startOffsets(offsets []uint32) []uint32 {
	if len(offsets) == 0 {
		offsets = append(offsets, 0)
	}
	return offsets
}

// maxByteArrayData is the largest data buffer uint32 offsets can address.
const maxByteArrayData = 1<<32 - 1

// ByID returns the value encoding whose id in parquet.thrift's Encoding
// enum is id: PLAIN (0), RLE (3), DELTA_BINARY_PACKED (5),
// DELTA_LENGTH_BYTE_ARRAY (6), DELTA_BYTE_ARRAY (7) or BYTE_STREAM_SPLIT
// (9). Dictionary indices (2, 8) have RLEDictionary; other ids have no
// value encoding here, and ok is false.
func ByID(id int32) (e Encoding, ok bool) {
	switch id {
	case 0:
		return Plain{}, true
	case 3:
		return RLE{}, true
	case 5:
		return DeltaBinaryPacked{}, true
	case 6:
		return DeltaLengthByteArray{}, true
	case 7:
		return DeltaByteArray{}, true
	case 9:
		return ByteStreamSplit{}, true
	}
	return nil, false
}
