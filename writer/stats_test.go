package writer

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

func TestCompareSignedBigEndian(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	toBytes := func(v *big.Int, n int) []byte {
		// two's complement, n bytes
		m := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
		x := new(big.Int).Set(v)
		if x.Sign() < 0 {
			x.Add(x, m)
		}
		b := x.FillBytes(make([]byte, n))
		return b
	}
	for i := 0; i < 20000; i++ {
		a := big.NewInt(r.Int64N(1<<40) - 1<<39)
		b := big.NewInt(r.Int64N(1<<40) - 1<<39)
		if i%7 == 0 {
			b.Set(a)
		}
		la, lb := 6+r.IntN(4), 6+r.IntN(4) // different widths, sign-extended
		got := compareSignedBigEndian(toBytes(a, la), toBytes(b, lb))
		if want := a.Cmp(b); got != want {
			t.Fatalf("compare(%v as %d bytes, %v as %d bytes) = %d, want %d", a, la, b, lb, got, want)
		}
	}
}

func TestFloat16ToFloat32(t *testing.T) {
	for _, tc := range []struct {
		bits uint16
		want float32
	}{
		{0x3C00, 1}, {0xC000, -2}, {0x7BFF, 65504}, {0x0001, float32(math.Ldexp(1, -24))},
		{0x0400, float32(math.Ldexp(1, -14))}, {0x7C00, float32(math.Inf(1))}, {0x8000, float32(math.Copysign(0, -1))},
	} {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], tc.bits)
		got := float16ToFloat32(b[:])
		if got != tc.want || math.Signbit(float64(got)) != math.Signbit(float64(tc.want)) {
			t.Errorf("float16 %#04x = %v, want %v", tc.bits, got, tc.want)
		}
	}
	var nan [2]byte
	binary.LittleEndian.PutUint16(nan[:], 0x7E00)
	if !isFloat16NaN(nan[:]) {
		t.Error("0x7E00 is a NaN")
	}
}

func TestTruncatedBounds(t *testing.T) {
	long := bytes.Repeat([]byte("a"), 100)
	b := truncated(bounds{min: long, max: long, ok: true, minExact: true, maxExact: true}, 10, false)
	if string(b.min) != "aaaaaaaaaa" || b.minExact {
		t.Errorf("min = %q exact=%v", b.min, b.minExact)
	}
	if string(b.max) != "aaaaaaaaab" || b.maxExact {
		t.Errorf("max = %q exact=%v", b.max, b.maxExact)
	}
	// A max made of 0xFF bytes has no shorter upper bound: kept whole and exact.
	ff := bytes.Repeat([]byte{0xFF}, 20)
	b = truncated(bounds{min: ff, max: ff, ok: true, minExact: true, maxExact: true}, 8, false)
	if !bytes.Equal(b.max, ff) || !b.maxExact {
		t.Errorf("all-0xFF max = %x exact=%v", b.max, b.maxExact)
	}
	// Text is cut on rune boundaries and stays valid UTF-8, and the bounds
	// still bound the value.
	r := rand.New(rand.NewPCG(5, 6))
	alphabet := []rune("aé€😀\U0010FFFFz")
	for i := 0; i < 2000; i++ {
		var s []rune
		for j := 0; j < 5+r.IntN(30); j++ {
			s = append(s, alphabet[r.IntN(len(alphabet))])
		}
		v := []byte(string(s))
		n := 1 + r.IntN(20)
		b := truncated(bounds{min: v, max: v, ok: true, minExact: true, maxExact: true}, n, true)
		if !utf8.Valid(b.min) || !utf8.Valid(b.max) {
			t.Fatalf("%q cut to %d: invalid UTF-8 bounds %q %q", v, n, b.min, b.max)
		}
		if len(b.min) > n || (len(b.max) > n && !b.maxExact) {
			t.Fatalf("%q cut to %d: bounds too long: %q %q", v, n, b.min, b.max)
		}
		if bytes.Compare(b.min, v) > 0 || bytes.Compare(b.max, v) < 0 {
			t.Fatalf("%q cut to %d: [%q, %q] does not bound it", v, n, b.min, b.max)
		}
	}
}

// TestFloatBounds holds floatBounds to the loop it replaced, which skipped
// NaNs and took min and max, on NaNs in every position, signed zeros and
// infinities: the bounds must be equal as numbers (pageBounds writes a
// zero bound's sign itself) and the NaNs counted.
func TestFloatBounds(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	tests := []struct {
		name string
		vs   []float64
	}{
		{"empty", nil},
		{"nan only", []float64{nan, nan}},
		{"nan first", []float64{nan, 3, -2, nan, 7}},
		{"nan last", []float64{1, 2, nan}},
		{"zeros", []float64{0, negZero, 0}},
		{"negative zero first", []float64{negZero, 5, 0}},
		{"infinities", []float64{-inf, 1, inf, nan}},
		{"one", []float64{42}},
	}
	r := rand.New(rand.NewPCG(1, 9))
	random := make([]float64, 1000)
	for i := range random {
		random[i] = r.NormFloat64()
		if i%97 == 0 {
			random[i] = nan
		}
	}
	tests = append(tests, struct {
		name string
		vs   []float64
	}{"random", random})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lo, hi float64
			var nans int64
			found := false
			for _, v := range tt.vs {
				if v != v {
					nans++
					continue
				}
				if !found {
					lo, hi, found = v, v, true
					continue
				}
				lo, hi = min(lo, v), max(hi, v)
			}
			gotLo, gotHi, gotNaNs, gotFound := floatBounds(tt.vs)
			if gotFound != found || gotNaNs != nans || found && (gotLo != lo || gotHi != hi) {
				t.Errorf("floatBounds = %v, %v, %d, %v; want %v, %v, %d, %v", gotLo, gotHi, gotNaNs, gotFound, lo, hi, nans, found)
			}
			f32 := make([]float32, len(tt.vs))
			for i, v := range tt.vs {
				f32[i] = float32(v)
			}
			lo32, hi32, nans32, found32 := floatBounds(f32)
			if found32 != found || nans32 != nans || found && (lo32 != float32(lo) || hi32 != float32(hi)) {
				t.Errorf("float32: floatBounds = %v, %v, %d, %v; want %v, %v, %d, %v", lo32, hi32, nans32, found32, lo, hi, nans, found)
			}
		})
	}
}
