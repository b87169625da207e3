package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
	"github.com/pqsink/pqsink/config"
)

const benchUsage = `usage: pqsink bench [flags]

Loads generated clickstream events (about 210 bytes of JSON each) into a
topic, runs the sink on them into a store, and reports records/s, MB/s of
input, peak RSS, files and bytes per record. By default the broker is an
in-process Kafka in a child process and the store a temporary directory.

flags:
`

func runBench(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	var o sinkbench.Options
	fs.IntVar(&o.Records, "records", 1_000_000, "events to load and archive")
	fs.IntVar(&o.Partitions, "partitions", 4, "partitions of the topic")
	fs.StringVar(&o.Format, "format", "json", "json (typed columns), variant, or protobuf (the events as Protobuf messages, format.proto_file)")
	fs.StringVar(&o.Codec, "codec", "zstd", "compression `codec[:level]`")
	fs.StringVar(&o.Memory, "memory", "", "the sink's memory budget, e.g. 256MiB (default: memory.limit's default, 512MiB)")
	recordBytes := fs.String("record-bytes", "", "pad each event to this `SIZE` of JSON (e.g. 20MiB) with a long user name, and set max_record_bytes to it (default: events as they are, about 210 bytes)")
	fs.BoolVar(&o.Envelope, "envelope", true, "write the _kafka envelope columns")
	brokers := fs.String("brokers", "", "comma-separated `brokers` of an existing Kafka (default: an in-process broker in a child process)")
	fs.StringVar(&o.Topic, "topic", "events", "topic to load")
	fs.StringVar(&o.Store, "store", "", "store `URL` (default: a temporary directory)")
	endpoint := fs.String("endpoint", "", "S3 endpoint `URL` for an s3:// store (credentials from the AWS environment)")
	fs.StringVar(&o.Table, "table", "", "land the topic in an Iceberg table: `sqlite` (a catalog in a temporary folder) or a postgres:// catalog URI (default: files only)")
	fs.DurationVar(&o.CommitInterval, "commit-interval", 10*time.Second, "table.commit_interval with --table")
	fs.DurationVar(&o.RotateInterval, "rotate-interval", 0, "rotate.interval: finish each open file this often (default: the sink's default)")
	quiet := fs.Bool("quiet", false, "no progress lines")
	verbose := fs.Bool("verbose", false, "the sink's log on stderr")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("bench takes no arguments, got %q", rest)
	}
	if *recordBytes != "" {
		if o.RecordBytes, err = config.ParseSize(*recordBytes); err != nil || o.RecordBytes <= 0 {
			return usagef("--record-bytes %q: want a positive size, e.g. 20MiB", *recordBytes)
		}
	}
	if *brokers != "" {
		o.Brokers = strings.Split(*brokers, ",")
	}
	if *endpoint != "" {
		o.StoreExtra = fmt.Sprintf("  endpoint: %s\n  path_style: true\n", *endpoint)
		if os.Getenv("AWS_ACCESS_KEY_ID") != "" {
			o.StoreExtra += "  access_key: ${AWS_ACCESS_KEY_ID}\n  secret_key: ${AWS_SECRET_ACCESS_KEY}\n"
		}
	}
	if !*quiet {
		o.Progress = stderr
	}
	if *verbose {
		o.Log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	rep, err := sinkbench.Run(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, rep)
	return nil
}

// runBroker is the hidden child process of bench and demo: an in-process
// broker loaded with events.
func runBroker(ctx context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) error {
	return sinkbench.ServeBroker(ctx, args, stdin, stdout)
}
