package initgc

import "testing"

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		gogc string
		want int
	}{
		{"", 100},
		{"off", -1},
		{"50", 50},
		{"0", 0},
		{"-1", -1},
		{"400", 400},
		{"OFF", 100}, // the runtime reads only "off" as off
		{"1e3", 100},
		{"99999999999", 100}, // over 32 bits, as the runtime refuses it
	} {
		if got := Percent(c.gogc); got != c.want {
			t.Errorf("Percent(%q) = %d, want %d", c.gogc, got, c.want)
		}
	}
}
