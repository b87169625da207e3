package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/table"
)

const demoUsage = `usage: pqsink demo [flags]

Runs the whole pipeline with nothing installed: starts an in-process Kafka
broker, produces clickstream events into it, archives them with the sink
into a local directory (./pqsink-demo), and shows what landed. Nothing is
left running afterwards.

With --table the events land in an Iceberg table, kafka.events, on a
SQLite catalog (./pqsink-demo/catalog.db) over the warehouse
./pqsink-demo/warehouse, committed exactly once; the demo then prints the
table's snapshot, its metadata file and data files, and how to query it
(DuckDB's iceberg_scan) and replay it.

With --upsert (which implies --table) the demo produces a changelog
instead: inserts, updates and tombstones of --keys keys (100,000 changes
unless --records says otherwise), lands it in the upsert table
kafka.customers (key id), reads the table back with iceberg-go's scan
and prints the records, the live keys, the rows in the table and the rows
the sink replaced and deleted; it fails when the table does not hold
exactly one row per live key, with the key's last value.

flags:
`

// demoMarker marks a directory as the demo's own, so that a second run may
// replace it without ever deleting a directory it did not create.
const demoMarker = ".pqsink-demo"

func runDemo(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("demo", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() { fmt.Fprint(stderr, demoUsage); fset.PrintDefaults() }
	var o sinkbench.Options
	fset.IntVar(&o.Records, "records", 1_000_000, "events to produce and archive")
	fset.IntVar(&o.Partitions, "partitions", 4, "partitions of the topic")
	fset.StringVar(&o.Format, "format", "json", "json (typed columns from a schema) or variant (the JSON-to-VARIANT landing zone)")
	dir := fset.String("dir", "pqsink-demo", "output `directory`")
	withTable := fset.Bool("table", false, "land the events into an Iceberg table (kafka.events, a SQLite catalog in the output directory) and show how to query it")
	upsert := fset.Bool("upsert", false, "land a changelog (inserts, updates, tombstones) into an upsert table (kafka.customers, key id) and check it against the changelog; implies --table")
	keys := fset.Int("keys", 10_000, "with --upsert: the keys the changelog changes")
	rest, err := parseInterspersed(fset, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("demo takes no arguments, got %q", rest)
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	if err := prepareDemoDir(abs); err != nil {
		return err
	}
	if *upsert {
		records, format := 100_000, false
		fset.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "records":
				records = o.Records
			case "format":
				format = true
			}
		})
		if format {
			return usagef("--upsert lands JSON rows of a schema file; it takes no --format")
		}
		return runDemoUpsert(ctx, stdout, stderr, abs, records, *keys, o.Partitions)
	}
	o.Store, o.KeepOutput, o.Envelope, o.Progress = "file://"+abs, true, true, stderr
	o.Path = "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"
	var tableCfg *config.Config
	if *withTable {
		tableCfg = demoTable(&o, abs)
	}
	fmt.Fprintf(stderr, "pqsink demo: producing %d events into an in-process Kafka, then archiving them into %s\n", o.Records, abs)
	rep, err := sinkbench.Run(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			return demoInterrupted(abs)
		}
		return err
	}
	fmt.Fprintf(stdout, "\n%s\n", rep)
	var snap *table.Snapshot
	if tableCfg != nil {
		if snap, err = printDemoTable(ctx, stdout, tableCfg, abs, o.Topic, rep); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	files, err := parquetFiles(abs)
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no file landed in %s: %v", abs, err)
	}
	fmt.Fprintf(stdout, "files:\n")
	for _, f := range files[:min(len(files), 8)] {
		rel, _ := filepath.Rel(abs, f)
		fmt.Fprintf(stdout, "  %s\n", rel)
	}
	if len(files) > 8 {
		fmt.Fprintf(stdout, "  … and %d more\n", len(files)-8)
	}
	fmt.Fprintf(stdout, "\n$ pqsink inspect meta %s\n", files[0])
	if err := runInspect(ctx, []string{"meta", files[0]}, stdin, stdout, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n$ pqsink inspect rows --limit 2 %s\n", files[0])
	if err := runInspect(ctx, []string{"rows", "--limit", "2", files[0]}, stdin, stdout, stderr); err != nil || snap == nil {
		return err
	}
	printDemoQueries(stdout, snap, o.Format)
	return nil
}

// demoInterrupted is the error of a demo stopped by SIGINT or SIGTERM:
// said plainly, without the context's error or a stack of causes.
func demoInterrupted(dir string) error {
	return fmt.Errorf("interrupted: stopped before the end; nothing is left running, and what landed so far is in %s (the next demo replaces it)", dir)
}

// prepareDemoDir empties dir if an earlier demo made it, and refuses a
// directory with anything else in it.
func prepareDemoDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, demoMarker), nil, 0o644)
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); err != nil {
			return fmt.Errorf("%s exists and was not made by pqsink demo; choose another --dir", dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	return prepareDemoDir(dir)
}

func parquetFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			files = append(files, path)
		}
		return err
	})
	sort.Strings(files)
	return files, err
}
