// Command variantbench measures `pqsink convert --variant` against DuckDB
// doing the same job — JSON Lines into one VARIANT column of a ZSTD
// Parquet file, on one thread — in one run on the same input: input MB/s
// from CPU seconds (user+system, from the kernel's accounting of each
// child process), and output bytes. DuckDB runs in node through the
// @duckdb/node-api package of test/duckdb (run scripts/provision.sh
// first); the CPU time node and DuckDB take to start and stop with no
// work is measured and subtracted, and both figures are printed.
//
// Peak RSS is the kernel's for each child process (for DuckDB, the node
// process that hosts it, whose idle figure is printed too).
//
// The input is either the sink's reference records (-data events, the
// default: internal/events, about 210 bytes with nested objects and an
// array, what `pqsink bench` sends) or the benchmark clickstream reshaped
// into nested records (-data clicks: objects two levels deep, an array of
// strings, a nullable field), the kind of document a VARIANT column is for:
//
//	go run ./benchmarks/cmd/variantbench -n 1000000 -runs 3
//	go run ./benchmarks/cmd/variantbench -data clicks
//
// -bin runs a pqsink binary built elsewhere (for before/after figures)
// instead of building ./cmd/pqsink. pqsink runs with --threads 1, as
// DuckDB does, unless -threads says otherwise.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/benchmarks"
	"github.com/pqsink/pqsink/benchmarks/internal/proc"
	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil"
)

func main() {
	proc.Main()
	n := flag.Int("n", 1_000_000, "records to convert")
	runs := flag.Int("runs", 3, "runs of each command; the fastest is reported")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed at exit)")
	check := flag.Int("check", 2000, "rows of each file compared with the input, as JSON values")
	data := flag.String("data", "events", "input records: events (the sink's reference records) or clicks (nested clickstream)")
	bin := flag.String("bin", "", "pqsink binary to measure (default: build ./cmd/pqsink)")
	threads := flag.Int("threads", 1, "pqsink convert --threads (DuckDB runs with threads=1); -1 passes no --threads")
	flag.Parse()
	if err := run(*n, *runs, *check, *threads, *dir, *data, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "variantbench:", err)
		os.Exit(1)
	}
}

func run(n, runs, check, threads int, dir, data, bin string) error {
	root, err := proc.ModuleRoot()
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "variantbench-*"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	input := filepath.Join(dir, data+".jsonl")
	var line func(dst []byte, i int) []byte
	switch data {
	case "events":
		gen := events.New(1, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
		line = func(dst []byte, _ int) []byte { return append(gen.Append(dst), '\n') }
	case "clicks":
		clicks := benchmarks.Clicks(n)
		line = func(dst []byte, i int) []byte { return clicks[i].AppendNestedJSON(dst) }
	default:
		return fmt.Errorf("-data %s: want events or clicks", data)
	}
	size, err := proc.WriteLines(input, n, line)
	if err != nil {
		return err
	}
	if bin == "" {
		bin = filepath.Join(dir, "pqsink")
		build := exec.Command("go", "build", "-o", bin, "./cmd/pqsink")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build pqsink: %w", err)
		}
	}
	duckdbDir := filepath.Join(root, "test", "duckdb")
	pqAuto := filepath.Join(dir, "pqsink-auto.parquet")
	pqNone := filepath.Join(dir, "pqsink-none.parquet")
	duckOut := filepath.Join(dir, "duckdb.parquet")
	copySQL := fmt.Sprintf(`COPY (SELECT json::VARIANT AS payload FROM read_json_objects('%s', format = 'newline_delimited')) TO '%s' (FORMAT parquet, COMPRESSION zstd)`, input, duckOut)

	var threadArgs []string
	threadText := "its default"
	if threads >= 0 {
		threadArgs = []string{"--threads", strconv.Itoa(threads)}
		threadText = strconv.Itoa(threads)
	}
	convert := func(args ...string) *exec.Cmd {
		return exec.Command(bin, append(append([]string{"convert", "--variant", "--quiet", "--codec", "zstd"}, threadArgs...), args...)...)
	}
	fmt.Printf("input: %d %s records, %.1f MB of JSON Lines; threads: pqsink convert %s, duckdb 1\n", n, data, float64(size)/1e6, threadText)
	auto, err := proc.Best(runs, func() (proc.Timing, error) {
		return proc.Measure(convert(input, pqAuto))
	})
	if err != nil {
		return fmt.Errorf("pqsink convert --variant: %w", err)
	}
	none, err := proc.Best(runs, func() (proc.Timing, error) {
		return proc.Measure(convert("--shred", "none", input, pqNone))
	})
	if err != nil {
		return fmt.Errorf("pqsink convert --variant --shred none: %w", err)
	}
	duck, idle, err := proc.DuckDB(duckdbDir, runs, copySQL)
	if err != nil {
		return err
	}
	mb := float64(size) / 1e6
	duckWork := duck.CPU - idle.CPU
	fmt.Printf("%-36s %8s %8s %10s %10s %14s %8s\n", "", "cpu s", "wall s", "MB/s (cpu)", "RSS MiB", "file bytes", "columns")
	for _, r := range []struct {
		name string
		t    proc.Timing
		path string
	}{
		{"pqsink --variant (shred auto)", auto, pqAuto},
		{"pqsink --variant --shred none", none, pqNone},
		{"duckdb j::VARIANT (threads=1)", duck, duckOut},
	} {
		sz, err := proc.FileSize(r.path)
		if err != nil {
			return err
		}
		cols, err := leafCount(duckdbDir, r.path)
		if err != nil {
			return err
		}
		fmt.Printf("%-36s %8.2f %8.2f %10.1f %10.1f %14d %8d\n", r.name, r.t.CPU.Seconds(), r.t.Wall.Seconds(), mb/r.t.CPU.Seconds(), float64(r.t.RSS)/(1<<20), sz, cols)
	}
	fmt.Printf("%-36s %8.2f %8.2f %10s %10.1f\n", "duckdb start/stop only", idle.CPU.Seconds(), idle.Wall.Seconds(), "", float64(idle.RSS)/(1<<20))
	fmt.Printf("duckdb less its start-up: %.1f MB/s\n", mb/duckWork.Seconds())
	autoSize, _ := proc.FileSize(pqAuto)
	duckSize, _ := proc.FileSize(duckOut)
	fmt.Printf("pqsink(auto)/duckdb cpu: %.2f (%.2f against duckdb less its start-up); size: %.3f; peak RSS: %.2f\n",
		auto.CPU.Seconds()/duck.CPU.Seconds(), auto.CPU.Seconds()/duckWork.Seconds(), float64(autoSize)/float64(duckSize), float64(auto.RSS)/float64(duck.RSS))
	compared := 0
	for _, p := range []string{pqAuto, pqNone, duckOut} {
		if err := sameAsInput(duckdbDir, p, input, n, check); err != nil {
			if strings.Contains(err.Error(), "signal: floating point exception") {
				// DuckDB 1.5 dies on a Variant decimal8 whose scale is above
				// 18 (0.0049317432416439155: 17 digits, scale 19), which
				// the spec allows (scale 0-38) and the events have.
				fmt.Printf("check: DuckDB crashed reading %s back (SIGFPE; it fails on decimal8 values of scale > 18); not compared\n", filepath.Base(p))
				continue
			}
			return err
		}
		compared++
	}
	fmt.Printf("check: %d of 3 files have %d rows and their first %d rows read back (DuckDB payload::JSON) equal the input as JSON values\n", compared, n, check)
	return nil
}

// duckCSV runs one query in DuckDB and returns its rows as CSV lines.
func duckCSV(duckdbDir, query string) ([]string, error) {
	out := filepath.Join(os.TempDir(), fmt.Sprintf("variantbench-%d.csv", os.Getpid()))
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
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n"), nil
}

func leafCount(duckdbDir, path string) (int, error) {
	rows, err := duckCSV(duckdbDir, fmt.Sprintf("SELECT count(*) FROM parquet_schema('%s') WHERE num_children IS NULL OR num_children = 0", path))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(rows[0])
}

// sameAsInput checks the row count of the file, and that its first rows,
// read by DuckDB as JSON, equal the input lines as JSON values (numbers by
// exact value, since a shredded decimal column may add trailing zeros).
func sameAsInput(duckdbDir, path, input string, n, check int) error {
	rows, err := duckCSV(duckdbDir, fmt.Sprintf("SELECT count(*) FROM read_parquet('%s')", path))
	if err != nil {
		return err
	}
	if rows[0] != strconv.Itoa(n) {
		return fmt.Errorf("%s: %s rows, want %d", path, rows[0], n)
	}
	got, err := duckCSV(duckdbDir, fmt.Sprintf("SELECT payload::JSON FROM read_parquet('%s', file_row_number = true) ORDER BY file_row_number LIMIT %d", path, check))
	if err != nil {
		return err
	}
	f, err := os.Open(input)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for i := 0; i < len(got) && sc.Scan(); i++ {
		if !jsonEqual(sc.Bytes(), fixLeadingDot([]byte(got[i]))) {
			return fmt.Errorf("%s: row %d reads back as %s, input was %s", path, i, got[i], sc.Bytes())
		}
	}
	return nil
}

// fixLeadingDot turns DuckDB's ".5" rendering of decimals into "0.5".
func fixLeadingDot(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	inString := false
	for i, c := range b {
		if c == '"' && (i == 0 || b[i-1] != '\\') {
			inString = !inString
		}
		if !inString && c == '.' && i > 0 && strings.IndexByte("-:,[", b[i-1]) >= 0 {
			out = append(out, '0')
		}
		out = append(out, c)
	}
	return out
}

// jsonEqual compares JSON values, numbers by exact decimal value.
func jsonEqual(a, b []byte) bool {
	ok, err := testutil.JSONEqual(a, b)
	return err == nil && ok
}
