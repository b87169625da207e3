package reader

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pqsink/pqsink/internal/jsontext"
)

// checkDouble requires appendDouble to write f as jsontext.AppendFloat.
func checkDouble(t *testing.T, f float64) {
	t.Helper()
	want := string(jsontext.AppendFloat([]byte("x"), f, 64))
	if got := string(appendDouble([]byte("x"), f)); got != want {
		t.Fatalf("%v (%#x): got %s, want %s", f, math.Float64bits(f), got, want)
	}
}

// TestAppendDouble compares appendDouble with jsontext.AppendFloat on
// special values, on doubles near the fast path's bounds, on decimals of
// 0 to 8 places (the fast path and just past it), and on random bits.
func TestAppendDouble(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1, -1, 0.1, 0.2, 0.3,
		1e-6, 1e-7, 9.999999e-7, 1.5e-6, 1 << 50, 1<<50 - 1, 1<<50 - 0.5, 1<<50 + 1, 1 << 53, 1e21, 1e20, 123456789.0001,
		1546.72, 0.2894365736814082, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.30000000000000004,
		112589990684262.4, 11258999068426.24, 1125899906842.624, 9007199254740.993, 0.1 + 0.2, 100, 1e15, 1e16} {
		checkDouble(t, f)
		checkDouble(t, -f)
		checkDouble(t, math.Nextafter(f, math.Inf(1)))
		checkDouble(t, math.Nextafter(f, math.Inf(-1)))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		k := r.IntN(9)
		m := r.Int64N(int64(1) << (1 + r.IntN(55)))
		f := float64(m) / math.Pow(10, float64(k))
		if r.IntN(2) == 0 {
			f = -f
		}
		checkDouble(t, f)
		checkDouble(t, math.Nextafter(f, math.Inf(1)))
		checkDouble(t, math.Float64frombits(r.Uint64()))
	}
}

// FuzzAppendDouble holds appendDouble to jsontext.AppendFloat.
func FuzzAppendDouble(f *testing.F) {
	for _, x := range []float64{0, 1546.72, -0.25, 1 << 50, 1e-6, 0.2894365736814082} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		checkDouble(t, math.Float64frombits(bits))
	})
}

// BenchmarkAppendDouble renders doubles like the reference events' (an
// amount of two decimals, a random fraction) and integers, by appendDouble
// and by jsontext.AppendFloat.
func BenchmarkAppendDouble(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	kinds := []struct {
		name string
		gen  func() float64
	}{
		{"amount", func() float64 { return float64(r.IntN(500000)) / 100 }},
		{"fraction", r.Float64},
		{"integer", func() float64 { return float64(r.IntN(100000)) }},
	}
	for _, k := range kinds {
		vals := make([]float64, 4096)
		for i := range vals {
			vals[i] = k.gen()
		}
		for _, c := range []struct {
			name string
			fn   func([]byte, float64) []byte
		}{{"fast", appendDouble}, {"jsontext", func(d []byte, f float64) []byte { return jsontext.AppendFloat(d, f, 64) }}} {
			b.Run(k.name+"/"+c.name, func(b *testing.B) {
				var dst []byte
				for i := 0; b.Loop(); i++ {
					dst = c.fn(dst[:0], vals[i%len(vals)])
				}
			})
		}
	}
}
