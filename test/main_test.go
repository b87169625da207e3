package test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The prefixes of the directories that pqsinkBinary and hostileBinary
// build the command into, under the temporary directory.
const (
	buildPrefix        = "pqsink-bin-"
	hostileBuildPrefix = "pqsink-hostile-bin-"
)

// buildPIDFile, in a build directory, holds the process id of the test
// binary that made it.
const buildPIDFile = "owner.pid"

// TestMain removes the build directories that earlier test processes left
// when they died before cleaning up (a panic, a timeout, a kill), runs the
// tests, then removes the directories that pqsinkBinary and hostileBinary
// built the command into (tens of megabytes each), which outlive any one
// test because every test of the package shares them.
func TestMain(m *testing.M) {
	removeStaleBuilds(os.TempDir())
	go watchHeap(heapCeiling)
	code := m.Run()
	if err := removeBuilds(); err != nil {
		fmt.Fprintln(os.Stderr, "test: removing the built binaries:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// heapCeiling is far above what the package's tests use together (about
// 1 GiB of RSS at most): a heap that reaches it is a runaway.
const heapCeiling = 6 << 30

// watchHeap crashes the test binary with every goroutine's stack when its
// Go heap passes ceiling: a runaway allocation then fails the run with the
// culprit named, instead of the kernel's OOM killer ending it with no word
// (as it once did, at 24 GB, in a full run of this package).
func watchHeap(ceiling uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for range time.Tick(500 * time.Millisecond) {
		metrics.Read(sample)
		if v := sample[0].Value; v.Kind() == metrics.KindUint64 && v.Uint64() > ceiling {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("test: the Go heap holds %d MiB, above the %d MiB no test needs: a runaway allocation (stacks of every goroutine follow)", v.Uint64()>>20, ceiling>>20))
		}
	}
}

// newBuildDir makes a build directory with the prefix and records this
// process as its owner.
func newBuildDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, buildPIDFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build directory %s: %w", dir, err)
	}
	return dir, nil
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

// removeStaleBuilds removes the build directories under tmp whose owner
// process has exited. A directory without an owner file, or whose owner
// still runs (another test binary at work), is left alone.
func removeStaleBuilds(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), buildPrefix) && !strings.HasPrefix(e.Name(), hostileBuildPrefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, buildPIDFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// buildsChildEnv makes TestBuildsRemoved, run as a child, build the binaries
// and return.
const buildsChildEnv = "PQSINK_TEST_BUILDS_CHILD"

// TestBuildsRemoved runs this test binary as a child, with a temporary
// directory of its own, to build the command the way the process tests do;
// once the child has ended, that directory holds only what it held before,
// less the build directory of a process that died: a directory of a process
// that still runs, and one that is not a build, stay.
func TestBuildsRemoved(t *testing.T) {
	if os.Getenv(buildsChildEnv) == "1" {
		for _, p := range []string{pqsinkBinary(t), hostileBinary(t)} {
			if _, err := os.Stat(p); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	for name, owner := range map[string]string{
		"pqsink-bin-stale":           strconv.Itoa(dead.Process.Pid),
		"pqsink-hostile-bin-stale":   strconv.Itoa(dead.Process.Pid),
		"pqsink-bin-running":         strconv.Itoa(os.Getpid()),
		"pqsink-hostile-bin-noowner": "",
		"other-dead":                 strconv.Itoa(dead.Process.Pid),
	} {
		if err := os.Mkdir(filepath.Join(tmp, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(tmp, name, buildPIDFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
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
	if want := "other-dead pqsink-bin-running pqsink-hostile-bin-noowner"; strings.Join(names, " ") != want {
		t.Errorf("the child left %q in its temporary directory, want %q", names, want)
	}
}
