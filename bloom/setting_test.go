package bloom

import (
	"strings"
	"testing"
)

func TestParseSetting(t *testing.T) {
	for _, tc := range []struct {
		in     string
		column string
		fpp    float64
		err    string
	}{
		{in: "user_id", column: "user_id", fpp: DefaultFPP},
		{in: "user.email:0.001", column: "user.email", fpp: 0.001},
		{in: "id:1e-300", column: "id", fpp: 1e-300},
		{in: "", err: "want column[:fpp]"},
		{in: ":0.1", err: "want column[:fpp]"},
		{in: "a..b", err: "want column[:fpp]"},
		{in: "a:2", err: `the false-positive probability "2" is not a number between 0 and 1`},
		{in: "a:0", err: `the false-positive probability "0" is not`},
		{in: "a:x", err: `the false-positive probability "x" is not`},
	} {
		col, fpp, err := ParseSetting(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSetting(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || col != tc.column || fpp != tc.fpp {
			t.Errorf("ParseSetting(%q) = %q, %g, %v; want %q, %g", tc.in, col, fpp, err, tc.column, tc.fpp)
		}
	}
}
