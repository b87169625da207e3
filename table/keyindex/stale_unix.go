//go:build unix

package keyindex

import (
	"errors"
	"syscall"
)

// processRuns reports whether process pid may still run: a signal 0 to
// it fails with ESRCH only when there is no such process.
func processRuns(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
