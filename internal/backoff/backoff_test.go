package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDoubling(t *testing.T) {
	for _, c := range []struct {
		first time.Duration
		n     int
		limit time.Duration
		want  time.Duration
	}{
		{time.Second, 1, 30 * time.Second, time.Second},
		{time.Second, 2, 30 * time.Second, 2 * time.Second},
		{time.Second, 5, 30 * time.Second, 16 * time.Second},
		{time.Second, 6, 30 * time.Second, 30 * time.Second},
		{time.Second, 1000, 30 * time.Second, 30 * time.Second},
		{time.Second, 0, 30 * time.Second, time.Second},
		{time.Minute, 1, 30 * time.Second, 30 * time.Second},
		{5 * time.Second, 3, time.Minute, 20 * time.Second},
	} {
		if got := Doubling(c.first, c.n, c.limit); got != c.want {
			t.Errorf("Doubling(%v, %d, %v) = %v, want %v", c.first, c.n, c.limit, got, c.want)
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep with a live context reported it was cut short")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep with an ended context reported the hour passed")
	}
}
