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
// within 25% above the budget. With ten thousand partitions the budget is
// spent on what each open file and partition costs, not on rows: files
// are finished early (rotation reason memory) and fetching pauses.
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
	peak := regexp.MustCompile(`(?m)^peak RSS\s+([0-9.]+) MiB$`)
	rotated := regexp.MustCompile(`(?m)^memory .* ([0-9]+) files rotated for it$`)
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.partitions), func(t *testing.T) {
			cmd := exec.Command(pqsinkBinary(t), "bench", "--quiet", "--records", strconv.Itoa(tt.records),
				"--partitions", strconv.Itoa(tt.partitions), "--memory", strconv.Itoa(budget)+"MiB")
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
			m := peak.FindSubmatch(out)
			if m == nil {
				t.Fatalf("no peak RSS in the report")
			}
			rss, _ := strconv.ParseFloat(string(m[1]), 64)
			if rss > 1.25*budget {
				t.Errorf("%d partitions: peak RSS %.1f MiB, more than 25%% above the %d MiB budget", tt.partitions, rss, budget)
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
