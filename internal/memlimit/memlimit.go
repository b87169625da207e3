// Package memlimit sets the Go runtime's soft memory limit of a process
// that must stay within a memory limit as a whole.
//
// The runtime's limit bounds only the memory the runtime maps (heap,
// stacks, its own structures). The process's resident set also holds the
// pages of its executable that it has touched: for pqsink, 50 to 60 MiB of
// code and read-only data, most of it faulted in by package initialization
// (iceberg-go, arrow, the AWS SDK) before main runs. A soft limit equal to
// the process's limit lets the resident set end that much above it.
package memlimit

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Set makes the runtime's soft limit what limit leaves after the
// executable's resident pages (with room for the code that running will
// fault in yet), and returns the soft limit it set. It sets nothing and
// returns 0 when limit is not positive or GOMEMLIMIT is set: an operator's
// own limit wins. The soft limit is never less than half of limit, so
// that a small limit is not eaten by the executable.
func Set(limit int64) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || limit <= 0 {
		return 0
	}
	soft := Soft(limit, residentFile())
	debug.SetMemoryLimit(soft)
	return soft
}

// Soft is the soft limit for a process limit of which file bytes are
// resident pages of the executable now. Running faults in more code than
// start has touched: an eighth more is kept aside for it.
func Soft(limit, file int64) int64 {
	return max(limit-file-file/8, limit/2)
}

// residentFile is the process's resident file-backed memory, 0 where it
// cannot be read.
func residentFile() int64 { return ProcBytes("/proc/self/status", "RssFile") }

// ProcBytes reads the field key of a Linux /proc file of "Key: N kB"
// lines (/proc/self/status, /proc/meminfo) in bytes; 0 when the file or
// the field cannot be read.
func ProcBytes(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		if f := strings.Fields(rest); len(f) > 0 {
			if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
				return kb << 10
			}
		}
		return 0
	}
	return 0
}
