package encoding

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// physical types, as the tests name them.
const (
	tBoolean = "BOOLEAN"
	tInt32   = "INT32"
	tInt64   = "INT64"
	tInt96   = "INT96"
	tFloat   = "FLOAT"
	tDouble  = "DOUBLE"
	tBytes   = "BYTE_ARRAY"
	tFixed   = "FIXED_LEN_BYTE_ARRAY"
)

// encodings lists every encoding with the physical types it supports.
func encodings() []struct {
	enc   Encoding
	types []string
} {
	return []struct {
		enc   Encoding
		types []string
	}{
		{Plain{}, []string{tBoolean, tInt32, tInt64, tInt96, tFloat, tDouble, tBytes, tFixed}},
		{RLE{}, []string{tBoolean}},
		{RLEDictionary{}, []string{tInt32}},
		{DeltaBinaryPacked{}, []string{tInt32, tInt64}},
		{DeltaLengthByteArray{}, []string{tBytes}},
		{DeltaByteArray{}, []string{tBytes, tFixed}},
		{ByteStreamSplit{}, []string{tFloat, tDouble, tInt32, tInt64, tFixed}},
	}
}

// garbage returns the bytes prepended to every destination to check that
// encoders append rather than overwrite.
func garbage() []byte { return []byte{0xde, 0xad} }

// roundTrip encodes values after a prefix, decodes them after a prefix of
// one value, and checks both prefixes and the values.
func roundTrip[T any](t *testing.T, values []T, eq func(a, b T) bool,
	encode func([]byte, []T) ([]byte, error), decode func([]T, []byte, int) ([]T, error)) {
	t.Helper()
	buf, err := encode(garbage(), values)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.HasPrefix(buf, garbage()) {
		t.Fatalf("encode overwrote dst prefix: % x", buf[:2])
	}
	var sentinel T
	out, err := decode([]T{sentinel}, buf[len(garbage()):], len(values))
	if err != nil {
		t.Fatalf("decode %d values from % x: %v", len(values), head(buf[len(garbage()):]), err)
	}
	if len(out) != len(values)+1 {
		t.Fatalf("decoded %d values, want %d", len(out)-1, len(values))
	}
	for i, v := range values {
		if !eq(out[i+1], v) {
			t.Fatalf("value %d: got %v, want %v", i, out[i+1], v)
		}
	}
	// A count one larger than what was encoded must fail, not panic,
	// except where the encoding cannot know (bit-packed padding).
	_, _ = decode(nil, buf[len(garbage()):], len(values)+1)
	// Every truncation must fail or decode the same values.
	enc := buf[len(garbage()):]
	for cut := range len(enc) {
		if got, err := decode(nil, enc[:cut], len(values)); err == nil {
			for i := range values {
				if !eq(got[i], values[i]) {
					t.Fatalf("truncated to %d bytes: value %d: got %v, want %v", cut, i, got[i], values[i])
				}
			}
		}
		if len(enc) > 512 && cut > 64 {
			break
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 48)] }

func eqComparable[T comparable](a, b T) bool { return a == b }
func eqFloat(a, b float32) bool              { return math.Float32bits(a) == math.Float32bits(b) }
func eqDouble(a, b float64) bool             { return math.Float64bits(a) == math.Float64bits(b) }

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, e := range encodings() {
		t.Run(e.enc.String(), func(t *testing.T) {
			for _, typ := range e.types {
				t.Run(typ, func(t *testing.T) { roundTripType(t, e.enc, typ, rng) })
			}
		})
	}
}

func roundTripType(t *testing.T, enc Encoding, typ string, rng *rand.Rand) {
	switch typ {
	case tBoolean:
		for _, d := range boolDatasets(rng) {
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqComparable, enc.EncodeBoolean, enc.DecodeBoolean)
			})
		}
	case tInt32:
		for _, d := range int32Datasets(rng) {
			if _, ok := enc.(RLEDictionary); ok {
				// Dictionary indices are non-negative.
				d.values = slices.Clone(d.values)
				for i, v := range d.values {
					d.values[i] = v & math.MaxInt32
				}
			}
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqComparable, enc.EncodeInt32, enc.DecodeInt32)
			})
		}
	case tInt64:
		for _, d := range int64Datasets(rng) {
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqComparable, enc.EncodeInt64, enc.DecodeInt64)
			})
		}
	case tInt96:
		for _, d := range int96Datasets(rng) {
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqComparable, enc.EncodeInt96, enc.DecodeInt96)
			})
		}
	case tFloat:
		for _, d := range floatDatasets(rng) {
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqFloat, enc.EncodeFloat, enc.DecodeFloat)
			})
		}
	case tDouble:
		for _, d := range doubleDatasets(rng) {
			t.Run(d.name, func(t *testing.T) {
				roundTrip(t, d.values, eqDouble, enc.EncodeDouble, enc.DecodeDouble)
			})
		}
	case tBytes:
		for _, d := range byteArrayDatasets(rng) {
			t.Run(d.name, func(t *testing.T) { roundTripByteArrays(t, enc, d.values) })
		}
	case tFixed:
		for _, d := range fixedLenDatasets(rng) {
			t.Run(d.name, func(t *testing.T) { roundTripFixed(t, enc, d.values) })
		}
	}
}

func roundTripByteArrays(t *testing.T, enc Encoding, in byteArrays) {
	t.Helper()
	buf, err := enc.EncodeByteArray(garbage(), in.data, in.offsets)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.HasPrefix(buf, garbage()) {
		t.Fatal("encode overwrote dst prefix")
	}
	src := buf[len(garbage()):]
	n := in.len()
	// Decode after one existing value "xy".
	data, offsets, err := enc.DecodeByteArray([]byte("xy"), []uint32{0, 2}, src, n)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(offsets) != n+2 || string(data[:2]) != "xy" || offsets[1] != 2 {
		t.Fatalf("decode: got %d offsets, prefix %q", len(offsets), data[:min(2, len(data))])
	}
	for i := range n {
		got := data[offsets[i+1]:offsets[i+2]]
		want := in.data[in.offsets[i]:in.offsets[i+1]]
		if !bytes.Equal(got, want) {
			t.Fatalf("value %d: got %q, want %q", i, head(got), head(want))
		}
	}
	// Decoding into empty offsets starts them at 0.
	_, offsets, err = enc.DecodeByteArray(nil, nil, src, n)
	if err != nil || len(offsets) != n+1 || offsets[0] != 0 {
		t.Fatalf("decode into nil: %d offsets, err %v", len(offsets), err)
	}
	for cut := range min(len(src), 200) {
		data, offsets, err := enc.DecodeByteArray(nil, nil, src[:cut], n)
		if err == nil {
			for i := range n {
				if !bytes.Equal(data[offsets[i]:offsets[i+1]], in.data[in.offsets[i]:in.offsets[i+1]]) {
					t.Fatalf("truncated to %d: value %d differs", cut, i)
				}
			}
		} else if len(data) != 0 || len(offsets) != 0 {
			t.Fatalf("truncated to %d: error %v but returned %d bytes, %d offsets", cut, err, len(data), len(offsets))
		}
	}
}

func roundTripFixed(t *testing.T, enc Encoding, in fixedLen) {
	t.Helper()
	buf, err := enc.EncodeFixedLenByteArray(garbage(), in.data, in.size)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if !bytes.HasPrefix(buf, garbage()) {
		t.Fatal("encode overwrote dst prefix")
	}
	n := len(in.data) / in.size
	out, err := enc.DecodeFixedLenByteArray([]byte("x"), buf[len(garbage()):], in.size, n)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !bytes.Equal(out[1:], in.data) || out[0] != 'x' {
		t.Fatalf("got % x, want x + % x", head(out), head(in.data))
	}
	if _, err := enc.DecodeFixedLenByteArray(nil, buf[len(garbage()):], in.size, n+1); err == nil {
		t.Fatal("decoding one value more than encoded succeeded")
	}
}

func TestUnsupported(t *testing.T) {
	for _, e := range encodings() {
		supported := func(typ string) bool { return slices.Contains(e.types, typ) }
		check := func(typ string, err error) {
			t.Helper()
			if supported(typ) {
				return
			}
			if !errors.Is(err, ErrNotSupported) {
				t.Errorf("%s %s: got error %v, want ErrNotSupported", e.enc, typ, err)
			}
		}
		dst := []byte{1}
		b, err := e.enc.EncodeBoolean(dst, []bool{true})
		check(tBoolean, err)
		if !supported(tBoolean) && len(b) != 1 {
			t.Errorf("%s: unsupported encode changed dst", e.enc)
		}
		_, err = e.enc.EncodeInt32(nil, []int32{1})
		check(tInt32, err)
		_, err = e.enc.EncodeInt64(nil, []int64{1})
		check(tInt64, err)
		_, err = e.enc.EncodeInt96(nil, [][12]byte{{}})
		check(tInt96, err)
		_, err = e.enc.EncodeFloat(nil, []float32{1})
		check(tFloat, err)
		_, err = e.enc.EncodeDouble(nil, []float64{1})
		check(tDouble, err)
		_, err = e.enc.EncodeByteArray(nil, []byte("a"), []uint32{0, 1})
		check(tBytes, err)
		_, err = e.enc.EncodeFixedLenByteArray(nil, []byte("a"), 1)
		check(tFixed, err)
		src := make([]byte, 64)
		_, err = e.enc.DecodeBoolean(nil, src, 1)
		check(tBoolean, err)
		_, err = e.enc.DecodeInt32(nil, src, 1)
		check(tInt32, err)
		_, err = e.enc.DecodeInt64(nil, src, 1)
		check(tInt64, err)
		_, err = e.enc.DecodeInt96(nil, src, 1)
		check(tInt96, err)
		_, err = e.enc.DecodeFloat(nil, src, 1)
		check(tFloat, err)
		_, err = e.enc.DecodeDouble(nil, src, 1)
		check(tDouble, err)
		_, _, err = e.enc.DecodeByteArray(nil, nil, src, 1)
		check(tBytes, err)
		_, err = e.enc.DecodeFixedLenByteArray(nil, src, 1, 1)
		check(tFixed, err)
	}
}

func TestInvalidInput(t *testing.T) {
	for _, e := range encodings() {
		if _, err := e.enc.DecodeInt32(nil, nil, -1); err == nil {
			t.Errorf("%s: negative count accepted", e.enc)
		}
		if slices.Contains(e.types, tFixed) {
			if _, err := e.enc.EncodeFixedLenByteArray(nil, []byte("abc"), 2); err == nil {
				t.Errorf("%s: 3 bytes of size-2 values accepted", e.enc)
			}
			if _, err := e.enc.EncodeFixedLenByteArray(nil, nil, 0); err == nil {
				t.Errorf("%s: size 0 accepted", e.enc)
			}
		}
		if slices.Contains(e.types, tBytes) {
			if _, err := e.enc.EncodeByteArray(nil, []byte("abc"), []uint32{0, 2, 1}); err == nil {
				t.Errorf("%s: decreasing offsets accepted", e.enc)
			}
			if _, err := e.enc.EncodeByteArray(nil, []byte("abc"), []uint32{0, 4}); err == nil {
				t.Errorf("%s: offset past data accepted", e.enc)
			}
		}
	}
	if _, err := (RLEDictionary{}).EncodeInt32(nil, []int32{1, -1}); err == nil {
		t.Error("RLE_DICTIONARY: negative index accepted")
	}
	if _, err := (ByteStreamSplit{}).DecodeFloat(nil, make([]byte, 9), 2); err == nil {
		t.Error("BYTE_STREAM_SPLIT: 9 bytes accepted as 2 floats")
	}
}
