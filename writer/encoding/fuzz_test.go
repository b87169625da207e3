package encoding

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// Fuzz targets, one per decoder family. Each decodes the fuzzer's bytes as
// they are (which must not panic and must not return more than asked), then
// builds values from the same bytes, encodes them and checks that decoding
// gives them back.

// maxFuzzValues bounds n: run-length and delta encodings legitimately
// describe many values in few bytes, and the caller bounds n.
const maxFuzzValues = 1 << 12

func fuzzCount(n uint16) int { return int(n) % (maxFuzzValues + 1) }

func ints32(data []byte) []int32 {
	v := make([]int32, len(data)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v
}

func ints64(data []byte) []int64 {
	v := make([]int64, len(data)/8)
	for i := range v {
		v[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return v
}

// splitValues cuts data into byte arrays whose lengths come from data.
func splitValues(data []byte) byteArrays {
	b := byteArrays{offsets: []uint32{0}}
	for len(data) > 0 {
		size := min(int(data[0]%16), len(data)-1)
		b.data = append(b.data, data[1:1+size]...)
		b.offsets = append(b.offsets, uint32(len(b.data)))
		data = data[1+size:]
	}
	return b
}

func checkLen[T any](t *testing.T, name string, out []T, err error, n int) {
	t.Helper()
	if err == nil && len(out) != n {
		t.Fatalf("%s: decoded %d values, want %d", name, len(out), n)
	}
}

func FuzzDecodePlain(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, uint16(3))
	b, _ := Plain{}.EncodeByteArray(nil, []byte("helloworld"), []uint32{0, 5, 5, 10})
	f.Add(b, uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		n := fuzzCount(count)
		p := Plain{}
		bo, err := p.DecodeBoolean(nil, data, n)
		checkLen(t, "BOOLEAN", bo, err, n)
		i32, err := p.DecodeInt32(nil, data, n)
		checkLen(t, "INT32", i32, err, n)
		i64, err := p.DecodeInt64(nil, data, n)
		checkLen(t, "INT64", i64, err, n)
		i96, err := p.DecodeInt96(nil, data, n)
		checkLen(t, "INT96", i96, err, n)
		f32, err := p.DecodeFloat(nil, data, n)
		checkLen(t, "FLOAT", f32, err, n)
		f64, err := p.DecodeDouble(nil, data, n)
		checkLen(t, "DOUBLE", f64, err, n)
		_, offsets, err := p.DecodeByteArray(nil, nil, data, n)
		checkLen(t, "BYTE_ARRAY", offsets, err, n+1)
		fl, err := p.DecodeFixedLenByteArray(nil, data, 3, n)
		checkLen(t, "FIXED_LEN_BYTE_ARRAY", fl, err, 3*n)

		// PLAIN is a bijection for fixed-size types: encoding what was
		// decoded gives back the input bytes.
		if f64, err := p.DecodeDouble(nil, data, len(data)/8); err != nil {
			t.Fatal(err)
		} else if enc, _ := p.EncodeDouble(nil, f64); !bytes.Equal(enc, data[:len(data)/8*8]) {
			t.Fatal("DOUBLE does not round trip")
		}
		if v, err := p.DecodeInt96(nil, data, len(data)/12); err != nil {
			t.Fatal(err)
		} else if enc, _ := p.EncodeInt96(nil, v); !bytes.Equal(enc, data[:len(data)/12*12]) {
			t.Fatal("INT96 does not round trip")
		}
		ba := splitValues(data)
		enc, err := p.EncodeByteArray(nil, ba.data, ba.offsets)
		if err != nil {
			t.Fatal(err)
		}
		gotData, gotOffsets, err := p.DecodeByteArray(nil, nil, enc, ba.len())
		if err != nil || !bytes.Equal(gotData, ba.data) || !equalSlices(gotOffsets, ba.offsets) {
			t.Fatalf("BYTE_ARRAY does not round trip: %v", err)
		}
		bools := make([]bool, len(data))
		for i, b := range data {
			bools[i] = b&1 != 0
		}
		enc, _ = p.EncodeBoolean(nil, bools)
		if got, err := p.DecodeBoolean(nil, enc, len(bools)); err != nil || !equalSlices(got, bools) {
			t.Fatalf("BOOLEAN does not round trip: %v", err)
		}
	})
}

func FuzzDecodeHybrid(f *testing.F) {
	f.Add([]byte{0x03, 0x88, 0xc6, 0xfa}, uint8(3), uint16(8))
	f.Add([]byte{0xc8, 0x01, 0x01}, uint8(1), uint16(100))
	f.Add(AppendHybrid(nil, []uint32{1, 2, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 3), uint8(3), uint16(20))
	b, _ := RLE{}.EncodeBoolean(nil, []bool{true, false, true, true, true, true, true, true, true, true, true})
	f.Add(b, uint8(1), uint16(11))
	f.Fuzz(func(t *testing.T, data []byte, width uint8, count uint16) {
		n := fuzzCount(count)
		w := int(width % 34) // includes the invalid 33
		v32, err := DecodeHybrid(nil, data, w, n)
		checkLen(t, "DecodeHybrid", v32, err, n)
		if err == nil {
			for _, v := range v32 {
				if uint64(v) > widthMask(w) {
					t.Fatalf("value %d exceeds width %d", v, w)
				}
			}
		}
		lv, err := DecodeLevels(nil, data, w, n)
		checkLen(t, "DecodeLevels", lv, err, n)
		lv, err = DecodeBitPackedLevels(nil, data, w, n)
		checkLen(t, "DecodeBitPackedLevels", lv, err, n)
		idx, err := RLEDictionary{}.DecodeInt32(nil, data, n)
		checkLen(t, "RLE_DICTIONARY", idx, err, n)
		bools, err := RLE{}.DecodeBoolean(nil, data, n)
		checkLen(t, "RLE BOOLEAN", bools, err, n)

		// Round trip values drawn from data; long runs come from
		// repeated bytes.
		if w > 32 {
			return
		}
		values := make([]uint32, len(data))
		for i, b := range data {
			values[i] = (uint32(b) * 0x01010101 >> (i % 8)) & uint32(widthMask(w))
		}
		enc := AppendHybrid(nil, values, w)
		got, err := DecodeHybrid(nil, enc, w, len(values))
		if err != nil || !equalSlices(got, values) {
			t.Fatalf("hybrid round trip failed at width %d: %v", w, err)
		}
		indices := make([]int32, len(values))
		for i, v := range values {
			indices[i] = int32(v & math.MaxInt32)
		}
		enc, _ = RLEDictionary{}.EncodeInt32(nil, indices)
		if got, err := (RLEDictionary{}).DecodeInt32(nil, enc, len(indices)); err != nil || !equalSlices(got, indices) {
			t.Fatalf("RLE_DICTIONARY round trip failed: %v", err)
		}
		bs := make([]bool, len(data))
		for i, b := range data {
			bs[i] = b > 127
		}
		enc, _ = RLE{}.EncodeBoolean(nil, bs)
		if got, err := (RLE{}).DecodeBoolean(nil, enc, len(bs)); err != nil || !equalSlices(got, bs) {
			t.Fatalf("RLE BOOLEAN round trip failed: %v", err)
		}
	})
}

func FuzzDecodeDeltaBinaryPacked(f *testing.F) {
	enc, _ := DeltaBinaryPacked{}.EncodeInt64(nil, []int64{7, 5, 3, 1, 2, 3, 4, 5})
	f.Add(enc, uint16(8))
	enc, _ = DeltaBinaryPacked{}.EncodeInt32(nil, ints32(bytes.Repeat([]byte{0xff, 0x7f, 0, 0x80, 1}, 100)))
	f.Add(enc, uint16(125))
	f.Add([]byte{0x80, 0x01, 0x04, 0x02, 0x00, 0x00, 0x41, 0, 0, 0}, uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		n := fuzzCount(count)
		d := DeltaBinaryPacked{}
		v32, err := d.DecodeInt32(nil, data, n)
		checkLen(t, "INT32", v32, err, n)
		v64, err := d.DecodeInt64(nil, data, n)
		checkLen(t, "INT64", v64, err, n)

		in32 := ints32(data)
		enc, _ := d.EncodeInt32(nil, in32)
		if got, err := d.DecodeInt32(nil, enc, len(in32)); err != nil || !equalSlices(got, in32) {
			t.Fatalf("INT32 round trip failed: %v", err)
		}
		in64 := ints64(data)
		enc, _ = d.EncodeInt64(nil, in64)
		if got, err := d.DecodeInt64(nil, enc, len(in64)); err != nil || !equalSlices(got, in64) {
			t.Fatalf("INT64 round trip failed: %v", err)
		}
	})
}

func fuzzByteArrays(f *testing.F, enc Encoding) {
	for _, in := range []byteArrays{
		makeByteArrays([]byte("axis"), []byte("axle"), []byte("babble"), []byte("babyhood")),
		makeByteArrays([]byte("Hello"), []byte("World"), []byte("Foobar"), []byte("ABCDEF")),
		makeByteArrays(nil, nil, []byte("x")),
	} {
		b, _ := enc.EncodeByteArray(nil, in.data, in.offsets)
		f.Add(b, uint16(in.len()))
	}
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		n := fuzzCount(count)
		out, offsets, err := enc.DecodeByteArray(nil, nil, data, n)
		checkLen(t, "BYTE_ARRAY", offsets, err, n+1)
		if err == nil && int(offsets[n]) != len(out) {
			t.Fatalf("last offset %d, data %d bytes", offsets[n], len(out))
		}
		if fl, ok := enc.(DeltaByteArray); ok {
			v, err := fl.DecodeFixedLenByteArray(nil, data, 4, n)
			checkLen(t, "FIXED_LEN_BYTE_ARRAY", v, err, 4*n)
			fixed := data[:len(data)/4*4]
			b, err := fl.EncodeFixedLenByteArray(nil, fixed, 4)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := fl.DecodeFixedLenByteArray(nil, b, 4, len(fixed)/4); err != nil || !bytes.Equal(got, fixed) {
				t.Fatalf("FIXED_LEN_BYTE_ARRAY round trip failed: %v", err)
			}
		}
		in := splitValues(data)
		b, err := enc.EncodeByteArray(nil, in.data, in.offsets)
		if err != nil {
			t.Fatal(err)
		}
		gotData, gotOffsets, err := enc.DecodeByteArray(nil, nil, b, in.len())
		if err != nil || !bytes.Equal(gotData, in.data) || !equalSlices(gotOffsets, in.offsets) {
			t.Fatalf("round trip failed: %v", err)
		}
	})
}

func FuzzDecodeDeltaLengthByteArray(f *testing.F) { fuzzByteArrays(f, DeltaLengthByteArray{}) }

func FuzzDecodeDeltaByteArray(f *testing.F) { fuzzByteArrays(f, DeltaByteArray{}) }

func FuzzDecodeByteStreamSplit(f *testing.F) {
	f.Add([]byte{0xAA, 0x00, 0xA3, 0xBB, 0x11, 0xB4, 0xCC, 0x22, 0xC5, 0xDD, 0x33, 0xD6}, uint16(3), uint8(4))
	f.Add(make([]byte, 16), uint16(2), uint8(8))
	f.Fuzz(func(t *testing.T, data []byte, count uint16, size uint8) {
		n := fuzzCount(count)
		s := ByteStreamSplit{}
		f32, err := s.DecodeFloat(nil, data, n)
		checkLen(t, "FLOAT", f32, err, n)
		f64, err := s.DecodeDouble(nil, data, n)
		checkLen(t, "DOUBLE", f64, err, n)
		i32, err := s.DecodeInt32(nil, data, n)
		checkLen(t, "INT32", i32, err, n)
		i64, err := s.DecodeInt64(nil, data, n)
		checkLen(t, "INT64", i64, err, n)
		fl, err := s.DecodeFixedLenByteArray(nil, data, int(size), n)
		checkLen(t, "FIXED_LEN_BYTE_ARRAY", fl, err, int(size)*n)

		// The transform is a permutation of whole values: split and
		// join in both directions give the input back.
		if size == 0 {
			return
		}
		k := int(size)
		fixed := data[:len(data)/k*k]
		enc, err := s.EncodeFixedLenByteArray(nil, fixed, k)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.DecodeFixedLenByteArray(nil, enc, k, len(fixed)/k); err != nil || !bytes.Equal(got, fixed) {
			t.Fatalf("FIXED_LEN_BYTE_ARRAY round trip failed: %v", err)
		}
		d8 := data[:len(data)/8*8]
		if v, err := s.DecodeDouble(nil, d8, len(d8)/8); err != nil {
			t.Fatal(err)
		} else if enc, _ := s.EncodeDouble(nil, v); !bytes.Equal(enc, d8) {
			t.Fatal("DOUBLE does not round trip")
		}
		d4 := data[:len(data)/4*4]
		if v, err := s.DecodeFloat(nil, d4, len(d4)/4); err != nil {
			t.Fatal(err)
		} else if enc, _ := s.EncodeFloat(nil, v); !bytes.Equal(enc, d4) {
			t.Fatal("FLOAT does not round trip")
		}
	})
}
