package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/table"
)

// TestPrintCompaction: the plan and the run's summary say how many files
// were left as they are for deletes, and how many because pqsink did not
// write them, and say nothing of either when there were none.
func TestPrintCompaction(t *testing.T) {
	bin := compact.Bin{Folder: "file:///w/kafka/t/data/d=1", Files: make([]table.LiveFile, 3), Bytes: 3e6, Records: 30}
	binDeleted := bin
	binDeleted.Deleted = 5
	binMillis := bin
	binMillis.Converted = 2
	for _, tc := range []struct {
		name   string
		rep    compact.Report
		dryRun bool
		want   []string
		not    []string
	}{
		{"plan with deletes", compact.Report{Table: "kafka.t", Bins: []compact.Bin{bin}, FilesIn: 3, LiveFiles: 9, WithDeletes: 4, Foreign: 2}, true,
			[]string{"kafka.t: would rewrite 3 of 9 data files", "kafka.t: left 4 data files as they are: delete files", "kafka.t: left 2 data files as they are: pqsink did not write them"}, nil},
		{"nothing but deletes", compact.Report{Table: "kafka.t", LiveFiles: 4, WithDeletes: 4}, true,
			[]string{"kafka.t: nothing to rewrite (4 data files)", "left 4 data files as they are: delete files"}, []string{"pqsink did not write"}},
		{"run with deletes", compact.Report{Table: "kafka.t", Bins: []compact.Bin{bin}, FilesIn: 3, FilesOut: 1, LiveFiles: 5, WithDeletes: 1, Snapshot: 7}, false,
			[]string{"kafka.t: rewrote 3 files", "left 1 data files as they are: delete files"}, []string{"pqsink did not write"}},
		{"plan applying deletes", compact.Report{Table: "kafka.t", Bins: []compact.Bin{binDeleted}, FilesIn: 3, LiveFiles: 3, DeletedRows: 5, DeleteFilesApplied: 2, DeleteFilesRemoved: 1}, true,
			[]string{"kafka.t: would apply 2 delete files (5 deleted rows left out of the new files) and remove 1 of them", "30 rows, 5 deleted"}, []string{"as they are"}},
		{"run applying deletes", compact.Report{Table: "kafka.t", Bins: []compact.Bin{bin}, FilesIn: 3, FilesOut: 1, LiveFiles: 3, Snapshot: 7, DeletedRows: 5, DeleteFilesApplied: 2, DeleteFilesRemoved: 2}, false,
			[]string{"kafka.t: applied 2 delete files (5 deleted rows left out of the new files) and removed 2 of them"}, []string{"as they are", "would"}},
		{"no deletes", compact.Report{Table: "kafka.t", Bins: []compact.Bin{bin}, FilesIn: 3, LiveFiles: 3}, true,
			[]string{"would rewrite 3 of 3"}, []string{"left", "delete files", "millisecond", "older-than"}},
		{"plan converting millis", compact.Report{Table: "kafka.t", Bins: []compact.Bin{binMillis}, FilesIn: 3, LiveFiles: 3, Converted: 2}, true,
			[]string{"30 rows, 2 with millisecond timestamps", "kafka.t: would convert 2 data files with millisecond timestamps (TIMESTAMP(MILLIS)) to microseconds"}, nil},
		{"run converting millis", compact.Report{Table: "kafka.t", Bins: []compact.Bin{binMillis}, FilesIn: 3, FilesOut: 1, LiveFiles: 3, Snapshot: 7, Converted: 2}, false,
			[]string{"kafka.t: converted 2 data files with millisecond timestamps (TIMESTAMP(MILLIS)) to microseconds"}, []string{"would"}},
		{"nothing old enough", compact.Report{Table: "kafka.t", LiveFiles: 32, TooYoung: 32}, false,
			[]string{"kafka.t: nothing to rewrite (32 data files)", "kafka.t: left 32 data files as they are: committed less than 10m ago (--older-than 10m;"}, []string{"delete files"}},
		{"some too young", compact.Report{Table: "kafka.t", Bins: []compact.Bin{bin}, FilesIn: 3, FilesOut: 1, LiveFiles: 5, TooYoung: 2, Snapshot: 7}, false,
			[]string{"kafka.t: rewrote 3 files", "left 2 data files as they are: committed less than 10m ago"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printCompaction(&b, tc.rep, tc.dryRun, 10*time.Minute)
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("output has %q:\n%s", n, b.String())
				}
			}
		})
	}
}

// TestShortDuration: --older-than's value as the messages print it.
func TestShortDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Minute, "10m"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{90 * time.Second, "1m30s"},
		{0, "0s"},
		{1500 * time.Millisecond, "1.5s"},
	} {
		if got := shortDuration(tc.d); got != tc.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestCompactProgress: on a terminal the progress is one line rewritten
// with \r; elsewhere it is plain lines, one per bin and per tenth of the
// bytes, never a \r.
func TestCompactProgress(t *testing.T) {
	steps := []compact.Progress{}
	for bin := 1; bin <= 2; bin++ {
		for b := int64(0); b <= 50; b += 5 {
			steps = append(steps, compact.Progress{Table: "kafka.t", Bin: bin, Bins: 2, Bytes: int64(bin-1)*50e6 + b*1e6, TotalBytes: 100e6})
		}
	}
	for _, tc := range []struct {
		terminal  bool
		wantLines int
		wantCR    bool
	}{
		{true, 0, true},
		// A line as each bin starts (2) and at each further tenth of the
		// 100 MB: 10 of them.
		{false, 12, false},
	} {
		var b strings.Builder
		c := &compactProgress{w: &b, terminal: tc.terminal}
		for _, p := range steps {
			c.print(p)
		}
		out := b.String()
		if got := strings.Contains(out, "\r"); got != tc.wantCR {
			t.Errorf("terminal=%v: output has \\r: %v, want %v:\n%q", tc.terminal, got, tc.wantCR, out)
		}
		if got := strings.Count(out, "\n"); got != tc.wantLines {
			t.Errorf("terminal=%v: %d lines, want %d:\n%s", tc.terminal, got, tc.wantLines, out)
		}
		if !tc.terminal && !strings.HasSuffix(out, "compact: kafka.t: bin 2/2, 100.0/100.0 MB\n") {
			t.Errorf("the last line is not the end of the last bin:\n%s", out)
		}
	}
}
