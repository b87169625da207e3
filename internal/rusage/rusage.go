// Package rusage runs a command and tells what it used: CPU time (user
// and system, as the kernel charged it), wall time and peak resident set
// size. The test harness's rsswrap and the benchmark commands' measuring
// helper both run commands through it.
//
// Run it in a small process. Go starts a child with vfork, and on Linux
// the child's ru_maxrss starts from the high-water mark of the memory it
// was forked from, carried over at exec: a large process (a test binary,
// a benchmark that holds a million generated records) would report its
// own peak for every command it starts. A small process in between
// (rsswrap, or the benchmark binary started again as a helper, before it
// allocates anything) lets the command report its own peak.
package rusage

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Usage is what a finished command used.
type Usage struct {
	CPU, Wall time.Duration
	// MaxRSS is the peak resident set size in bytes, 0 when the system
	// does not say.
	MaxRSS int64
}

// Run runs args[0] with the arguments args[1:], on this process's
// standard input, output and error, and waits for it. The signals in
// forward that this process receives while the command runs are passed
// on to it; they stay caught after Run returns, so that one that comes as
// the command ends does not kill this process before it reports. Run
// returns the command's exit status and what it used; the error is that
// of a command that could not be started.
func Run(args []string, forward ...os.Signal) (int, Usage, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var sigs chan os.Signal
	if len(forward) > 0 {
		sigs = make(chan os.Signal, 1)
		signal.Notify(sigs, forward...)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, Usage{}, err
	}
	if sigs != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case s := <-sigs:
					cmd.Process.Signal(s)
				case <-done:
					return
				}
			}
		}()
	}
	cmd.Wait()
	u := Usage{
		Wall: time.Since(start),
		CPU:  cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		u.MaxRSS = ru.Maxrss << 10 // Linux reports kilobytes
	}
	return cmd.ProcessState.ExitCode(), u, nil
}
