package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDevBroker: dev-broker listens where it says, holds the topics it
// was asked for with their partitions and the events it produced, takes
// records from any client, and stops cleanly when interrupted.
func TestDevBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	done := make(chan error, 1)
	go func() {
		done <- runDevBroker(ctx, []string{"--port", "0", "--topics", "a, b", "--partitions", "3", "--events", "50"}, nil, outW, &stderr)
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	if !lines.Scan() {
		t.Fatalf("no line from dev-broker: %v; stderr %q", <-done, stderr.String())
	}
	first := lines.Text()
	var addr string
	if _, err := fmt.Sscanf(first, "dev-broker: listening on %s", &addr); err != nil {
		t.Fatalf("first line %q: %v", first, err)
	}
	addr = strings.TrimSuffix(addr, ";")
	if !strings.HasPrefix(addr, "127.0.0.1:") || !strings.Contains(first, "topics a, b (3 partitions each, 50 events each)") {
		t.Errorf("first line %q", first)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("a", "b"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"a", "b"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != 0 || len(rt.Partitions) != 3 {
			t.Errorf("topic %v: error %d, %d partitions; want 3", *rt.Topic, rt.ErrorCode, len(rt.Partitions))
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "b", Value: []byte(`{"id":1}`)}).FirstErr(); err != nil {
		t.Fatalf("producing into b: %v", err)
	}
	count := map[string]int{}
	for count["a"]+count["b"] < 101 {
		fetches := cl.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) { count[r.Topic]++ })
	}
	if count["a"] != 50 || count["b"] != 51 {
		t.Errorf("records a=%d b=%d, want 50 and 51", count["a"], count["b"])
	}

	cancel()
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := <-done; err != nil {
		t.Errorf("interrupted dev-broker returned %v, want nil", err)
	}
	if len(rest) != 1 || !strings.HasPrefix(rest[0], "dev-broker: stopped") {
		t.Errorf("after the interrupt: %q", rest)
	}
}

// TestDevBrokerUsage: bad flags are usage errors (exit 2).
func TestDevBrokerUsage(t *testing.T) {
	for _, args := range [][]string{
		{"dev-broker", "--port", "70000"},
		{"dev-broker", "--partitions", "0"},
		{"dev-broker", "--topics", " , "},
		{"dev-broker", "--events", "-1"},
		{"dev-broker", "extra"},
	} {
		if code, _, stderr := pqsink(t, "", args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, code, stderr)
		}
	}
}
