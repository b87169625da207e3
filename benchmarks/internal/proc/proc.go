// Package proc holds what the end-to-end benchmark commands share: timing
// child processes by the CPU the kernel charged them, writing generated
// input, and finding the module root.
package proc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pqsink/pqsink/internal/rusage"
)

// Timing is one run of a command: CPU (user+system) and wall time, and
// the peak resident set size in bytes (0 when the system does not say).
type Timing struct {
	CPU, Wall time.Duration
	RSS       int64
}

// Best runs f runs times and returns the run with the least CPU time,
// with the highest peak RSS of all the runs: the least work a run needed,
// and the most memory.
func Best(runs int, f func() (Timing, error)) (Timing, error) {
	var b Timing
	var rss int64
	for i := 0; i < runs; i++ {
		t, err := f()
		if err != nil {
			return b, err
		}
		rss = max(rss, t.RSS)
		if i == 0 || t.CPU < b.CPU {
			b = t
		}
	}
	b.RSS = rss
	return b, nil
}

// helperEnv marks a process started by Measure to run one command and
// report what it used.
const helperEnv = "PQSINK_BENCH_MEASURE_HELPER"

// Main makes the process the measuring helper when Measure started it as
// one: it runs the command, reports, and exits with the command's status.
// A benchmark command calls it first thing in main, while the process is
// still small: the helper is there for the peak RSS (see package
// internal/rusage).
func Main() {
	if os.Getenv(helperEnv) == "" {
		return
	}
	os.Exit(helper())
}

func helper() int {
	report := os.NewFile(3, "report")
	if report == nil || len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "proc: helper started without a command or a report pipe")
		return 2
	}
	os.Unsetenv(helperEnv)
	code, u, err := rusage.Run(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "proc: %v\n", err)
		return 2
	}
	fmt.Fprintf(report, "%d %d %d\n", u.CPU, u.Wall, u.MaxRSS)
	report.Close()
	return code
}

// Measure runs cmd through a helper process (see Main) and returns its CPU
// and wall time and its peak RSS; a failure carries the command's stderr.
func Measure(cmd *exec.Cmd) (Timing, error) {
	exe, err := os.Executable()
	if err != nil {
		return Timing{}, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return Timing{}, err
	}
	defer r.Close()
	h := exec.Command(exe, append([]string{cmd.Path}, cmd.Args[1:]...)...)
	h.Dir = cmd.Dir
	h.Env = append(cmd.Environ(), helperEnv+"=1")
	h.Stdin, h.Stdout = cmd.Stdin, cmd.Stdout
	var stderr strings.Builder
	h.Stderr = &stderr
	h.ExtraFiles = []*os.File{w}
	err = h.Start()
	w.Close()
	if err != nil {
		return Timing{}, err
	}
	out, readErr := io.ReadAll(r)
	if err := h.Wait(); err != nil {
		return Timing{}, fmt.Errorf("%s: %v: %s", cmd.Path, err, stderr.String())
	}
	var cpu, wall, rss int64
	if _, err := fmt.Sscan(string(out), &cpu, &wall, &rss); err != nil || readErr != nil {
		return Timing{}, fmt.Errorf("%s: no report from the measuring helper (%q): %v", cmd.Path, out, errors.Join(err, readErr))
	}
	return Timing{CPU: time.Duration(cpu), Wall: time.Duration(wall), RSS: rss}, nil
}

// WriteLines writes n lines made by line(dst, i) to path and returns the
// bytes written.
func WriteLines(path string, n int, line func(dst []byte, i int) []byte) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var buf []byte
	var size int64
	for i := 0; i < n; i++ {
		buf = line(buf[:0], i)
		size += int64(len(buf))
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return size, f.Close()
}

// FileSize returns the size of the file at path.
func FileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// ModuleRoot returns the nearest directory above the working directory
// that holds a go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// DuckDB times one SQL statement run by DuckDB on one thread in a node
// process of its own (test/duckdb/exec.mjs in duckdbDir), the best of runs,
// and the same process doing nothing, to show DuckDB's start-up cost.
func DuckDB(duckdbDir string, runs int, sql string) (work, idle Timing, err error) {
	return DuckDBThreads(duckdbDir, runs, 1, sql)
}

// DuckDBThreads is DuckDB with threads set to threads, or left at
// DuckDB's default (one per core) when threads is 0.
func DuckDBThreads(duckdbDir string, runs, threads int, sql string) (work, idle Timing, err error) {
	run := func(stmt string) func() (Timing, error) {
		return func() (Timing, error) {
			args := []string{"exec.mjs", stmt}
			if threads > 0 {
				args = []string{"exec.mjs", fmt.Sprintf("SET threads = %d", threads), stmt}
			}
			cmd := exec.Command("node", args...)
			cmd.Dir = duckdbDir
			return Measure(cmd)
		}
	}
	if work, err = Best(runs, run(sql)); err != nil {
		return work, idle, fmt.Errorf("duckdb: %w", err)
	}
	if idle, err = Best(runs, run("SELECT 1")); err != nil {
		return work, idle, fmt.Errorf("duckdb idle: %w", err)
	}
	return work, idle, nil
}

// DuckDBRows runs one query in DuckDB (test/duckdb/exec.mjs in duckdbDir)
// and returns its rows, the fields of each split on tabs.
func DuckDBRows(duckdbDir, query string) ([][]string, error) {
	f, err := os.CreateTemp("", "duckdb-rows-*.tsv")
	if err != nil {
		return nil, err
	}
	out := f.Name()
	f.Close()
	defer os.Remove(out)
	cmd := exec.Command("node", "exec.mjs", fmt.Sprintf("COPY (%s) TO '%s' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\t')", query, out))
	cmd.Dir = duckdbDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("duckdb: %v: %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows, nil
}
