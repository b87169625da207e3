package main

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
)

// TestQuantileText: quantiles interpolated in cumulative buckets, and the
// max as the highest bucket reached.
func TestQuantileText(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name    string
		cum     map[float64]float64
		q       float64
		want    string
		wantMax string
	}{
		{name: "empty", cum: map[float64]float64{}, q: 0.5, want: "-", wantMax: "-"},
		{name: "no counts", cum: map[float64]float64{1: 0, 2: 0, inf: 0}, q: 0.5, want: "-", wantMax: "-"},
		{name: "first bucket", cum: map[float64]float64{1: 10, 2: 10, inf: 10}, q: 0.5, want: "0.50", wantMax: "≤1"},
		{name: "interpolated", cum: map[float64]float64{1: 0, 3: 100, inf: 100}, q: 0.99, want: "2.98", wantMax: "≤3"},
		{name: "split", cum: map[float64]float64{1: 50, 2: 100, inf: 100}, q: 0.75, want: "1.50", wantMax: "≤2"},
		{name: "past the last bound", cum: map[float64]float64{1: 1, 2: 1, inf: 100}, q: 0.5, want: ">2", wantMax: ">2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := quantileText(tc.cum, tc.q); got != tc.want {
				t.Errorf("quantile %v = %s, want %s", tc.q, got, tc.want)
			}
			if got := maxText(tc.cum); got != tc.wantMax {
				t.Errorf("max = %s, want %s", got, tc.wantMax)
			}
		})
	}
}

// TestUnixSeconds: a timestamp in milliseconds, microseconds or
// nanoseconds reads as the same time.
func TestUnixSeconds(t *testing.T) {
	at := time.Date(2026, 12, 7, 21, 0, 0, 123_000_000, time.UTC)
	want := float64(at.UnixMilli()) / 1e3
	for _, v := range []int64{at.UnixMilli(), at.UnixMicro(), at.UnixNano()} {
		if got := unixSeconds(v); math.Abs(got-want) > 1e-6 {
			t.Errorf("unixSeconds(%d) = %f, want %f", v, got, want)
		}
	}
}

// TestSinkConfig: the flags make a configuration the sink loads, with
// maintenance on and the settings asked for.
func TestSinkConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/events.schema", []byte(events.Schema), 0o644); err != nil {
		t.Fatal(err)
	}
	o := options{commitInterval: time.Second, rotate: 2 * time.Second, maintenance: "{small_files_above: 10}", memory: "256MiB"}
	cfg, text, err := sinkConfig(o, "127.0.0.1:9092", "file://"+dir+"/warehouse", "sqlite://"+dir+"/catalog.db", "bench", dir+"/events.schema")
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if cfg.Table == nil || cfg.Table.Maintenance == nil || cfg.Table.Maintenance.SmallFilesAbove != 10 {
		t.Fatalf("no table maintenance with small_files_above 10:\n%s", text)
	}
	if cfg.Table.CommitInterval != time.Second || cfg.Rotate.Interval != 2*time.Second || !cfg.Envelope {
		t.Errorf("commit_interval %s, rotate.interval %s, envelope %v:\n%s", cfg.Table.CommitInterval, cfg.Rotate.Interval, cfg.Envelope, text)
	}
	o = options{target: 10 * time.Second, maintenance: "{}"}
	if cfg, text, err = sinkConfig(o, "127.0.0.1:9092", "file://"+dir+"/warehouse", "sqlite://"+dir+"/catalog.db", "bench", dir+"/events.schema"); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if cfg.Table.CommitInterval != 2*time.Second || cfg.Rotate.Interval != 6*time.Second {
		t.Errorf("freshness_target 10s: commit_interval %s, rotate.interval %s:\n%s", cfg.Table.CommitInterval, cfg.Rotate.Interval, text)
	}
}
