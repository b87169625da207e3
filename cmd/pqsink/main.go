// Command pqsink lands Kafka streams in object storage as Parquet. Its
// subcommands:
//
//	pqsink run --config FILE              the sink daemon: Kafka to Parquet in an object store
//	pqsink replay --config FILE --from URL --topic TOPIC
//	                                      the archived records back into a Kafka topic
//	pqsink compact --config FILE          the small files of Iceberg tables rewritten into bigger ones
//	pqsink demo [flags]                   the whole pipeline on an in-process Kafka
//	pqsink dev-broker [flags]             that in-process Kafka on a local port, until interrupted
//	pqsink bench [flags]                  the sink measured end to end on generated events
//	pqsink convert [flags] INPUT OUTPUT   JSON Lines (or Avro) to one Parquet file
//	pqsink inspect meta|schema|rows FILE  a Parquet file's metadata, schema or rows
//	pqsink inspect meta iceberg:NS.TABLE --config FILE
//	                                      an Iceberg table's snapshot, files, schema, spec and pqsink state
//	pqsink version                        the version and build
//
// Run `pqsink COMMAND -h` for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	_ "time/tzdata" // timezone: works in minimal containers without zoneinfo

	"github.com/pqsink/pqsink/internal/earlysignal"
	"github.com/pqsink/pqsink/internal/version"
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "archive Kafka topics into an object store as Parquet (the daemon)", runRun},
		{"replay", "produce archived Parquet files back into a Kafka topic", runReplay},
		{"compact", "rewrite the small files of Iceberg tables into bigger ones", runCompact},
		{"demo", "run the whole pipeline on an in-process Kafka into ./pqsink-demo", runDemo},
		{"dev-broker", "start the demo's in-process Kafka on a local port, to try run without Docker", runDevBroker},
		{"bench", "measure the sink end to end on generated events", runBench},
		{"convert", "convert JSON Lines to a Parquet file", runConvert},
		{"inspect", "show a Parquet file's metadata, schema or rows, or an Iceberg table's metadata", runInspect},
		{"version", "print the version and build", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// A signal that came while the packages initialized stops the
	// command as if it came now.
	if early := earlysignal.Handover(); early != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		cancel()
	}
	// PQSINK_CPUPROFILE=FILE profiles any command, for performance reports.
	if path := os.Getenv("PQSINK_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pqsink: PQSINK_CPUPROFILE:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	// PQSINK_MEMPROFILE=FILE writes the heap profile at exit: what the
	// command allocated (alloc_space) and what it still held.
	if path := os.Getenv("PQSINK_MEMPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "pqsink: PQSINK_MEMPROFILE:", err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// run is main without the process: it returns the exit status, 2 for a
// usage error and 1 for a failure.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "__broker" {
		if err := runBroker(ctx, args[1:], stdin, stdout, stderr); err != nil {
			// Interrupted with its parent (a Ctrl-C reaches both): the
			// parent says so.
			if ctx.Err() == nil {
				fmt.Fprintf(stderr, "pqsink __broker: %v\n", err)
			}
			return 1
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdin, stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "pqsink %s: %v\n", c.name, err)
			return 2
		}
		var st statusError
		if errors.As(err, &st) {
			fmt.Fprintf(stderr, "pqsink %s: %v\n", c.name, err)
			return st.code
		}
		fmt.Fprintf(stderr, "pqsink %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "pqsink: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: pqsink COMMAND [flags] [args]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, c.summary)
	}
}

// statusError is an outcome reported with an exit status of its own, for
// scripts to tell it apart from a failure (1) and a usage error (2).
type statusError struct {
	code int
	msg  string
}

func (e statusError) Error() string { return e.msg }

// exitAllRejected is convert's exit status when it rejected every line it
// read (with --errors skip or file:), so its output holds no rows.
const exitAllRejected = 3

// usageError is a mistake in the command line, reported with exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func runVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, "usage: pqsink version\n\nPrints pqsink's version and build.\n") }
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments")
	}
	fmt.Fprintf(stdout, "pqsink %s (build %s)\n", version.Version, version.Build())
	return nil
}

// parseInterspersed parses flags that may come before, between or after the
// positional arguments, as users of `pqsink convert IN OUT --codec zstd`
// expect. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		if args[0] == "--" {
			return append(positional, args[1:]...), nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// listFlag collects a repeatable flag's values.
type listFlag []string

func (l *listFlag) String() string     { return fmt.Sprint([]string(*l)) }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }
