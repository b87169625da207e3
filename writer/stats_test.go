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
