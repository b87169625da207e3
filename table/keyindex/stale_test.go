//go:build unix

package keyindex

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestRemoveStale: the spill directories of a process that ended are
// removed with their runs; this process's (an open index's), and names
// it does not know, stay.
func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	// A process that has ended: its id is free until the system reuses it.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid

	x := newIndex(t, Options{Dir: dir, MemoryLimit: MinMemoryLimit})
	var k []byte
	for i := range 100_000 { // past the limit: a run is spilled
		k = AppendInt(k[:0], int64(i))
		if _, _, err := x.Put(k, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	if x.Stats().Runs == 0 {
		t.Fatal("the index spilled no run")
	}
	stale, err := os.MkdirTemp(dir, spillPrefix(dead))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "run-1"), []byte("spilled"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"keyindex-123abc", "keyindex-", "other-1-2"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	before := names(t, dir)

	n, err := RemoveStale(dir)
	if err != nil {
		t.Fatal(err)
	}
	after := names(t, dir)
	want := slices.DeleteFunc(slices.Clone(before), func(s string) bool { return s == filepath.Base(stale) })
	if n != 1 || !slices.Equal(after, want) {
		t.Errorf("RemoveStale removed %d, left %v; want 1 removed (%s), left %v", n, after, filepath.Base(stale), want)
	}
	// The open index still works: its runs are where it left them.
	if off, ok, err := x.Get(AppendInt(nil, 7)); err != nil || !ok || off != 7 {
		t.Errorf("Get after RemoveStale: %d %v %v", off, ok, err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
