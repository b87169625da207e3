package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/pqsink/pqsink/cmd/pqsink/internal/sinkbench"
)

const devBrokerUsage = `usage: pqsink dev-broker [--port 9092] [--topics events] [--partitions 4] [--events N]

Starts the in-process Kafka broker of pqsink demo (franz-go's kfake, which
speaks Kafka's protocol) on 127.0.0.1:PORT, creates the topics, and runs
until interrupted (Ctrl-C). It is for trying pqsink run, replay and
compact without Docker or a Kafka installation: everything it holds is in
memory and gone when it stops. With --events N it produces N of the
demo's clickstream events (JSON objects; format.type: variant lands them
without a schema) into each topic; any Kafka client (kcat, a producer of
yours) can produce more. Not for production: one broker, no persistence,
no security.

flags:
`

func runDevBroker(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev-broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, devBrokerUsage); fs.PrintDefaults() }
	port := fs.Int("port", 9092, "the loopback `PORT` to listen on (0: any free port, printed)")
	topicList := fs.String("topics", "events", "comma-separated `TOPICS` to create")
	partitions := fs.Int("partitions", 4, "partitions of each topic")
	events := fs.Int("events", 0, "reference events to produce into each topic at the start (`N`)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("dev-broker takes no arguments, got %q", rest)
	}
	if *port < 0 || *port > 65535 {
		return usagef("--port %d: want 0 to 65535", *port)
	}
	if *partitions < 1 || *partitions > 10000 {
		return usagef("--partitions %d: want 1 to 10000", *partitions)
	}
	if *events < 0 {
		return usagef("--events %d: want 0 or more", *events)
	}
	var topics []string
	for _, t := range strings.Split(*topicList, ",") {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	if len(topics) == 0 {
		return usagef("--topics %q: want one topic name or more", *topicList)
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(*port), kfake.SeedTopics(int32(*partitions), topics...))
	if err != nil {
		return fmt.Errorf("starting the broker on 127.0.0.1:%d: %w", *port, err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	for _, t := range topics {
		if *events == 0 {
			break
		}
		if _, err := sinkbench.Load(ctx, []string{addr}, t, *events, 0); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("producing events into %s: %w", t, err)
		}
	}
	fmt.Fprintf(stdout, "dev-broker: listening on %s; topics %s (%d partitions each, %d events each); in memory only; Ctrl-C stops it\n",
		addr, strings.Join(topics, ", "), *partitions, *events)
	<-ctx.Done()
	fmt.Fprintln(stdout, "dev-broker: stopped; what it held is gone")
	return nil
}
