package jsonschemafmt

import (
	"math/big"
	"testing"
)

func TestAppendDecimalNumber(t *testing.T) {
	for _, tc := range []struct {
		unscaled int64
		scale    int32
		want     string
	}{
		{1230, 2, "12.3"}, {1200, 2, "12"}, {5, 2, "0.05"}, {-5, 2, "-0.05"}, {0, 2, "0"}, {-1230, 2, "-12.3"},
		{7, 0, "7"}, {-7, 0, "-7"}, {123456, 6, "0.123456"}, {10, 1, "1"},
	} {
		if got := string(appendDecimalNumber(nil, big.NewInt(tc.unscaled), tc.scale)); got != tc.want {
			t.Errorf("%d×10^-%d: %s, want %s", tc.unscaled, tc.scale, got, tc.want)
		}
	}
}
