package test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestReplayCLI runs `pqsink replay` with good and bad command lines: each
// mistake exits with its status and a message that says what to fix.
func TestReplayCLI(t *testing.T) {
	const partitions, n = 3, 600
	broker := kafkatest.Start(t, partitions, "cli-src", "cli-dst")
	// A target with fewer partitions than the sources.
	small := kafkatest.Start(t, 1, "cli-small")
	produceReplayEvents(t, broker.Brokers, "cli-src", n, false)
	dir := t.TempDir()
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-cli", topic: "cli-src", format: "json", envelope: true,
		records: 200, interval: "2s", storeURL: "file://" + dir}
	store, err := objstore.Open(context.Background(), cfg.storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	text := cfg.yaml(t)
	_, stop := startSink(t, text)
	waitLanded(t, store, n, 2*time.Minute)
	stop()

	work := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(work, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := write("full.yaml", text)
	// A config for replay alone: no group, topics or format.
	minimal := write("minimal.yaml", fmt.Sprintf("kafka:\n  brokers: [%s]\nstore:\n  url: %s\npath: %q\n",
		strings.Join(broker.Brokers, ","), cfg.storeURL, "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"))
	smallCfg := write("small.yaml", fmt.Sprintf("kafka:\n  brokers: [%s]\nstore:\n  url: %s\n", strings.Join(small.Brokers, ","), cfg.storeURL))

	tests := []struct {
		name   string
		args   []string
		status int
		want   string // in stderr
	}{
		{"no config", []string{"--from", cfg.storeURL, "--topic", "cli-dst"}, 2, "--config is required"},
		{"no from", []string{"--config", full, "--topic", "cli-dst"}, 2, "--from is required"},
		{"no topic", []string{"--config", full, "--from", cfg.storeURL}, 2, "--topic is required"},
		{"bad partitioning", []string{"--config", full, "--from", cfg.storeURL, "--topic", "cli-dst", "--partitioning", "random"}, 2, "want original or hash"},
		{"bad time", []string{"--config", full, "--from", cfg.storeURL, "--topic", "cli-dst", "--since", "yesterday"}, 2, "RFC 3339"},
		{"bad partitions", []string{"--config", full, "--from", cfg.storeURL, "--topic", "cli-dst", "--partitions", "1,x"}, 2, "partition numbers"},
		{"offsets backwards", []string{"--config", full, "--from", cfg.storeURL, "--topic", "cli-dst", "--from-offset", "10", "--to-offset", "5"}, 2, "before --from-offset"},
		{"bad scheme", []string{"--config", full, "--from", "ftp://x/y", "--topic", "cli-dst"}, 1, `unsupported scheme "ftp" (want s3, gs, azblob, abfss or file)`},
		{"too few partitions", []string{"--config", smallCfg, "--from", cfg.storeURL, "--topic", "cli-small"}, 1, "--partitioning hash"},
		{"minimal config, one partition", []string{"--config", minimal, "--from", cfg.storeURL, "--topic", "cli-dst", "--partitions", "2"}, 0, "replay finished"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(pqsinkBinary(t), append([]string{"replay"}, tc.args...)...)
			out, err := cmd.CombinedOutput()
			status := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit status %d, want %d, with %q in:\n%s", status, tc.status, tc.want, out)
			}
		})
	}
	got := readTopic(t, broker.Brokers, "cli-dst", partitions)
	want := map[string]produced{}
	for id, p := range readTopic(t, broker.Brokers, "cli-src", partitions) {
		if p.Partition == 2 {
			want[id] = p
		}
	}
	compareReplayed(t, want, got, 0)
}
