package encoding

import (
	"fmt"
	"math"
	"slices"
)

// ByteStreamSplit is the BYTE_STREAM_SPLIT encoding of FLOAT, DOUBLE, INT32,
// INT64 and FIXED_LEN_BYTE_ARRAY values: byte k of every value goes to
// stream k, and the streams follow each other. It does not shrink data but
// helps the compressor that runs after it.
type ByteStreamSplit struct{ unsupported[ByteStreamSplit] }

// String returns "BYTE_STREAM_SPLIT".
func (ByteStreamSplit) String() string { return "BYTE_STREAM_SPLIT" }

// EncodeInt32 appends src split into 4 byte streams.
func (ByteStreamSplit) EncodeInt32(dst []byte, src []int32) ([]byte, error) {
	n := len(src)
	out, dst := grow(dst, 4*n)
	s0, s1, s2, s3 := out[:n], out[n:2*n], out[2*n:3*n], out[3*n:4*n]
	for i, v := range src {
		u := uint32(v)
		s0[i], s1[i], s2[i], s3[i] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return dst, nil
}

// EncodeFloat appends src split into 4 byte streams.
func (ByteStreamSplit) EncodeFloat(dst []byte, src []float32) ([]byte, error) {
	n := len(src)
	out, dst := grow(dst, 4*n)
	s0, s1, s2, s3 := out[:n], out[n:2*n], out[2*n:3*n], out[3*n:4*n]
	for i, v := range src {
		u := math.Float32bits(v)
		s0[i], s1[i], s2[i], s3[i] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return dst, nil
}

// EncodeInt64 appends src split into 8 byte streams.
func (ByteStreamSplit) EncodeInt64(dst []byte, src []int64) ([]byte, error) {
	out, dst := grow(dst, 8*len(src))
	for i, v := range src {
		split8(out, len(src), i, uint64(v))
	}
	return dst, nil
}

// EncodeDouble appends src split into 8 byte streams.
func (ByteStreamSplit) EncodeDouble(dst []byte, src []float64) ([]byte, error) {
	out, dst := grow(dst, 8*len(src))
	for i, v := range src {
		split8(out, len(src), i, math.Float64bits(v))
	}
	return dst, nil
}

// EncodeFixedLenByteArray appends data split into size byte streams.
func (ByteStreamSplit) EncodeFixedLenByteArray(dst []byte, data []byte, size int) ([]byte, error) {
	if err := checkFixedSize(data, size); err != nil {
		return dst, fmt.Errorf("BYTE_STREAM_SPLIT: %w", err)
	}
	n := len(data) / size
	out, dst := grow(dst, len(data))
	for k := range size {
		stream := out[k*n : (k+1)*n]
		for i := range stream {
			stream[i] = data[i*size+k]
		}
	}
	return dst, nil
}

// DecodeInt32 appends n values joined from 4 byte streams.
func (ByteStreamSplit) DecodeInt32(dst []int32, src []byte, n int) ([]int32, error) {
	if err := checkSplit(src, n, 4, "INT32"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	s0, s1, s2, s3 := src[:n], src[n:2*n], src[2*n:3*n], src[3*n:4*n]
	for i := range dst[start:] {
		dst[start+i] = int32(join4(s0[i], s1[i], s2[i], s3[i]))
	}
	return dst, nil
}

// DecodeFloat appends n values joined from 4 byte streams.
func (ByteStreamSplit) DecodeFloat(dst []float32, src []byte, n int) ([]float32, error) {
	if err := checkSplit(src, n, 4, "FLOAT"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	s0, s1, s2, s3 := src[:n], src[n:2*n], src[2*n:3*n], src[3*n:4*n]
	for i := range dst[start:] {
		dst[start+i] = math.Float32frombits(join4(s0[i], s1[i], s2[i], s3[i]))
	}
	return dst, nil
}

// DecodeInt64 appends n values joined from 8 byte streams.
func (ByteStreamSplit) DecodeInt64(dst []int64, src []byte, n int) ([]int64, error) {
	if err := checkSplit(src, n, 8, "INT64"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = int64(join8(src, n, i))
	}
	return dst, nil
}

// DecodeDouble appends n values joined from 8 byte streams.
func (ByteStreamSplit) DecodeDouble(dst []float64, src []byte, n int) ([]float64, error) {
	if err := checkSplit(src, n, 8, "DOUBLE"); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	for i := range dst[start:] {
		dst[start+i] = math.Float64frombits(join8(src, n, i))
	}
	return dst, nil
}

// DecodeFixedLenByteArray appends n values of size bytes joined from size
// byte streams.
func (ByteStreamSplit) DecodeFixedLenByteArray(dst []byte, src []byte, size, n int) ([]byte, error) {
	if err := checkFixedSize(nil, size); err != nil {
		return dst, fmt.Errorf("BYTE_STREAM_SPLIT: %w", err)
	}
	if err := checkSplit(src, n, size, "FIXED_LEN_BYTE_ARRAY"); err != nil {
		return dst, err
	}
	out, dst := grow(dst, len(src))
	for k := range size {
		stream := src[k*n : (k+1)*n]
		for i, b := range stream {
			out[i*size+k] = b
		}
	}
	return dst, nil
}

// checkSplit verifies that src is exactly n values of size bytes: the
// streams' stride is n, so any other length means n or src is wrong.
func checkSplit(src []byte, n, size int, typ string) error {
	if err := checkCount(n); err != nil {
		return fmt.Errorf("BYTE_STREAM_SPLIT %s: %w", typ, err)
	}
	if uint64(len(src))%uint64(size) != 0 || uint64(len(src))/uint64(size) != uint64(n) {
		return fmt.Errorf("BYTE_STREAM_SPLIT %s: %d bytes are not %d values of %d bytes", typ, len(src), n, size)
	}
	return nil
}

func split8(out []byte, n, i int, u uint64) {
	out = out[i:]
	_ = out[7*n]
	out[0] = byte(u)
	out[n] = byte(u >> 8)
	out[2*n] = byte(u >> 16)
	out[3*n] = byte(u >> 24)
	out[4*n] = byte(u >> 32)
	out[5*n] = byte(u >> 40)
	out[6*n] = byte(u >> 48)
	out[7*n] = byte(u >> 56)
}

func join4(b0, b1, b2, b3 byte) uint32 {
	return uint32(b0) | uint32(b1)<<8 | uint32(b2)<<16 | uint32(b3)<<24
}

func join8(src []byte, n, i int) uint64 {
	src = src[i:]
	_ = src[7*n]
	return uint64(src[0]) | uint64(src[n])<<8 | uint64(src[2*n])<<16 | uint64(src[3*n])<<24 |
		uint64(src[4*n])<<32 | uint64(src[5*n])<<40 | uint64(src[6*n])<<48 | uint64(src[7*n])<<56
}
