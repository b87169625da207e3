package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/connector/source"
)

const replayUsage = `usage: pqsink replay --config FILE --from s3://bucket/prefix --topic TARGET [flags]
       pqsink replay --config FILE --from iceberg:NAMESPACE.TABLE[@SNAPSHOT_ID] --topic TARGET [flags]

Reads the Parquet files the sink landed under a prefix (s3:// or file://)
and produces their records to the topic TARGET, in their original order per
partition, with keys, headers and timestamps restored from the _kafka
envelope. Values are JSON (typed columns as an object, VARIANT as its JSON),
Avro in the Confluent wire format for files that came from Avro (the schema
is registered under TARGET-value in format.registry), JSON of their JSON
Schema for files of format.type json_schema (in Confluent's wire format, the
schema registered likewise, when they came from a registry), or the original
bytes.
The config's kafka and store sections are used as by pqsink run.

With --from iceberg:NAMESPACE.TABLE, the files are exactly the data files
of the table's current snapshot (or of snapshot SNAPSHOT_ID), found
through the catalog of the config's table section and read from its store.

SIGINT or SIGTERM stop the replay: what was produced is flushed and the
checkpoint written, and the command exits 1; rerun it with the same
checkpoint to go on. docs/replay.md has the details.

flags:
`

func runReplay(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, replayUsage); fs.PrintDefaults() }
	configFile := fs.String("config", "", "the YAML configuration `FILE` (kafka and store sections; required)")
	from := fs.String("from", "", "the files' `URL`: s3://bucket/prefix, gs://bucket/prefix, azblob://container/prefix, abfss://container@account.dfs.core.windows.net/prefix or file:///dir, or a table's snapshot: iceberg:NAMESPACE.TABLE[@SNAPSHOT_ID] (required)")
	topic := fs.String("topic", "", "the target `TOPIC`; it must exist (required)")
	var sourceTopics, partitions listFlag
	fs.Var(&sourceTopics, "source-topic", "replay only the files of this source `TOPIC` (repeatable, or comma-separated)")
	fs.Var(&partitions, "partitions", "replay only these source partitions, e.g. `0,3,7` (repeatable)")
	since := fs.String("since", "", "only records with a timestamp at or after `TIME` (RFC 3339, or YYYY-MM-DD in UTC)")
	until := fs.String("until", "", "only records with a timestamp before `TIME` (RFC 3339, or YYYY-MM-DD in UTC)")
	fromOffset := fs.Int64("from-offset", 0, "only records at or after offset `N` (in every partition)")
	toOffset := fs.Int64("to-offset", -1, "only records at or before offset `N` (in every partition); -1 for no bound")
	partitioning := fs.String("partitioning", "original", "target partition: `original` (the record's partition number) or hash (murmur2 of the key)")
	subject := fs.String("subject", "", "Schema Registry `SUBJECT` for Avro files (default TOPIC-value)")
	checkpoint := fs.String("checkpoint", "", "keep the checkpoint in this local `FILE`, and resume from it when it exists")
	storeCheckpoint := fs.String("store-checkpoint", "", "keep the checkpoint in the store, under _pqsink/replay/`NAME`/ below --from")
	batch := fs.Int("batch", 10000, "records per produce batch")
	parallel := fs.Int("parallel", 0, "source partitions replayed at once (default: the number of CPUs)")
	maxMemory := fs.String("max-memory", "1GiB", "memory budget for reading one file (`SIZE`)")
	progress := fs.String("progress", "auto", "progress display: auto (a bar when stderr is a terminal, log lines otherwise), bar, log")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("replay takes no arguments, got %q", rest)
	case *configFile == "":
		return usagef("--config is required")
	case *from == "":
		return usagef("--from is required (s3://, gs://, azblob://, abfss:// or file:// URL, or iceberg:NAMESPACE.TABLE)")
	case *topic == "":
		return usagef("--topic is required")
	case *partitioning != "original" && *partitioning != "hash":
		return usagef("--partitioning %q: want original or hash", *partitioning)
	case *progress != "auto" && *progress != "bar" && *progress != "log":
		return usagef("--progress %q: want auto, bar or log", *progress)
	case *parallel < 0:
		return usagef("--parallel %d: want a positive number, or 0 for the number of CPUs", *parallel)
	case *toOffset < -1:
		return usagef("--to-offset %d: want an offset, or -1 for no bound", *toOffset)
	}
	opts := source.Options{
		From: *from, Topic: *topic, KeyHash: *partitioning == "hash", Subject: *subject,
		FromOffset: *fromOffset, Checkpoint: *checkpoint, StoreCheckpoint: *storeCheckpoint,
		BatchRecords: *batch, Parallelism: *parallel,
	}
	if *toOffset >= 0 {
		if *toOffset < *fromOffset {
			return usagef("--to-offset %d is before --from-offset %d", *toOffset, *fromOffset)
		}
		opts.EndOffset = *toOffset + 1
	}
	for _, t := range sourceTopics {
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				opts.SourceTopics = append(opts.SourceTopics, s)
			}
		}
	}
	for _, p := range partitions {
		for _, s := range strings.Split(p, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil || n < 0 {
				return usagef("--partitions %q: want partition numbers like 0,3,7", p)
			}
			opts.Partitions = append(opts.Partitions, int32(n))
		}
	}
	if opts.Since, err = parseReplayTime("--since", *since); err != nil {
		return err
	}
	if opts.Until, err = parseReplayTime("--until", *until); err != nil {
		return err
	}
	if opts.MaxMemory, err = config.ParseSize(*maxMemory); err != nil {
		return usagef("--max-memory %q: %v", *maxMemory, err)
	}

	cfg, err := config.LoadReplay(*configFile, os.LookupEnv)
	if err != nil {
		return err
	}
	log, err := newLogger(cfg.Log, stderr)
	if err != nil {
		return err
	}
	opts.Log = log
	opts.PathTemplate = cfg.Path
	if cfg.TimeField == "" {
		// The path's {record_time} is the Kafka timestamp: keys say which
		// files a time range rules out.
		opts.PathTimezone = cfg.Timezone
	}
	opts.ProgressInterval = 10 * time.Second
	if *progress == "bar" || *progress == "auto" && isTerminal(stderr) {
		opts.Progress, opts.ProgressBar = stderr, true
	}
	if strings.HasPrefix(*from, tableScheme) {
		if err := replayFromTable(ctx, cfg, &opts, log); err != nil {
			return err
		}
	}
	r, err := source.New(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer r.Close()
	// The first signal stops the replay cleanly; a second one should not
	// wait for the flush.
	go func() {
		<-ctx.Done()
		signal.Reset(os.Interrupt, syscall.SIGTERM)
	}()
	return r.Run(ctx)
}

// parseReplayTime reads RFC 3339 or a UTC date; "" is no bound.
func parseReplayTime(flagName, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("%s %q: want RFC 3339 (2026-11-23T10:00:00Z) or a date (2026-11-23, UTC)", flagName, s)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
