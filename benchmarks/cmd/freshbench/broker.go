package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pqsink/pqsink/internal/events"
)

// brokerEnv marks the child process that runs the broker and the
// producer: their memory and CPU stay out of the sink's figures.
const brokerEnv = "PQSINK_FRESHBENCH_BROKER"

// brokerMain is the child process: it starts an in-process Kafka broker
// with one topic, prints "ready ADDR", and produces reference events at
// rate records per second, stamped with the time they are produced, until
// it reads "stop" on stdin; then it prints "produced N" and keeps the
// broker up until stdin closes.
func brokerMain(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("want TOPIC PARTITIONS RATE, got %q", args)
	}
	partitions, err1 := strconv.Atoi(args[1])
	rate, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.SeedTopics(int32(partitions), args[0]))
	if err != nil {
		return fmt.Errorf("starting the broker: %w", err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.DefaultProduceTopic(args[0]),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(),
		kgo.MaxBufferedRecords(200_000),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	defer cl.Close()
	fmt.Printf("ready %s\n", c.ListenAddrs()[0])

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	in := bufio.NewScanner(os.Stdin)
	go func() {
		for in.Scan() {
			if strings.TrimSpace(in.Text()) == "stop" {
				break
			}
		}
		stop()
	}()
	var failed atomic.Pointer[error]
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	gen := events.New(1, time.Now())
	var n int64
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case now := <-tick.C:
			due := int64(now.Sub(start).Seconds() * float64(rate))
			for ; n < due && ctx.Err() == nil; n++ {
				cl.Produce(context.Background(), &kgo.Record{Key: strconv.AppendInt(nil, n%10007, 10), Value: gen.Append(nil), Timestamp: time.Now()}, done)
			}
		}
	}
	if err := cl.Flush(context.Background()); err != nil {
		return fmt.Errorf("producing: %w", err)
	}
	if err := failed.Load(); err != nil {
		return fmt.Errorf("producing: %w", *err)
	}
	fmt.Printf("produced %d\n", n)
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// broker is the child process, seen from the parent.
type broker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	addr  string
}

// startBroker starts the child process and waits for its broker.
func startBroker(ctx context.Context, topic string, partitions, rate int) (*broker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, topic, strconv.Itoa(partitions), strconv.Itoa(rate))
	cmd.Env = append(os.Environ(), brokerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the broker process: %w", err)
	}
	b := &broker{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := b.out.ReadString('\n')
	if err == nil {
		_, err = fmt.Sscanf(line, "ready %s", &b.addr)
	}
	if err != nil {
		b.close()
		return nil, fmt.Errorf("broker process: %q: %w", line, err)
	}
	return b, nil
}

// stopProducing stops the producer and returns how many records it
// produced in all.
func (b *broker) stopProducing() (int64, error) {
	if _, err := io.WriteString(b.stdin, "stop\n"); err != nil {
		return 0, fmt.Errorf("stopping the producer: %w", err)
	}
	line, err := b.out.ReadString('\n')
	var n int64
	if err == nil {
		_, err = fmt.Sscanf(line, "produced %d", &n)
	}
	if err != nil {
		return 0, fmt.Errorf("broker process: %q: %w", line, err)
	}
	return n, nil
}

// close stops the child process.
func (b *broker) close() {
	b.stdin.Close()
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
}
