package encoding

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

// Golden bytes, checked by hand against the examples of Encodings.md.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenHybrid(t *testing.T) {
	tests := []struct {
		name   string
		values []uint32
		width  int
		want   string
	}{
		// Encodings.md: 0..7 at width 3 pack to 10001000 11000110 11111010,
		// after the header of one group: 1<<1 | 1.
		{"spec bit-packed", []uint32{0, 1, 2, 3, 4, 5, 6, 7}, 3, "03 88 c6 fa"},
		// One RLE run: header 100<<1 = 200 as ULEB128, value in one byte.
		{"rle run", repeat(1, 100), 1, "c8 01 01"},
		// Width 0: a header only.
		{"width 0", repeat(0, 10), 0, "14"},
		// Width 9: the repeated value takes two bytes, little endian.
		{"two-byte value", repeat(300, 9), 9, "12 2c 01"},
		// The run of 5s starts mid-group: it fills the group, then 15
		// remain for an RLE run (header 15<<1).
		{"run after group", append([]uint32{1, 2, 3}, repeat(5, 20)...), 3, "03 d1 da b6 1e 05"},
		// A run of 7 stays bit-packed, and the tail is padded.
		{"short run", append(repeat(2, 7), 1), 2, "03 aa 6a"},
		{"padded", []uint32{1, 1, 1}, 1, "03 07"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			got := AppendHybrid(nil, tt.values, tt.width)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendHybrid = % x, want % x", got, want)
			}
			dec, err := DecodeHybrid(nil, want, tt.width, len(tt.values))
			if err != nil {
				t.Fatal(err)
			}
			if !equalSlices(dec, tt.values) {
				t.Fatalf("DecodeHybrid = %v, want %v", dec, tt.values)
			}
		})
	}
}

func TestGoldenBitPackedLevels(t *testing.T) {
	// Encodings.md: 0..7 at width 3, most significant bit first.
	got, err := DecodeBitPackedLevels(nil, []byte{0b00000101, 0b00111001, 0b01110111}, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint8{0, 1, 2, 3, 4, 5, 6, 7}; !bytes.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// 32 values of 2 bits take 8 bytes; 33 do not fit.
	if _, err := DecodeBitPackedLevels(nil, make([]byte, 8), 2, 33); err == nil {
		t.Fatal("33 values of 2 bits decoded from 8 bytes")
	}
}

func TestGoldenDeltaBinaryPacked(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
		want   string
	}{
		// Encodings.md example 1 with a valid block of 128 values in 4
		// miniblocks: header 128, 4, 5 values, first 1 (zigzag 2); block
		// min delta 1 (zigzag 2) and four zero widths.
		{"example 1", []int64{1, 2, 3, 4, 5}, "8001 04 05 02  02 00000000"},
		// Example 2: min delta -2 (zigzag 3), relative deltas
		// 0,0,0,3,3,3,3 in one 2-bit miniblock of 32 values (8 bytes).
		{"example 2", []int64{7, 5, 3, 1, 2, 3, 4, 5}, "8001 04 08 0e  03 02000000 c03f000000000000"},
		{"empty", nil, "8001 04 00 00"},
		{"one", []int64{-1}, "8001 04 01 01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unhex(t, tt.want)
			got, err := DeltaBinaryPacked{}.EncodeInt64(nil, tt.values)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("EncodeInt64 = % x, %v; want % x", got, err, want)
			}
			values32 := make([]int32, len(tt.values))
			for i, v := range tt.values {
				values32[i] = int32(v)
			}
			got, err = DeltaBinaryPacked{}.EncodeInt32(nil, values32)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("EncodeInt32 = % x, %v; want % x", got, err, want)
			}
			dec, err := DeltaBinaryPacked{}.DecodeInt64(nil, want, len(tt.values))
			if err != nil || !equalSlices(dec, tt.values) {
				t.Fatalf("DecodeInt64 = %v, %v; want %v", dec, err, tt.values)
			}
		})
	}
}

func TestDeltaWrapAround(t *testing.T) {
	// MaxInt32 to MinInt32 is a delta of +1 in 32-bit arithmetic, so the
	// block needs no bits at all.
	got, err := DeltaBinaryPacked{}.EncodeInt32(nil, []int32{math.MaxInt32, math.MinInt32, math.MinInt32 + 1})
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, "8001 04 03 feffffff0f  02 00000000")
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	// Deltas MinInt and MaxInt span the whole type: 32 or 64 bits, no more.
	got, _ = DeltaBinaryPacked{}.EncodeInt32(nil, []int32{0, math.MinInt32, -1})
	if w := got[len(got)-32*4-4]; w != 32 {
		t.Fatalf("int32 full spread: miniblock width %d, want 32", w)
	}
	got, _ = DeltaBinaryPacked{}.EncodeInt64(nil, []int64{0, math.MinInt64, -1})
	if w := got[len(got)-32*8-4]; w != 64 {
		t.Fatalf("int64 full spread: miniblock width %d, want 64", w)
	}
}

func TestDeltaDecodeErrors(t *testing.T) {
	tests := []struct {
		name, src string
		n         int
		bits      int
		wantErr   string
	}{
		{"width 33 for int32", "8001 04 02 00 00 21000000" + strings.Repeat("00", 132), 2, 32, "miniblock bit width 33 > 32 at offset 6"},
		{"width 65 for int64", "8001 04 02 00 00 41000000" + strings.Repeat("00", 260), 2, 64, "miniblock bit width 65 > 64"},
		{"block size 100", "64 04 02 00", 2, 64, "block size 100"},
		{"miniblocks 3", "8001 03 02 00", 2, 64, "3 miniblocks"},
		{"count short", "8001 04 01 00", 2, 64, "header holds 1 values, page needs 2"},
		{"missing block", "8001 04 02 00", 2, 64, "invalid block min delta"},
		{"missing widths", "8001 04 02 00 00 00", 2, 64, "miniblock bit widths"},
		{"short miniblock", "8001 04 02 00 00 01000000 00", 2, 64, "miniblock at offset 10"},
		{"bad varint", "ffffffffffffffffffff01", 1, 64, "invalid block size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := unhex(t, tt.src)
			var err error
			if tt.bits == 32 {
				_, err = DeltaBinaryPacked{}.DecodeInt32(nil, src, tt.n)
			} else {
				_, err = DeltaBinaryPacked{}.DecodeInt64(nil, src, tt.n)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestGoldenDeltaLengthByteArray(t *testing.T) {
	// Encodings.md: lengths 5,5,6,6 (first 5, deltas 0,1,0 at width 1),
	// then the bytes.
	in := makeByteArrays([]byte("Hello"), []byte("World"), []byte("Foobar"), []byte("ABCDEF"))
	want := append(unhex(t, "8001 04 04 0a  00 01000000 02000000"), "HelloWorldFoobarABCDEF"...)
	got, err := DeltaLengthByteArray{}.EncodeByteArray(nil, in.data, in.offsets)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got % x, %v; want % x", got, err, want)
	}
}

func TestGoldenDeltaByteArray(t *testing.T) {
	// Encodings.md: prefix lengths 0,2,0,3 (deltas 2,-2,3: min -2,
	// relative 4,0,5 at width 3), suffix lengths 4,2,6,5 (deltas
	// -2,4,-1: min -2, relative 0,6,1 at width 3), then the suffixes.
	in := makeByteArrays([]byte("axis"), []byte("axle"), []byte("babble"), []byte("babyhood"))
	want := unhex(t, "8001 04 04 00  03 03000000 440100000000000000000000"+
		"8001 04 04 08  03 03000000 700000000000000000000000")
	want = append(want, "axislebabbleyhood"...)
	got, err := DeltaByteArray{}.EncodeByteArray(nil, in.data, in.offsets)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got  % x, %v\nwant % x", got, err, want)
	}
	// A prefix longer than the previous value is corrupt.
	bad := unhex(t, "8001 04 02 00  0a 00000000  8001 04 02 02 00 00000000 6162")
	if _, _, err := (DeltaByteArray{}).DecodeByteArray(nil, nil, bad, 2); err == nil || !strings.Contains(err.Error(), "prefix length 5 exceeds") {
		t.Fatalf("got %v, want prefix length error", err)
	}
}

func TestGoldenByteStreamSplit(t *testing.T) {
	// Encodings.md: three floats AABBCCDD 00112233 A3B4C5D6.
	in := []float32{
		math.Float32frombits(0xDDCCBBAA),
		math.Float32frombits(0x33221100),
		math.Float32frombits(0xD6C5B4A3),
	}
	want := unhex(t, "AA 00 A3 BB 11 B4 CC 22 C5 DD 33 D6")
	got, _ := ByteStreamSplit{}.EncodeFloat(nil, in)
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	got, _ = ByteStreamSplit{}.EncodeFixedLenByteArray(nil, unhex(t, "AABBCCDD 00112233 A3B4C5D6"), 4)
	if !bytes.Equal(got, want) {
		t.Fatalf("FIXED_LEN_BYTE_ARRAY: got % x, want % x", got, want)
	}
}

func TestGoldenPlainAndRLE(t *testing.T) {
	check := func(name string, got []byte, err error, want string) {
		t.Helper()
		if w := unhex(t, want); err != nil || !bytes.Equal(got, w) {
			t.Errorf("%s: got % x, %v; want % x", name, got, err, w)
		}
	}
	b, err := Plain{}.EncodeBoolean(nil, []bool{true, false, true, true, false, false, false, false, true})
	check("PLAIN BOOLEAN", b, err, "0d 01")
	b, err = Plain{}.EncodeInt32(nil, []int32{1, -2})
	check("PLAIN INT32", b, err, "01000000 feffffff")
	b, err = Plain{}.EncodeInt64(nil, []int64{math.MinInt64})
	check("PLAIN INT64", b, err, "0000000000000080")
	b, err = Plain{}.EncodeDouble(nil, []float64{1})
	check("PLAIN DOUBLE", b, err, "000000000000f03f")
	in := makeByteArrays([]byte("ab"), nil)
	b, err = Plain{}.EncodeByteArray(nil, in.data, in.offsets)
	check("PLAIN BYTE_ARRAY", b, err, "02000000 6162 00000000")
	b, err = RLE{}.EncodeBoolean(nil, []bool{true, true, true, true, true, true, true, true, true, true})
	check("RLE BOOLEAN", b, err, "02000000 14 01")
	b, err = RLEDictionary{}.EncodeInt32(nil, []int32{0, 1, 2, 3, 4, 5, 6, 7})
	check("RLE_DICTIONARY", b, err, "03 03 88 c6 fa")
	b, err = RLEDictionary{}.EncodeInt32(nil, nil)
	check("RLE_DICTIONARY empty", b, err, "00")
}

func repeat(v uint32, n int) []uint32 {
	s := make([]uint32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func equalSlices[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
