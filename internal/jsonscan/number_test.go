package jsonscan

import (
	"strconv"
	"testing"
)

func TestUnderflows(t *testing.T) {
	cases := []struct {
		lit     string
		bitSize int
		want    bool
	}{
		{"0", 64, false},
		{"-0.000e5", 64, false},
		{"1e-400", 64, true},
		{"-1e-400", 64, true},
		{"5e-324", 64, false},                  // the smallest subnormal, as printed
		{"4.9e-324", 64, true},                 // rounds to it, but is not it
		{"2.2250738585072014e-308", 64, false}, // the smallest normal
		{"1e-300", 64, false},
		{"1e-50", 32, true},
		{"1e-45", 32, false},  // the smallest float32 subnormal, as printed
		{"1.4e-45", 32, true}, // rounds to it, but is not it
		{"1e-30", 32, false},
		{"123.5", 64, false},
	}
	for _, c := range cases {
		f, _ := strconv.ParseFloat(c.lit, c.bitSize)
		if got := Underflows([]byte(c.lit), f, c.bitSize); got != c.want {
			t.Errorf("Underflows(%s, %g, %d) = %v, want %v", c.lit, f, c.bitSize, got, c.want)
		}
	}
}
