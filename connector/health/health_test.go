package health

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestFailureLog: 600 failures in a row make 10 ERROR lines (failures 1,
// 2, 4... 512), each with its count; their end makes one INFO line, and
// the next failure is logged again.
func TestFailureLog(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var f FailureLog
	for range 600 {
		f.Failed(log, "broker unreachable", errors.New("connection refused"))
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 10 || !strings.Contains(lines[9], "failures=512") || !strings.Contains(lines[0], "level=ERROR") {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	buf.Reset()
	f.Recovered(log, "reachable again")
	f.Recovered(log, "reachable again")
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "level=INFO") || !strings.Contains(got, "failures=600") {
		t.Errorf("recovery: %s", got)
	}
	buf.Reset()
	f.Failed(log, "broker unreachable", errors.New("connection refused"))
	if !strings.Contains(buf.String(), "failures=1 ") {
		t.Errorf("after recovery: %s", buf.String())
	}
}
