// Command convertbench measures `pqsink convert` against DuckDB converting
// the same JSON Lines to ZSTD Parquet on one thread, in one run: CPU
// seconds (user+system, from the kernel's accounting of each child process)
// and output size. DuckDB runs in node through the @duckdb/node-api package
// of test/duckdb (run scripts/provision.sh first); the CPU time node and
// DuckDB take to start and stop with no work is measured too and
// subtracted, and both figures are printed.
//
//	go run ./benchmarks/cmd/convertbench -n 1000000 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pqsink/pqsink/benchmarks"
	"github.com/pqsink/pqsink/benchmarks/internal/proc"
)

func main() {
	n := flag.Int("n", 1_000_000, "records to convert")
	runs := flag.Int("runs", 3, "runs of each command; the fastest is reported")
	dir := flag.String("dir", "", "work directory (default: a temporary one, removed at exit)")
	flag.Parse()
	if err := run(*n, *runs, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "convertbench:", err)
		os.Exit(1)
	}
}

func run(n, runs int, dir string) error {
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
	input := filepath.Join(dir, "click.jsonl")
	schemaFile := filepath.Join(dir, "click.schema")
	if err := os.WriteFile(schemaFile, []byte(benchmarks.ClickSchema), 0o644); err != nil {
		return err
	}
	clicks := benchmarks.Clicks(n)
	size, err := proc.WriteLines(input, n, func(dst []byte, i int) []byte { return clicks[i].AppendJSON(dst) })
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, "pqsink")
	build := exec.Command("go", "build", "-o", bin, "./cmd/pqsink")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build pqsink: %w", err)
	}
	duckdbDir := filepath.Join(root, "test", "duckdb")
	pqOut := filepath.Join(dir, "pqsink.parquet")
	duckOut := filepath.Join(dir, "duckdb.parquet")
	columns := `{event_id: 'VARCHAR', user_id: 'BIGINT', session_id: 'VARCHAR', event_type: 'VARCHAR', page_url: 'VARCHAR', referrer: 'VARCHAR', country: 'VARCHAR', device: 'VARCHAR', ts: 'TIMESTAMPTZ', duration_ms: 'INTEGER', price: 'DOUBLE', is_bot: 'BOOLEAN'}`
	copySQL := fmt.Sprintf(`COPY (SELECT * FROM read_json('%s', format = 'newline_delimited', columns = %s)) TO '%s' (FORMAT parquet, COMPRESSION zstd)`, input, columns, duckOut)

	fmt.Printf("input: %d records, %.1f MB of JSON Lines\n", n, float64(size)/1e6)
	pq, err := proc.Best(runs, func() (proc.Timing, error) {
		return proc.Measure(exec.Command(bin, "convert", "--quiet", "--schema", schemaFile, "--codec", "zstd", input, pqOut))
	})
	if err != nil {
		return fmt.Errorf("pqsink convert: %w", err)
	}
	duck, idle, err := proc.DuckDB(duckdbDir, runs, copySQL)
	if err != nil {
		return err
	}
	pqSize, err := proc.FileSize(pqOut)
	if err != nil {
		return err
	}
	duckSize, err := proc.FileSize(duckOut)
	if err != nil {
		return err
	}
	if err := sameRows(duckdbDir, pqOut, duckOut); err != nil {
		return err
	}
	duckWork := duck.CPU - idle.CPU
	fmt.Printf("%-28s %10s %10s %14s\n", "", "cpu s", "wall s", "file bytes")
	fmt.Printf("%-28s %10.2f %10.2f %14d\n", "pqsink convert", pq.CPU.Seconds(), pq.Wall.Seconds(), pqSize)
	fmt.Printf("%-28s %10.2f %10.2f %14d\n", "duckdb (threads=1)", duck.CPU.Seconds(), duck.Wall.Seconds(), duckSize)
	fmt.Printf("%-28s %10.2f %10.2f\n", "duckdb start/stop only", idle.CPU.Seconds(), idle.Wall.Seconds())
	fmt.Printf("pqsink/duckdb cpu: %.2f (%.2f against duckdb less its start-up); size: %.3f\n",
		pq.CPU.Seconds()/duck.CPU.Seconds(), pq.CPU.Seconds()/duckWork.Seconds(), float64(pqSize)/float64(duckSize))
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
