package jsontext

import (
	"encoding/json"
	"math"
	"testing"
)

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"quote\" back\\slash", `"quote\" back\\slash"`},
		{"ctl\x00\x01\x1f\x7f\n\r\t", `"ctl\u0000\u0001\u001f\u007f\n\r\t"`},
		{"héllo ☃ 😀", `"héllo ☃ 😀"`},
		{"bad \xff\xfe", `"bad \ufffd\ufffd"`},
		{"trunc \xe2\x98", `"trunc \ufffd\ufffd"`},
		{"<&>", `"<&>"`},
	} {
		if got := string(AppendString(nil, tc.in)); got != tc.want {
			t.Errorf("AppendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
		var back string
		if err := json.Unmarshal(AppendString(nil, tc.in), &back); err != nil {
			t.Errorf("AppendString(%q) is not JSON: %v", tc.in, err)
		}
	}
}

func TestAppendStringBytesMatchesAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "ctl\x00\x01\x1f\x7f\n\r\t", "héllo wörld ☃", "bad \xff\xfe utf8", "trunc \xe2\x98",
		"\xff", "\"", "end\n", "\x7fstart", "mix é\x00\xc3(\xf0\x9f\x98\x80ok", "\xed\xa0\x80 surrogate"} {
		if got, want := string(AppendStringBytes(nil, []byte(s))), string(AppendString(nil, s)); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0"},
		{math.Copysign(0, -1), 64, "-0.0"},
		{math.Copysign(0, -1), 32, "-0.0"},
		{1.5, 64, "1.5"},
		{-2, 64, "-2"},
		{0.1, 64, "0.1"},
		{float64(float32(0.1)), 32, "0.1"},
		{1e-6, 64, "0.000001"},
		{1e-7, 64, "1e-7"},
		{float64(float32(1e-7)), 32, "1e-7"},
		{-2.5e-10, 64, "-2.5e-10"},
		{1e-100, 64, "1e-100"},
		{1e20, 64, "100000000000000000000"},
		{1e21, 64, "1e+21"},
		{1e308, 64, "1e+308"},
		{math.NaN(), 64, `"NaN"`},
		{math.Inf(1), 64, `"Infinity"`},
		{math.Inf(-1), 32, `"-Infinity"`},
	} {
		if got := string(AppendFloat(nil, tc.f, tc.bits)); got != tc.want {
			t.Errorf("AppendFloat(%g, %d) = %s, want %s", tc.f, tc.bits, got, tc.want)
		}
	}
}
