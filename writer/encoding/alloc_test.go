package encoding

import (
	"math/rand/v2"
	"testing"
)

// TestEncodeAllocs checks that encoding into a destination with enough
// capacity, and decoding into one, does not allocate.
func TestEncodeAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 1000
	bools := make([]bool, n)
	i32 := make([]int32, n)
	i64 := make([]int64, n)
	i96 := make([][12]byte, n)
	f32 := make([]float32, n)
	f64 := make([]float64, n)
	for i := range n {
		bools[i] = rng.IntN(3) == 0
		i32[i] = int32(rng.IntN(100))
		i64[i] = rng.Int64()
		i96[i][0] = byte(i)
		f32[i] = rng.Float32()
		f64[i] = rng.NormFloat64()
	}
	var values [][]byte
	for i := range n {
		values = append(values, []byte{byte(i / 10), byte(i), 'x'}[:1+i%3])
	}
	ba := makeByteArrays(values...)
	fixed := make([]byte, 4*n)
	for i := range fixed {
		fixed[i] = byte(rng.IntN(4))
	}
	for _, e := range encodings() {
		enc := e.enc
		for _, typ := range e.types {
			var encode func([]byte) ([]byte, error)
			var decode func([]byte) error
			switch typ {
			case tBoolean:
				out := make([]bool, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeBoolean(b, bools) }
				decode = func(src []byte) error { _, err := enc.DecodeBoolean(out, src, n); return err }
			case tInt32:
				out := make([]int32, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeInt32(b, i32) }
				decode = func(src []byte) error { _, err := enc.DecodeInt32(out, src, n); return err }
			case tInt64:
				out := make([]int64, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeInt64(b, i64) }
				decode = func(src []byte) error { _, err := enc.DecodeInt64(out, src, n); return err }
			case tInt96:
				out := make([][12]byte, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeInt96(b, i96) }
				decode = func(src []byte) error { _, err := enc.DecodeInt96(out, src, n); return err }
			case tFloat:
				out := make([]float32, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeFloat(b, f32) }
				decode = func(src []byte) error { _, err := enc.DecodeFloat(out, src, n); return err }
			case tDouble:
				out := make([]float64, 0, n)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeDouble(b, f64) }
				decode = func(src []byte) error { _, err := enc.DecodeDouble(out, src, n); return err }
			case tBytes:
				data, offsets := make([]byte, 0, len(ba.data)), make([]uint32, 0, n+1)
				encode = func(b []byte) ([]byte, error) { return enc.EncodeByteArray(b, ba.data, ba.offsets) }
				decode = func(src []byte) error { _, _, err := enc.DecodeByteArray(data, offsets, src, n); return err }
			case tFixed:
				out := make([]byte, 0, len(fixed))
				encode = func(b []byte) ([]byte, error) { return enc.EncodeFixedLenByteArray(b, fixed, 4) }
				decode = func(src []byte) error { _, err := enc.DecodeFixedLenByteArray(out, src, 4, n); return err }
			}
			encoded, err := encode(nil)
			if err != nil {
				t.Fatalf("%s %s: %v", enc, typ, err)
			}
			buf := make([]byte, 0, len(encoded))
			if a := testing.AllocsPerRun(20, func() { _, _ = encode(buf) }); a != 0 {
				t.Errorf("%s %s: encode allocates %.1f times", enc, typ, a)
			}
			if a := testing.AllocsPerRun(20, func() {
				if err := decode(encoded); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%s %s: decode allocates %.1f times", enc, typ, a)
			}
		}
	}
	levels := make([]uint8, n)
	for i := range levels {
		levels[i] = uint8(rng.IntN(3))
	}
	encoded := AppendLevels(nil, levels, 2)
	buf := make([]byte, 0, len(encoded))
	out := make([]uint8, 0, n)
	if a := testing.AllocsPerRun(20, func() { AppendLevels(buf, levels, 2) }); a != 0 {
		t.Errorf("AppendLevels allocates %.1f times", a)
	}
	if a := testing.AllocsPerRun(20, func() { _, _ = DecodeLevels(out, encoded, 2, n) }); a != 0 {
		t.Errorf("DecodeLevels allocates %.1f times", a)
	}
}
