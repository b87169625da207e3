// Package config reads pqsink's settings: YAML files with ${ENV}
// expansion and defaults, and the value syntaxes shared by the config file
// and the command line, such as byte sizes.
package config

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a byte size: a plain number of bytes, or a number with
// one of the suffixes B, KB/MB/GB (powers of 1000), KiB/MiB/GiB (powers of
// 1024), case-insensitive, e.g. "128MiB", "1.5GB", "65536".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
		{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
		{"b", 1},
	}
	mult := 1.0
	lower := strings.ToLower(t)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	// !(v >= 0) also refuses NaN, which ParseFloat accepts.
	if err != nil || !(v >= 0) || v*mult > 1<<62 {
		return 0, fmt.Errorf("size %q: want a non-negative number of bytes, optionally with a unit (B, KiB, MiB, GiB, KB, MB, GB), e.g. 128MiB", s)
	}
	return int64(v * mult), nil
}
