package test

import (
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSinkMemoryBudget runs `pqsink bench` (the sink in its own process,
// the in-process broker in a child, the file store) with a 256 MiB budget
// on 1, 100 and 10,000 partitions: every record lands (bench checks its
// report against what the files hold) and the process's peak RSS stays
// within the container limit docs/operations.md prescribes for the
// budget, memory.limit × 1.25 + 64 MiB (the Kubernetes manifest's; RSS
// counts the executable's resident pages, 45 to 70 MiB, which the budget
// does not govern). With ten thousand partitions the budget is spent on
// what each open file and partition costs, not on rows: files are
// finished early (rotation reason memory) and fetching pauses; its peak
// ranged from 269 to 321 MiB across runs of one binary.
func TestSinkMemoryBudget(t *testing.T) {
	const budget = 256
	tests := []struct {
		partitions, records int
		memoryRotations     bool // the budget must have forced files out
	}{
		{1, 300_000, false},
		{100, 100_000, false},
		{10_000, 50_000, true},
	}
	rotated := regexp.MustCompile(`(?m)^memory .* ([0-9]+) files rotated for it$`)
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.partitions), func(t *testing.T) {
			out, rss := benchPeakRSS(t, "--records", strconv.Itoa(tt.records),
				"--partitions", strconv.Itoa(tt.partitions), "--memory", strconv.Itoa(budget)+"MiB")
			if limit := 1.25*budget + 64; rss > limit {
				t.Errorf("%d partitions: peak RSS %.1f MiB, above the %.0f MiB a container needs for the %d MiB budget (× 1.25 + 64 MiB)", tt.partitions, rss, limit, budget)
			}
			r := rotated.FindSubmatch(out)
			if r == nil {
				t.Fatalf("no memory line in the report")
			}
			if n, _ := strconv.Atoi(string(r[1])); tt.memoryRotations && n == 0 {
				t.Errorf("%d partitions: no file rotated for memory", tt.partitions)
			}
			if !strings.Contains(string(out), "records        "+strconv.Itoa(tt.records)+" ") {
				t.Errorf("report does not account for %d records", tt.records)
			}
		})
	}
}

// TestSinkMemoryLargeRecords runs `pqsink bench` with records of 5 and 20
// MiB at a memory.limit that accepts them as max_record_bytes
// (config.MemoryForRecord), with more records than the limit holds: every
// record lands and peak RSS stays within 1.25 times the limit. Before the
// row group's size was checked by bytes as well as every 32 rows, the
// peaks were 348 MiB at 256 MiB and 588 MiB at 512 MiB.
func TestSinkMemoryLargeRecords(t *testing.T) {
	tests := []struct {
		record, limit string
		mib           float64 // the limit
		records       int
	}{
		{"5MiB", "256MiB", 256, 40},
		{"20MiB", "512MiB", 512, 20},
	}
	for _, tt := range tests {
		t.Run(tt.record, func(t *testing.T) {
			out, rss := benchPeakRSS(t, "--records", strconv.Itoa(tt.records), "--partitions", "1",
				"--record-bytes", tt.record, "--memory", tt.limit)
			if rss > 1.25*tt.mib {
				t.Errorf("%s records: peak RSS %.1f MiB, more than 25%% above memory.limit %s", tt.record, rss, tt.limit)
			}
			if !strings.Contains(string(out), "records        "+strconv.Itoa(tt.records)+" ") {
				t.Errorf("report does not account for %d records", tt.records)
			}
		})
	}
}

// benchPeakRSS runs `pqsink bench --quiet` with args and returns its
// report and the peak RSS it reports, in MiB.
func benchPeakRSS(t *testing.T, args ...string) ([]byte, float64) {
	t.Helper()
	cmd := exec.Command(pqsinkBinary(t), append([]string{"bench", "--quiet"}, args...)...)
	for _, kv := range cmd.Environ() {
		if !strings.HasPrefix(kv, "GOMEMLIMIT=") { // the bench sets it from --memory, as run does
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pqsink bench: %v\n%s", err, out)
	}
	t.Logf("\n%s", out)
	m := regexp.MustCompile(`(?m)^peak RSS\s+([0-9.]+) MiB$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no peak RSS in the report")
	}
	rss, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("peak RSS %q: %v", m[1], err)
	}
	return out, rss
}
