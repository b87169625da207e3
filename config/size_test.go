package config

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"65536", 65536, false},
		{"128MiB", 128 << 20, false},
		{"1mib", 1 << 20, false},
		{"1.5GB", 1_500_000_000, false},
		{"64 KiB", 64 << 10, false},
		{"10b", 10, false},
		{"2M", 2 << 20, false},
		{"", 0, true},
		{"-1", 0, true},
		{"12 parsecs", 0, true},
		{"MiB", 0, true},
		{"NaN", 0, true},
		{"nanMiB", 0, true},
		{"Inf", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
