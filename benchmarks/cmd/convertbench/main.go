// Command convertbench measures `pqsink convert` against DuckDB converting
// the same JSON Lines to ZSTD Parquet with a declared schema, in one run:
// CPU seconds (user+system, from the kernel's accounting of each child
// process), wall-clock seconds, peak RSS and output size, for each
// --threads setting of pqsink and for DuckDB on one thread and on its
// default (one per core). DuckDB runs in node through the @duckdb/node-api
// package of test/duckdb (run scripts/provision.sh first); the CPU time
// node and DuckDB take to start and stop with no work is measured too and
// shown, and so is the peak RSS of that idle process (node's own share of
// DuckDB's figure, which varies from run to run).
//
// Two data sets, both of n records: "events", the sink's reference record
// (internal/events: id, ts, user, country, amount, tags[], payload{session,
// nested{level, flag, score}}), and "click", the clickstream of the writer
// benchmarks. For each, the command prints the ratios (CPU on one thread,
// wall-clock at the default threads, RSS, file size), checks that every
// thread setting wrote the same bytes and that pqsink's and DuckDB's files
// hold the same rows, and lists each column's compressed size and
// encodings in both files.
//
//	go run ./benchmarks/cmd/convertbench -n 1000000 -runs 3
//	go run ./benchmarks/cmd/convertbench -data events -threads 1,2
//	go run ./benchmarks/cmd/convertbench -bin /tmp/old-pqsink -threads -1
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/benchmarks"
	"github.com/pqsink/pqsink/benchmarks/internal/proc"
	"github.com/pqsink/pqsink/internal/events"
)

func main() {
	proc.Main()
	n := flag.Int("n", 1_000_000, "records to convert")
	runs := flag.Int("runs", 3, "runs of each command; the one with the least CPU is reported")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed at exit)")
	data := flag.String("data", "events,click", "data sets, comma-separated: events, click")
	threads := flag.String("threads", "1,0", "pqsink --threads settings, comma-separated; 0 is pqsink's default (one per core), -1 passes no --threads (for a -bin that predates it)")
	binFlag := flag.String("bin", "", "a pqsink binary to measure (default: built from this module)")
	columns := flag.Bool("columns", true, "list each column's size and encodings in both files")
	flag.Parse()
	var settings []int
	for _, t := range strings.Split(*threads, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil || v < -1 {
			fmt.Fprintf(os.Stderr, "convertbench: -threads %q: want numbers ≥ -1\n", *threads)
			os.Exit(2)
		}
		settings = append(settings, v)
	}
	if err := run(*n, *runs, *dir, *binFlag, strings.Split(*data, ","), settings, *columns); err != nil {
		fmt.Fprintln(os.Stderr, "convertbench:", err)
		os.Exit(1)
	}
}

// dataSet is one input of the benchmark: its schema, for pqsink and for
// DuckDB's read_json, and its lines.
type dataSet struct {
	name        string
	schema      string
	duckColumns string
	line        func(n int) func(dst []byte, i int) []byte
}

var dataSets = map[string]dataSet{
	"events": {
		name:        "events",
		schema:      events.Schema,
		duckColumns: `{id: 'BIGINT', ts: 'TIMESTAMPTZ', user: 'VARCHAR', country: 'VARCHAR', amount: 'DOUBLE', tags: 'VARCHAR[]', payload: 'STRUCT(session VARCHAR, nested STRUCT(level INTEGER, flag BOOLEAN, score DOUBLE))'}`,
		line: func(int) func([]byte, int) []byte {
			gen := events.New(1, time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
			return func(dst []byte, _ int) []byte { return append(gen.Append(dst), '\n') }
		},
	},
	"click": {
		name:        "click",
		schema:      benchmarks.ClickSchema,
		duckColumns: `{event_id: 'VARCHAR', user_id: 'BIGINT', session_id: 'VARCHAR', event_type: 'VARCHAR', page_url: 'VARCHAR', referrer: 'VARCHAR', country: 'VARCHAR', device: 'VARCHAR', ts: 'TIMESTAMPTZ', duration_ms: 'INTEGER', price: 'DOUBLE', is_bot: 'BOOLEAN'}`,
		line: func(n int) func([]byte, int) []byte {
			clicks := benchmarks.Clicks(n)
			return func(dst []byte, i int) []byte { return clicks[i].AppendJSON(dst) }
		},
	},
}

func run(n, runs int, dir, bin string, sets []string, threads []int, columns bool) error {
	root, err := proc.ModuleRoot()
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "convertbench-*"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	if bin == "" {
		bin = filepath.Join(dir, "pqsink")
		build := exec.Command("go", "build", "-o", bin, "./cmd/pqsink")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build pqsink: %w", err)
		}
	}
	fmt.Printf("machine: %d cores (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	for _, name := range sets {
		ds, ok := dataSets[strings.TrimSpace(name)]
		if !ok {
			return fmt.Errorf("unknown data set %q: want events or click", name)
		}
		if err := runSet(ds, root, bin, dir, n, runs, threads, columns); err != nil {
			return fmt.Errorf("%s: %w", ds.name, err)
		}
	}
	return nil
}

// result is one row of the table.
type result struct {
	name    string
	threads string
	t       proc.Timing
	size    int64
}

func runSet(ds dataSet, root, bin, dir string, n, runs int, threads []int, columns bool) error {
	input := filepath.Join(dir, ds.name+".jsonl")
	schemaFile := filepath.Join(dir, ds.name+".schema")
	if err := os.WriteFile(schemaFile, []byte(ds.schema), 0o644); err != nil {
		return err
	}
	size, err := proc.WriteLines(input, n, ds.line(n))
	if err != nil {
		return err
	}
	duckdbDir := filepath.Join(root, "test", "duckdb")
	duckOut := filepath.Join(dir, ds.name+"-duckdb.parquet")
	copySQL := fmt.Sprintf(`COPY (SELECT * FROM read_json('%s', format = 'newline_delimited', columns = %s)) TO '%s' (FORMAT parquet, COMPRESSION zstd)`, input, ds.duckColumns, duckOut)
	fmt.Printf("\n== %s: %d records, %.1f MB of JSON Lines\n", ds.name, n, float64(size)/1e6)

	var results []result
	var pqOuts []string
	for _, th := range threads {
		out := filepath.Join(dir, fmt.Sprintf("%s-pqsink-t%d.parquet", ds.name, th))
		args := []string{"convert", "--quiet"}
		if th >= 0 {
			args = append(args, "--threads", strconv.Itoa(th))
		}
		args = append(args, "--schema", schemaFile, "--codec", "zstd", input, out)
		t, err := proc.Best(runs, func() (proc.Timing, error) { return proc.Measure(exec.Command(bin, args...)) })
		if err != nil {
			return fmt.Errorf("pqsink convert --threads %d: %w", th, err)
		}
		sz, err := proc.FileSize(out)
		if err != nil {
			return err
		}
		results = append(results, result{"pqsink convert", threadName(th), t, sz})
		pqOuts = append(pqOuts, out)
	}
	duck1, idle, err := proc.DuckDBThreads(duckdbDir, runs, 1, copySQL)
	if err != nil {
		return err
	}
	duckSize, err := proc.FileSize(duckOut)
	if err != nil {
		return err
	}
	duckN, _, err := proc.DuckDBThreads(duckdbDir, runs, 0, copySQL)
	if err != nil {
		return err
	}
	results = append(results,
		result{"duckdb", "1", duck1, duckSize},
		result{"duckdb", threadName(0), duckN, duckSize},
		result{"duckdb start/stop only", "1", idle, 0})

	fmt.Printf("%-24s %8s %8s %8s %10s %14s\n", "", "threads", "cpu s", "wall s", "peak MiB", "file bytes")
	for _, r := range results {
		fmt.Printf("%-24s %8s %8.2f %8.2f %10.0f %14d\n", r.name, r.threads, r.t.CPU.Seconds(), r.t.Wall.Seconds(), float64(r.t.RSS)/(1<<20), r.size)
	}
	for i, r := range results[:len(pqOuts)] {
		duck := duck1
		if threads[i] == 0 || threads[i] > 1 {
			duck = duckN
		}
		fmt.Printf("pqsink(threads=%s)/duckdb(threads=%s): cpu %.2f (%.2f against duckdb less its start-up), wall %.2f, peak RSS %.2f, size %.3f\n",
			r.threads, duckThreads(threads[i]), r.t.CPU.Seconds()/duck.CPU.Seconds(), r.t.CPU.Seconds()/(duck.CPU-idle.CPU).Seconds(),
			r.t.Wall.Seconds()/duck.Wall.Seconds(), float64(r.t.RSS)/float64(duck.RSS), float64(r.size)/float64(duckSize))
	}
	if err := sameBytes(pqOuts); err != nil {
		return err
	}
	if err := sameRows(duckdbDir, pqOuts[0], duckOut); err != nil {
		return err
	}
	if columns {
		return columnSizes(duckdbDir, pqOuts[0], duckOut)
	}
	return nil
}

func threadName(t int) string {
	if t < 0 {
		return "(none)"
	}
	if t == 0 {
		return fmt.Sprintf("default(%d)", runtime.NumCPU())
	}
	return strconv.Itoa(t)
}

// duckThreads names the DuckDB run a pqsink thread setting is compared
// with: one thread with one thread, several with DuckDB's default.
func duckThreads(t int) string {
	if t == 0 || t > 1 {
		return threadName(0)
	}
	return "1"
}

// sameBytes checks that every thread setting wrote the same file.
func sameBytes(paths []string) error {
	if len(paths) < 2 {
		return nil
	}
	first, err := os.ReadFile(paths[0])
	if err != nil {
		return err
	}
	for _, p := range paths[1:] {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(first, b) {
			return fmt.Errorf("%s and %s differ: the thread setting changed the output", paths[0], p)
		}
	}
	fmt.Printf("check: every --threads setting wrote the same %d bytes\n", len(first))
	return nil
}

// sameRows checks, with DuckDB, that both files hold the same rows.
func sameRows(duckdbDir, a, b string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	q := fmt.Sprintf(`COPY (SELECT (SELECT count(*) FROM (SELECT * FROM read_parquet('%[1]s') EXCEPT ALL SELECT * FROM read_parquet('%[2]s'))) + (SELECT count(*) FROM (SELECT * FROM read_parquet('%[2]s') EXCEPT ALL SELECT * FROM read_parquet('%[1]s'))) AS diff) TO '/dev/stdout' (FORMAT csv, HEADER false)`, a, b)
	cmd := exec.CommandContext(ctx, "node", "exec.mjs", q)
	cmd.Dir = duckdbDir
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("compare outputs: %w", err)
	}
	if strings.TrimSpace(string(out)) != "0" {
		return fmt.Errorf("pqsink's and DuckDB's files differ in %s rows", strings.TrimSpace(string(out)))
	}
	fmt.Println("check: both files hold the same rows (DuckDB EXCEPT ALL both ways)")
	return nil
}

// columnSizes prints each column's compressed bytes and page encodings in
// both files, as DuckDB's parquet_metadata reports them.
func columnSizes(duckdbDir, pq, duck string) error {
	type col struct {
		size int64
		encs string
	}
	read := func(path string) (map[string]col, []string, error) {
		rows, err := proc.DuckDBRows(duckdbDir, fmt.Sprintf(`SELECT path_in_schema, sum(total_compressed_size), string_agg(DISTINCT encodings, ' ') FROM parquet_metadata('%s') GROUP BY path_in_schema ORDER BY min(column_id)`, path))
		if err != nil {
			return nil, nil, err
		}
		m := map[string]col{}
		var order []string
		for _, r := range rows {
			if len(r) < 3 {
				continue
			}
			name := strings.ReplaceAll(strings.ReplaceAll(r[0], ", ", "."), ",", ".")
			size, _ := strconv.ParseInt(r[1], 10, 64)
			m[name] = col{size, r[2]}
			order = append(order, name)
		}
		return m, order, nil
	}
	p, order, err := read(pq)
	if err != nil {
		return err
	}
	d, _, err := read(duck)
	if err != nil {
		return err
	}
	fmt.Printf("%-24s %12s %12s %7s  %-40s %s\n", "column", "pqsink B", "duckdb B", "ratio", "pqsink encodings", "duckdb encodings")
	for _, name := range order {
		ratio := 0.0
		if d[name].size > 0 {
			ratio = float64(p[name].size) / float64(d[name].size)
		}
		fmt.Printf("%-24s %12d %12d %7.3f  %-40s %s\n", name, p[name].size, d[name].size, ratio, p[name].encs, d[name].encs)
	}
	return nil
}
