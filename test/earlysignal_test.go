package test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalDuringInit sends SIGTERM to `pqsink run` while its packages
// still initialize (after Substrait's expression package, before
// iceberg-go's table/substrait, which takes tens of milliseconds), and
// checks that the daemon stops as it does on a later SIGTERM: its start
// and stop lines, exit status 0. Without package earlysignal the signal's
// default action ended it with status 143 and no line.
func TestSignalDuringInit(t *testing.T) {
	bin := pqsinkBinary(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "pqsink.yaml")
	// No broker listens on port 1: the run would retry until stopped.
	yaml := "kafka: {brokers: [\"127.0.0.1:1\"], group: g, topics: [t]}\n" +
		"store: {url: \"file://" + filepath.Join(dir, "out") + "\"}\n" +
		"format: {type: variant}\n"
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		before = "github.com/substrait-io/substrait-go/v8/expr"
		slow   = "github.com/apache/iceberg-go/table/substrait"
	)
	// A machine fast enough to finish table/substrait between our read of
	// the line before it and the signal would test the later handler; try
	// a few times to land inside the window.
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(bin, "run", "--config", config)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The stop is the process's own: one that does not come is ended.
		timeout := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
		var lines []string
		sentAt, slowAt := -1, -1
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			lines = append(lines, line)
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "init" && f[1] == before && sentAt < 0 {
				cmd.Process.Signal(syscall.SIGTERM)
				sentAt = len(lines)
			}
			if len(f) >= 2 && f[0] == "init" && f[1] == slow {
				slowAt = len(lines)
			}
		}
		err = cmd.Wait()
		if !timeout.Stop() {
			t.Fatalf("pqsink run did not exit within a minute of a SIGTERM sent during package initialization:\n%s", strings.Join(lines, "\n"))
		}
		log := strings.Join(lines, "\n")
		if sentAt < 0 || slowAt < 0 {
			t.Fatalf("inittrace did not name %s and %s:\n%s", before, slow, log)
		}
		if slowAt < sentAt {
			if attempt < 5 {
				continue
			}
			t.Fatalf("in %d attempts, %s always finished before the signal was sent: the test did not reach the window it checks", attempt, slow)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("pqsink run, sent SIGTERM during package initialization, exited with %v (want 0, as on a later SIGTERM):\n%s", err, log)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"pqsink starting", "pqsink stopped"} {
			if !strings.Contains(log, want) {
				t.Errorf("the log lacks %q:\n%s", want, log)
			}
		}
		return
	}
}
