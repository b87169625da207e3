package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMain runs the tests, then removes the directories that pqsinkBinary
// and hostileBinary built the command into (tens of megabytes each), which
// outlive any one test because every test of the package shares them.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := removeBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, "test: removing the built binaries:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// removeBuilds removes the directories of the binaries built so far.
func removeBuilds() error {
	for _, p := range []string{buildOnce.path, hostileBuild.path} {
		if p == "" {
			continue
		}
		if err := os.RemoveAll(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

// buildsChildEnv makes TestBuildsRemoved, run as a child, build the binaries
// and return.
const buildsChildEnv = "PQSINK_TEST_BUILDS_CHILD"

// TestBuildsRemoved runs this test binary as a child, with a temporary
// directory of its own, to build the command the way the process tests do;
// once the child has ended, that directory is empty again.
func TestBuildsRemoved(t *testing.T) {
	if os.Getenv(buildsChildEnv) == "1" {
		for _, p := range []string{pqsinkBinary(t), hostileBinary(t)} {
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBuildsRemoved$", "-test.count=1")
	cmd.Env = append(os.Environ(), buildsChildEnv+"=1", "TMPDIR="+tmp, "GOTMPDIR=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) != 0 {
		t.Errorf("the child left %v in its temporary directory", names)
	}
}
