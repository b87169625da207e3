package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector"
	"github.com/pqsink/pqsink/internal/memlimit"
	"github.com/pqsink/pqsink/internal/version"
)

const runUsage = `usage: pqsink run --config FILE

Consumes Kafka topics as a member of a consumer group and archives them into
an object store as Parquet files, exactly once. SIGTERM or SIGINT finish the
open files and exit 0; a second signal exits at once.

flags:
`

func runRun(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, runUsage); fs.PrintDefaults() }
	configFile := fs.String("config", "", "the YAML configuration `FILE` (required)")
	check := fs.Bool("check", false, "check the configuration and exit")
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
	if *check {
		sink, err := connector.New(ctx, cfg, log, connector.CheckOnly())
		if err != nil {
			return err
		}
		sink.Close()
		fmt.Fprintf(stderr, "pqsink run: %s is valid\n", *configFile)
		return nil
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
	_, stopMetrics, err := connector.ServeMetrics(cfg.Metrics.Listen, sink, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	if err := sink.Run(ctx); err != nil {
		return err
	}
	st := sink.Stats().Snapshot()
	log.Info("pqsink stopped", "records_uploaded", st.RecordsUploaded, "files", sum(st.Files), "bytes", st.BytesUploaded,
		"records_consumed", st.Consumed, "records_reread", st.Reread)
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
