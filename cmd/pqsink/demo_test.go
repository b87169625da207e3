package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestDemoInterrupted: a Ctrl-C (SIGINT to the demo's process group, its
// broker process included) while the broker loads the events or while
// the sink archives them ends the demo with one plain line saying so and
// exit status 1: no "broker process" error, no EOF, no context error.
func TestDemoInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after string // the stderr line after which the signal is sent
	}{
		{"loading", "pqsink demo: producing"},
		{"archiving", "the sink is archiving them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			cmd := exec.Command(os.Args[0], "demo", "--records", "1000000")
			cmd.Dir = work
			cmd.Env = append(os.Environ(), asMainEnv+"=1")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			lines := bufio.NewScanner(stderr)
			var seen []string
			signaled := false
			for lines.Scan() {
				seen = append(seen, lines.Text())
				if !signaled && strings.Contains(lines.Text(), tc.after) {
					// As a terminal's Ctrl-C: the whole process group.
					if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
					signaled = true
				}
			}
			err = cmd.Wait()
			out := strings.Join(seen, "\n")
			if !signaled {
				t.Fatalf("no line with %q before the demo ended (%v):\n%s", tc.after, err, out)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1\n%s", err, out)
			}
			last := seen[len(seen)-1]
			if !strings.HasPrefix(last, "pqsink demo: interrupted: ") {
				t.Errorf("last line %q, want pqsink demo: interrupted: …\n%s", last, out)
			}
			for _, bad := range []string{"EOF", "broker process", "context canceled", "__broker"} {
				if strings.Contains(out, bad) {
					t.Errorf("stderr has %q:\n%s", bad, out)
				}
			}
		})
	}
}
