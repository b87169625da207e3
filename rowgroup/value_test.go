package rowgroup

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/pqsink/pqsink/schema"
)

func TestParseDecimalLiteralGrammar(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"0", true}, {"-0", true}, {"1", true}, {"10.50", true}, {"1e5", true}, {"1E+5", true},
		{"1.5e-3", true}, {"-0.0", true},
		{"", false}, {"-", false}, {"+1", false}, {"01", false}, {"1.", false}, {".5", false},
		{"1e", false}, {"1e+", false}, {"0x10", false}, {" 1", false}, {"1 ", false},
		{"NaN", false}, {"Infinity", false}, {"1_000", false}, {"--1", false}, {"1.2.3", false},
	}
	for _, tt := range tests {
		if _, ok := parseDecimalLiteral([]byte(tt.in)); ok != tt.ok {
			t.Errorf("parseDecimalLiteral(%q) ok = %v, want %v", tt.in, ok, tt.ok)
		}
	}
}

// TestDaysFromCivil checks the calendar arithmetic against package time
// over four centuries either side of the epoch.
func TestDaysFromCivil(t *testing.T) {
	epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2400; d = d.AddDate(0, 0, 1) {
		want := (d.Unix() - epoch.Unix()) / 86400
		if got := daysFromCivil(int64(d.Year()), int64(d.Month()), int64(d.Day())); got != want {
			t.Fatalf("daysFromCivil(%s) = %d, want %d", d.Format(time.DateOnly), got, want)
		}
		if d.Day() == 1 {
			if got, ok := parseDate([]byte(d.Format(time.DateOnly))); !ok || got != want {
				t.Fatalf("parseDate(%s) = %d, %v", d.Format(time.DateOnly), got, ok)
			}
		}
	}
}

// TestParseTimestampMatchesTime compares RFC 3339 parsing with package time
// on random instants and offsets.
func TestParseTimestampMatchesTime(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var dc dateCache
	for i := range 20000 {
		sec := r.Int64N(2*253402300799) - 253402300799/2
		nsec := r.Int64N(1e9)
		off := (r.IntN(28*60) - 14*60) * 60
		tm := time.Unix(sec, nsec).In(time.FixedZone("", off))
		if tm.Year() < 0 || tm.Year() > 9999 {
			continue
		}
		text := tm.Format(time.RFC3339Nano)
		if i%3 != 0 {
			// The same day again, for the date cache.
			tm = tm.Add(time.Duration(r.Int64N(int64(time.Hour))))
			if tm.Year() > 9999 {
				continue
			}
			text = tm.Format(time.RFC3339Nano)
		}
		got, err := parseTimestamp([]byte(text), schema.Nanos, true, &dc)
		if err != nil {
			// Only nanosecond overflow may fail.
			if tm.Before(time.Unix(0, math.MinInt64)) || tm.After(time.Unix(0, math.MaxInt64)) {
				continue
			}
			t.Fatalf("parseTimestamp(%s): %v", text, err)
		}
		if want := tm.UnixNano(); got != want && tm.Year() > 1677 && tm.Year() < 2262 {
			t.Fatalf("parseTimestamp(%s) = %d, want %d", text, got, want)
		}
		micros, err := parseTimestamp([]byte(tm.Truncate(time.Microsecond).Format(time.RFC3339Nano)), schema.Micros, true, nil)
		if err != nil || micros != tm.Truncate(time.Microsecond).UnixMicro() {
			t.Fatalf("micros %s = %d, %v; want %d", text, micros, err, tm.UnixMicro())
		}
	}
}

// TestParseFloat16RoundTrip parses the shortest decimal of every finite
// binary16 value and expects the same bits back.
func TestParseFloat16RoundTrip(t *testing.T) {
	for bits := 0; bits < 1<<16; bits++ {
		h := uint16(bits)
		if h&0x7c00 == 0x7c00 {
			continue // Inf and NaN
		}
		v := float16ToFloat64(h)
		text := strconv.FormatFloat(v, 'g', -1, 64)
		if h == 0x8000 {
			text = "-0"
		}
		got, err := parseFloat16([]byte(text))
		if err != nil || got != h {
			t.Fatalf("parseFloat16(%s) = %#04x, %v; want %#04x", text, got, err, h)
		}
	}
}

// TestParseFloat16Rounding compares with math/big rounding of the exact
// decimal to 11 significant bits, for random decimals in the normal range.
func TestParseFloat16Rounding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		// Up to 20 significant digits, exponents spanning the normal range.
		digits := strconv.FormatUint(r.Uint64()>>r.IntN(60), 10)
		text := digits + "e" + strconv.Itoa(r.IntN(16)-len(digits)-3)
		exact, _, err := big.ParseFloat(text, 10, 11, big.ToNearestEven)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := exact.Float64()
		got, err := parseFloat16([]byte(text))
		if want > 65504 || want < 0x1p-14 {
			continue // outside the normal range: big.Float has no binary16 limits
		}
		if err != nil {
			t.Fatalf("parseFloat16(%s): %v", text, err)
		}
		if g := float16ToFloat64(got); g != want {
			t.Fatalf("parseFloat16(%s) = %v, want %v", text, g, want)
		}
	}
}

// float16ToFloat64 is the reference decoding of binary16 bits.
func float16ToFloat64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	if exp == 0 {
		return sign * math.Ldexp(frac, -24)
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

func TestMinTwosComplementLen(t *testing.T) {
	for _, tt := range []struct {
		v    int64
		want int
	}{
		{0, 1}, {127, 1}, {128, 2}, {-128, 1}, {-129, 2}, {32767, 2}, {-32768, 2}, {32768, 3},
		{math.MaxInt64, 8}, {math.MinInt64, 8},
	} {
		if got := minTwosComplementLen(tt.v); got != tt.want {
			t.Errorf("minTwosComplementLen(%d) = %d, want %d", tt.v, got, tt.want)
		}
	}
}

// FuzzDecimal checks the exact decimal conversion against math/big: when a
// literal is accepted, the stored two's complement integer divided by
// 10^scale equals the literal's value; when it is rejected, it really has
// too many digits.
func FuzzDecimal(f *testing.F) {
	for _, s := range []string{"0", "12.3400", "-1.00001", "1e38", "-99999999999999999999.5", "123e-5", "0.000", "7E+2"} {
		f.Add(s, uint8(10), uint8(4))
	}
	var z decimalScratch
	f.Fuzz(func(t *testing.T, lit string, precision, scale uint8) {
		p := int32(precision%60) + 1
		s := int32(scale) % (p + 1)
		if len(lit) > 200 {
			return
		}
		want, ok := new(big.Rat).SetString(lit)
		_, valid := parseDecimalLiteral([]byte(lit))
		for _, fixed := range []bool{false, true} {
			size := 0
			if fixed {
				size = 26 // enough for 60 digits
			}
			out, err := appendDecimal(nil, []byte(lit), p, s, size, fixed, &z)
			if !valid {
				if err == nil {
					t.Fatalf("accepted %q", lit)
				}
				continue
			}
			if !ok {
				// big.Rat refuses exponents beyond a million; only zero
				// fits any decimal then.
				if err == nil && fromTwos(out).Sign() != 0 {
					t.Fatalf("DECIMAL(%d,%d) %q = %x, want an error", p, s, lit, out)
				}
				continue
			}
			scaled := new(big.Rat).Mul(want, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
			fits := scaled.IsInt() && len(scaled.Num().String())-boolInt(scaled.Num().Sign() < 0) <= int(p) || scaled.Num().Sign() == 0
			if (err == nil) != fits {
				t.Fatalf("DECIMAL(%d,%d) %q: err %v, want fits=%v", p, s, lit, err, fits)
			}
			if err != nil {
				continue
			}
			got := fromTwos(out)
			if got.Cmp(scaled.Num()) != 0 {
				t.Fatalf("DECIMAL(%d,%d) %q = %v, want %v", p, s, lit, got, scaled.Num())
			}
			if !fixed && len(out) > 1 && (out[0] == 0 && out[1] < 0x80 || out[0] == 0xff && out[1] >= 0x80) {
				t.Fatalf("%q: %x is not minimal", lit, out)
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fromTwos reads big-endian two's complement.
func fromTwos(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
