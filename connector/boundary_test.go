package connector

import (
	"testing"
	"time"
)

func TestNextBoundary(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		at     time.Time
		period time.Duration
		loc    *time.Location
		want   time.Time
	}{
		{time.Date(2026, 5, 1, 10, 17, 3, 0, time.UTC), time.Hour, time.UTC, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), time.Hour, time.UTC, time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 10, 17, 3, 0, time.UTC), 15 * time.Minute, time.UTC, time.Date(2026, 5, 1, 10, 30, 0, 0, time.UTC)},
		{time.Date(2026, 5, 1, 23, 50, 0, 0, time.UTC), 6 * time.Hour, time.UTC, time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)},
		// Daily in New York: the next local midnight.
		{time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), 24 * time.Hour, ny, time.Date(2026, 5, 2, 0, 0, 0, 0, ny)},
	}
	for _, c := range cases {
		if got := nextBoundary(c.at, c.period, c.loc); !got.Equal(c.want) {
			t.Errorf("nextBoundary(%v, %v, %v) = %v, want %v", c.at, c.period, c.loc, got, c.want)
		}
	}
}
