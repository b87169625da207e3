package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	tests := []struct {
		max    int
		writes []string
		want   string
	}{
		{max: 4, writes: []string{"ab"}, want: "ab"},
		{max: 4, writes: []string{"ab", "cdef"}, want: "cdef"},
		{max: 4, writes: []string{"abcdefgh"}, want: "efgh"},
		{max: 4, writes: []string{"a", "b", "c", "d", "e"}, want: "bcde"},
		{max: 0, writes: []string{strings.Repeat("x", 70<<10)}, want: strings.Repeat("x", 64<<10)},
	}
	for _, tt := range tests {
		tail := &Tail{Max: tt.max}
		for _, w := range tt.writes {
			if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if got := tail.String(); got != tt.want {
			t.Errorf("max %d, writes %q: kept %d bytes %.20q, want %d bytes %.20q", tt.max, tt.writes, len(got), got, len(tt.want), tt.want)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	// This file lives in internal/testutil of the repository.
	if _, err := os.Stat(filepath.Join(root, "internal", "testutil", "testutil.go")); err != nil {
		t.Errorf("RepoRoot = %s, which does not hold internal/testutil: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("RepoRoot = %s has no go.mod: %v", root, err)
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv("PQSINK_CACHE", "/some/cache")
	if dir, err := CacheDir(); err != nil || dir != "/some/cache" {
		t.Errorf("with PQSINK_CACHE: CacheDir = %q, %v", dir, err)
	}
	t.Setenv("PQSINK_CACHE", "")
	t.Setenv("HOME", "/home/u")
	if dir, err := CacheDir(); err != nil || dir != "/home/u/.cache/pqsink" {
		t.Errorf("without PQSINK_CACHE: CacheDir = %q, %v", dir, err)
	}
}
