package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/connector/metrics"
	"github.com/pqsink/pqsink/internal/memlimit"
	"github.com/pqsink/pqsink/internal/version"
)

const runUsage = `usage: pqsink run --config FILE [--check [--offline]]

Consumes Kafka topics as a member of a consumer group and archives them into
an object store as Parquet files, exactly once. SIGTERM or SIGINT finish the
open files and exit 0 (1 when some could not be finished); a second signal
exits at once.

--check checks the configuration and contacts, read-only, what the sink
depends on: the brokers and topics, the store's bucket with its credentials,
the dead-letter destination and the table catalog. It creates nothing; what
the sink would create (a file:// folder, a SQLite catalog) is reported.
--offline skips the contacts.

flags:
`

func runRun(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	configFile := fs.String("config", "", "the YAML configuration `FILE` (required)")
	check := fs.Bool("check", false, "check the configuration, contact the brokers, store and catalog read-only, and exit")
	offline := fs.Bool("offline", false, "with --check: check the configuration only, contacting nothing")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("run takes no arguments, got %q", rest)
	}
	if *configFile == "" {
		return usagef("--config is required")
	}
	cfg, err := config.Load(*configFile, os.LookupEnv)
	if err != nil {
		return err
	}
	if err := checkMemoryLimit(cfg.Memory.Limit); err != nil {
		return err
	}
	log, err := newLogger(cfg.Log, stderr)
	if err != nil {
		return err
	}
	if *offline && !*check {
		return usagef("--offline goes with --check")
	}
	if *check {
		return runCheck(ctx, cfg, log, *configFile, *offline, stderr)
	}
	sink, err := connector.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer sink.Close()
	// The runtime collects garbage harder as the process nears
	// memory.limit: the sink's buffers stay within the budget, and so
	// should the garbage between collections.
	memlimit.Set(cfg.Memory.Limit)
	log.Info("pqsink starting", "version", version.Version, "build", version.Build(), "config", *configFile,
		"group", cfg.Kafka.Group, "store", cfg.Store.URL, "format", cfg.Format.Type)
	log.Debug("effective configuration", "config", cfg.Redacted())

	// The first signal asks for a clean shutdown; a second one should not
	// wait for it.
	go func() {
		<-ctx.Done()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
	}()
	_, stopMetrics, err := metrics.Serve(cfg.Metrics.Listen, sink, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	err = sink.Run(ctx)
	if err != nil && !errors.Is(err, connector.ErrUnfinished) {
		return err
	}
	st := sink.Stats().Snapshot()
	log.Info("pqsink stopped", "records_uploaded", st.RecordsUploaded, "files", sum(st.Files), "bytes", st.BytesUploaded,
		"records_consumed", st.Consumed, "records_reread", st.Reread)
	if err != nil {
		// Exit 1: a supervisor or a script sees that the shutdown
		// left work for the next owner.
		log.Error("pqsink stopped with work unfinished", "error", err)
	}
	return err
}

// runCheck is run --check: the configuration, then, unless offline, what
// it names, each contact bounded by connector.CheckTimeout. It changes
// nothing.
func runCheck(ctx context.Context, cfg *config.Config, log *slog.Logger, file string, offline bool, stderr io.Writer) error {
	opts := []connector.Option{connector.CheckOnly()}
	if offline {
		opts = append(opts, connector.Offline())
	}
	nctx, cancel := context.WithTimeout(ctx, 2*connector.CheckTimeout)
	sink, err := connector.New(nctx, cfg, log, opts...)
	cancel()
	if err != nil {
		return err
	}
	defer sink.Close()
	notes, err := sink.Check(ctx, connector.CheckTimeout)
	for _, n := range notes {
		fmt.Fprintf(stderr, "pqsink run: note: %s\n", n)
	}
	if err != nil {
		return fmt.Errorf("%s: the check failed:\n%w", file, err)
	}
	what := "is valid"
	if offline {
		what = "is valid (offline: brokers, store and catalog not contacted)"
	}
	fmt.Fprintf(stderr, "pqsink run: %s %s\n", file, what)
	return nil
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// newLogger builds the log/slog logger of the log section.
func newLogger(c config.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
