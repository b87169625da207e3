package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestSoft(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name              string
		limit, file, want int64
	}{
		{"typical", 256 * mib, 48 * mib, 202 * mib},
		{"nothing read", 256 * mib, 0, 256 * mib},
		{"small limit keeps half", 64 * mib, 48 * mib, 32 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Soft(tt.limit, tt.file); got != tt.want {
				t.Errorf("Soft(%d, %d) = %d, want %d", tt.limit, tt.file, got, tt.want)
			}
		})
	}
}

// TestSet checks that Set lowers the runtime's limit by the executable's
// resident pages, which a test binary has too, and that GOMEMLIMIT wins.
func TestSet(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	t.Setenv("GOMEMLIMIT", "")
	if got := Set(256 << 20); got != 0 {
		t.Errorf("with GOMEMLIMIT set, Set = %d, want 0", got)
	}
	if now := debug.SetMemoryLimit(-1); now != old {
		t.Errorf("with GOMEMLIMIT set, the limit changed to %d", now)
	}
}

func TestSetLowersByResidentFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RssFile is read from /proc/self/status, Linux only")
	}
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	t.Setenv("GOMEMLIMIT", "") // restored after the test
	os.Unsetenv("GOMEMLIMIT")
	file := residentFile()
	if file <= 0 {
		t.Fatalf("RssFile not read from /proc/self/status")
	}
	const limit = 1 << 30
	got := Set(limit)
	if want := Soft(limit, file); got > want || got >= limit {
		t.Errorf("Set(%d) = %d with %d bytes of resident file, want about %d", limit, got, file, want)
	}
	if now := debug.SetMemoryLimit(-1); now != got {
		t.Errorf("runtime limit %d, Set returned %d", now, got)
	}
}
