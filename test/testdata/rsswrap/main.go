// Command rsswrap runs a command and reports its peak RSS on stderr as a
// last line "rsswrap: maxrss=KB".
//
// A test process that is large when it starts a child pollutes the child's
// ru_maxrss: Go starts children with vfork, and Linux carries the parent's
// high-water mark into the child at exec. rsswrap is small, so the
// command it starts reports its own peak.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rsswrap:", err)
		os.Exit(125)
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	cmd.Wait()
	var kb int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		kb = ru.Maxrss
	}
	fmt.Fprintf(os.Stderr, "rsswrap: maxrss=%d\n", kb)
	os.Exit(cmd.ProcessState.ExitCode())
}
