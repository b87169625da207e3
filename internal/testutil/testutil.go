// Package testutil holds helpers shared by pqsink's test harnesses: locating
// the repository and the cache of provisioned test tools. It is imported only
// by tests.
package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ProvisionHint tells a developer how to install what the test harnesses
// need. Harnesses put it in every "not provisioned" failure.
const ProvisionHint = "run ./scripts/provision.sh from the repository root (or ./scripts/test.sh, which provisions and then tests)"

// RepoRoot returns the root of the pqsink repository: the nearest directory,
// walking up from the test's working directory, that has a go.mod and a
// test/ directory. Nested modules (tools/*) have no test/ directory, so they
// are passed over.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatalf("locating the repository root: %v", err)
	}
	return root
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isFile(filepath.Join(dir, "go.mod")) && isDir(filepath.Join(dir, "test")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no directory with go.mod and test/ above the working directory")
		}
		dir = parent
	}
}

// CacheDir returns the directory where provisioned test tools live, outside
// the repository so that clean checkouts reuse them: $PQSINK_CACHE if set,
// else $HOME/.cache/pqsink. scripts/provision.sh uses the same rule.
func CacheDir() (string, error) {
	if dir := os.Getenv("PQSINK_CACHE"); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no PQSINK_CACHE and no home directory: %w", err)
	}
	return filepath.Join(home, ".cache", "pqsink"), nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
