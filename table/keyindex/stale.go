package keyindex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// spillPrefix is the prefix of the spill directories of process pid.
func spillPrefix(pid int) string { return "keyindex-" + strconv.Itoa(pid) + "-" }

// RemoveStale removes from dir (os.TempDir() when empty) the spill
// directories of indexes whose process has ended without closing them (a
// crash, a SIGKILL), with the runs they spilled, and returns how many it
// removed. A directory of a process still running, of this process, or
// of a name it does not know is left alone; where it cannot tell whether
// a process runs, it leaves its directories too.
func RemoveStale(dir string) (int, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("keyindex: listing %s for stale spill directories: %w", dir, err)
	}
	self := os.Getpid()
	removed := 0
	var errs []error
	for _, e := range entries {
		pid, ok := spillOwner(e)
		if !ok || pid == self || processRuns(pid) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("keyindex: removing stale spill directories: %w", err)
	}
	return removed, nil
}

// spillOwner returns the process id in the name of a spill directory.
func spillOwner(e fs.DirEntry) (int, bool) {
	if !e.IsDir() {
		return 0, false
	}
	rest, ok := strings.CutPrefix(e.Name(), "keyindex-")
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}
