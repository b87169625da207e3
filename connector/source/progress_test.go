package source

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestProgress checks the bar (rate, ETA, redrawn in place) and the log
// lines.
func TestProgress(t *testing.T) {
	var bar, logs bytes.Buffer
	r := &Replayer{opts: Options{Progress: &bar, ProgressBar: true, ProgressInterval: time.Hour,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}}
	r.stats.Records.Store(12345)
	r.stats.BytesDone.Store(250)
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	p := &progress{r: r, total: 1000, start: start, now: func() time.Time { return start.Add(10 * time.Second) }}
	p.drawBar(false)
	got := bar.String()
	for _, want := range []string{"\r[", "25.0%", "12.3k records", "/s", "ETA 0:30"} {
		if !strings.Contains(got, want) {
			t.Errorf("bar %q lacks %q", got, want)
		}
	}
	p.logLine(false)
	for _, want := range []string{"replay progress", "records=12345", "percent=25.0", "eta=30s"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
	// The loop draws a last time, with a newline, when it stops.
	bar.Reset()
	lp := r.startProgress(context.Background(), 1000)
	lp.finish()
	if !strings.HasSuffix(bar.String(), "\n") {
		t.Errorf("final bar %q does not end the line", bar.String())
	}
}
