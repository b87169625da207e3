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

func TestProcBytes(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/status"
	body := "Name:\tpqsink\nVmHWM:\t  123456 kB\nRssFile:\t   2048 kB\nBroken:\tx kB\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key  string
		want int64
	}{
		{"VmHWM", 123456 << 10},
		{"RssFile", 2048 << 10},
		{"Broken", 0},
		{"Missing", 0},
		{"Vm", 0}, // a prefix of a key is not the key
	}
	for _, tt := range tests {
		if got := ProcBytes(path, tt.key); got != tt.want {
			t.Errorf("ProcBytes(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if got := ProcBytes(dir+"/none", "VmHWM"); got != 0 {
		t.Errorf("a missing file gives %d, want 0", got)
	}
}
