package test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCollectorHeldDuringInit checks, on the built binary, what package
// initgc relies on: it initializes before iceberg-go's table/substrait
// (the start-up's big allocator), and no collection runs until main has
// given the collector back.
func TestCollectorHeldDuringInit(t *testing.T) {
	bin := pqsinkBinary(t)
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1,gctrace=1", "GOGC=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pqsink version: %v\n%s", err, stderr.String())
	}
	const (
		hold  = "github.com/pqsink/pqsink/internal/initgc"
		heavy = "github.com/apache/iceberg-go/table/substrait"
	)
	holdAt, heavyAt, lastInit, firstGC := -1, -1, -1, -1
	for i, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "init":
			lastInit = i
			switch f[1] {
			case hold:
				holdAt = i
			case heavy:
				heavyAt = i
			}
		case len(f) >= 2 && f[0] == "gc" && firstGC < 0:
			firstGC = i
		}
	}
	if holdAt < 0 || heavyAt < 0 {
		t.Fatalf("inittrace names %s at line %d and %s at line %d (want both):\n%s", hold, holdAt, heavy, heavyAt, stderr.String())
	}
	if holdAt > heavyAt {
		t.Errorf("%s initialized after %s: the collector ran through the allocation it is meant to spare", hold, heavy)
	}
	if firstGC >= 0 && firstGC < lastInit {
		t.Errorf("a collection ran during package initialization (line %d, before the last init at line %d):\n%s", firstGC, lastInit, stderr.String())
	}
}
