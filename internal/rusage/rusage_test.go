package rusage

import (
	"os"
	"testing"
)

// allocEnv makes the test binary, started again by the test, touch
// allocBytes of memory and exit with status 7.
const (
	allocEnv   = "RUSAGE_TEST_ALLOC"
	allocBytes = 64 << 20
)

var sink []byte

func TestMain(m *testing.M) {
	if os.Getenv(allocEnv) != "" {
		sink = make([]byte, allocBytes)
		for i := range sink {
			sink[i] = byte(i)
		}
		os.Exit(7)
	}
	os.Exit(m.Run())
}

func TestRun(t *testing.T) {
	t.Setenv(allocEnv, "1")
	code, u, err := Run([]string{os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	if code != 7 {
		t.Errorf("exit status %d, want 7", code)
	}
	if u.MaxRSS < allocBytes || u.MaxRSS > 4*allocBytes {
		t.Errorf("peak RSS %d bytes, want about %d", u.MaxRSS, allocBytes)
	}
	if u.Wall <= 0 || u.CPU <= 0 {
		t.Errorf("wall %v, CPU %v: want both positive", u.Wall, u.CPU)
	}
	if _, _, err := Run([]string{"/nonexistent/command"}); err == nil {
		t.Error("a command that does not exist: no error")
	}
}
