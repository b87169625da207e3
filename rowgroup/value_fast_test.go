package rowgroup

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// numberLiterals are spellings around the limits of the fast paths.
var numberLiterals = []string{
	"0", "-0", "1", "-1", "0.0", "-0.0", "449.38", "0.1", "0.3", "1.5", "123456789.987654321",
	"9007199254740992", "9007199254740993", "-9007199254740993", "900719925474099.3",
	"0.000000000000000001", "1234567890123456789", "12345678901234567890", "9999999999999999999",
	"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551615", "18446744073709551616", "255", "256", "-128", "-129",
	"1e2", "1.0", "1.5e1", "-1E+2", "01", "-", "", ".5", "1.", "1..2", "+1", "0x10", "1_0",
	"19.9900", "19.99001", "19.99000", "-.5", "00.5", "0.", "1.2.3", "99999999999999.9999", "999999999999999999",
	"100000000000000.0000", "0.000000001", "-0.0000", "1234.5",
}

// randomLiteral returns a JSON number literal of up to 22 digits, with or
// without sign, fraction and exponent.
func randomLiteral(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(3) == 0 {
		b.WriteByte('-')
	}
	n := 1 + r.IntN(20)
	for i := range n {
		d := byte('0' + r.IntN(10))
		if i == 0 && n > 1 && d == '0' {
			d = '1'
		}
		b.WriteByte(d)
	}
	if r.IntN(2) == 0 {
		b.WriteByte('.')
		for range 1 + r.IntN(18) {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	if r.IntN(8) == 0 {
		b.WriteString("e")
		b.WriteString(strconv.Itoa(r.IntN(40) - 20))
	}
	return b.String()
}

// checkFastNumbers compares the fast paths with the general ones on lit.
func checkFastNumbers(t *testing.T, lit string) {
	t.Helper()
	b := []byte(lit)
	if _, valid := parseDecimalLiteral(b); valid {
		if v, ok := exactFloat64(b); ok {
			want, err := strconv.ParseFloat(lit, 64)
			if err != nil || math.Float64bits(v) != math.Float64bits(want) {
				t.Errorf("exactFloat64(%q) = %v (%#x), strconv gives %v (%#x), %v", lit, v, math.Float64bits(v), want, math.Float64bits(want), err)
			}
		}
	}
	for _, ps := range [][2]int32{{18, 4}, {9, 2}, {4, 4}, {18, 0}, {1, 0}, {10, 9}} {
		got, gerr := parseDecimalInt(b, ps[0], ps[1])
		want, werr := decimalIntFromLiteral(b, ps[0], ps[1])
		if got != want || gerr != werr {
			t.Errorf("parseDecimalInt(%q, %d, %d) = %d, %v; general path gives %d, %v", lit, ps[0], ps[1], got, gerr, want, werr)
		}
	}
	for _, r := range []intRange{int64Range, int32Range, uint32Range, {pos: math.MaxUint64}, {neg: 128, pos: 127}} {
		got, gerr := parseInteger(b, r)
		want, werr := parseDecimalInteger(b, r)
		if got != want || gerr != werr {
			t.Errorf("parseInteger(%q, %+v) = %d, %v; general path gives %d, %v", lit, r, got, gerr, want, werr)
		}
	}
}

func TestNumberFastPaths(t *testing.T) {
	for _, lit := range numberLiterals {
		checkFastNumbers(t, lit)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		checkFastNumbers(t, randomLiteral(r))
	}
	// The fast paths must actually take the common spellings.
	for _, lit := range []string{"449.38", "-0.5", "26687", "9007199254740992"} {
		if _, ok := exactFloat64([]byte(lit)); !ok {
			t.Errorf("exactFloat64(%q) fell back to strconv", lit)
		}
	}
	for _, lit := range []string{"0", "-26687", "9999999999999999999"} {
		if _, _, ok := plainInteger([]byte(lit)); !ok {
			t.Errorf("plainInteger(%q) fell back to the general path", lit)
		}
	}
	for _, lit := range []string{"19.9900", "-0.5", "12", "0"} {
		if _, ok := plainDecimalInt([]byte(lit), 18, 4); !ok {
			t.Errorf("plainDecimalInt(%q, 18, 4) fell back to the general path", lit)
		}
	}
}

func FuzzNumberFastPaths(f *testing.F) {
	for _, lit := range numberLiterals {
		f.Add(lit)
	}
	f.Fuzz(checkFastNumbers)
}

func TestAppendUUID(t *testing.T) {
	tests := []struct {
		in   string
		want string // hex of the 16 bytes, "" for an error
	}{
		{"123e4567-e89b-12d3-a456-426614174000", "123e4567e89b12d3a456426614174000"},
		{"ABCDEF01-2345-6789-abcd-ef0123456789", "abcdef0123456789abcdef0123456789"},
		{"00000000-0000-0000-0000-000000000000", "00000000000000000000000000000000"},
		{"123e4567-e89b-12d3-a456-42661417400g", ""},
		{"123e4567-e89b-12d3-a456-4266141740@0", ""}, // '@' | 0x20 is '`', just below 'a'
		{"123e4567-e89b-12d3-a456-4266141740`0", ""},
		{"123e4567-e89b-12d3-a456-4266141740/0", ""},
		{"123e4567-e89b-12d3-a456-4266141740:0", ""},
		{"123e4567+e89b-12d3-a456-426614174000", ""},
		{"123e4567e89b12d3a456426614174000", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := appendUUID([]byte("x"), []byte(tt.in))
		if tt.want == "" {
			if err == nil || string(got) != "x" {
				t.Errorf("appendUUID(%q) = %x, %v; want an error and dst untouched", tt.in, got, err)
			}
			continue
		}
		if err != nil || len(got) != 17 || string(got[1:]) != string(mustHex(t, tt.want)) {
			t.Errorf("appendUUID(%q) = %x, %v; want x%s", tt.in, got, err, tt.want)
		}
	}
	// Every byte value in every digit position: accepted exactly when it is
	// a hex digit, and decoded to its value.
	base := []byte("00000000-0000-0000-0000-000000000000")
	for _, pos := range []int{0, 7, 9, 35} {
		for c := range 256 {
			in := append([]byte(nil), base...)
			in[pos] = byte(c)
			want, werr := strconv.ParseUint(string([]byte{byte(c)}), 16, 8)
			got, err := appendUUID(nil, in)
			if (err == nil) != (werr == nil) {
				t.Fatalf("appendUUID with %q at %d: err %v, want error %v", byte(c), pos, err, werr != nil)
			}
			if err == nil {
				digit := pos - strings.Count(string(in[:pos]), "-")
				if v := got[digit/2] >> (4 * (1 - digit%2)) & 0xf; uint64(v) != want {
					t.Fatalf("appendUUID with %q at %d decoded %x, want %x", byte(c), pos, v, want)
				}
			}
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b := make([]byte, len(s)/2)
	for i := range b {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		b[i] = byte(v)
	}
	return b
}

// TestExactFloat64Long checks the 128-bit division path of exactFloat64,
// for literals of 17 to 19 digits (what strconv's shortest formatting of
// a random float64 gives), ties included, against strconv.ParseFloat.
func TestExactFloat64Long(t *testing.T) {
	check := func(lit string) {
		t.Helper()
		v, ok := exactFloat64([]byte(lit))
		if !ok {
			digits := strings.TrimPrefix(strings.TrimLeft(lit, "-"), "0.")
			if !strings.ContainsAny(lit, "eE") && len(strings.Replace(digits, ".", "", 1)) <= 19 {
				t.Errorf("exactFloat64(%q) fell back to strconv", lit)
			}
			return
		}
		want, err := strconv.ParseFloat(lit, 64)
		if err != nil || math.Float64bits(v) != math.Float64bits(want) {
			t.Errorf("exactFloat64(%q) = %v (%#x), strconv gives %v (%#x)", lit, v, math.Float64bits(v), want, math.Float64bits(want))
		}
	}
	for _, lit := range []string{
		"4503599627370496.5", "4503599627370497.5", "-4503599627370496.5", "9007199254740993", "9007199254740995",
		"18014398509481985", "18014398509481986", "18014398509481987", "9999999999999999999", "0.9999999999999999999",
		"0.0000000000000000001", "0.6046602879796196", "0.94050909314174", "1.0000000000000000001", "9223372036854775807",
		"9223372036854775808", "922337203685477580.7", "1844674407370955161", "0.1000000000000000055511151231257827",
	} {
		check(lit)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		check(strconv.FormatFloat(r.Float64(), 'g', -1, 64))
		check(strconv.FormatFloat(r.NormFloat64()*math.Pow(10, float64(r.IntN(19))), 'f', -1, 64))
		check(randomDigits(r))
	}
}

// randomDigits returns a literal of 1 to 19 digits with a point somewhere
// or none, and maybe a sign.
func randomDigits(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	n := 1 + r.IntN(19)
	point := r.IntN(n + 1) // after digit point-1; n means none
	for i := range n {
		d := byte('0' + r.IntN(10))
		if i == 0 && point != 1 && d == '0' {
			d = '1'
		}
		b.WriteByte(d)
		if i+1 == point && i+1 < n {
			b.WriteByte('.')
		}
	}
	return b.String()
}
