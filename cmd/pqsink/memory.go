package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/internal/memlimit"
)

// checkMemoryLimit refuses a memory.limit above what this machine (or its
// cgroup) has: such a limit bounds nothing, and is most often a typo
// (100TiB for 100GiB) that would let the sink grow until the kernel kills
// it. It says nothing when the machine's memory cannot be read.
func checkMemoryLimit(limit int64) error {
	have, what := machineMemory()
	if have > 0 && limit > have {
		return fmt.Errorf("memory.limit: %s is more than %s (%s): it would bound nothing", sizeText(limit), what, sizeText(have))
	}
	return nil
}

// machineMemory is the memory the process may use: the smaller of the
// machine's (/proc/meminfo) and its cgroup's limit (v2, then v1), and what
// it is, or 0 when none can be read.
func machineMemory() (int64, string) {
	var have int64
	var what string
	if n := memlimit.ProcBytes("/proc/meminfo", "MemTotal"); n > 0 {
		have, what = n, "this machine's memory"
	}
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64) // "max": no limit
		if err == nil && n > 0 && (have == 0 || n < have) {
			have, what = n, "this process's cgroup memory limit"
		}
		break
	}
	return have, what
}

// sizeText writes a byte count in the largest binary unit that keeps one
// decimal.
func sizeText(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d%s", int64(f), units[u])
	}
	return fmt.Sprintf("%.1f%s", f, units[u])
}
