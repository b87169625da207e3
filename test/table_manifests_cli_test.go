package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
)

// TestCompactRewritesManifests: a table committed six times lists six
// manifests; `pqsink compact --rewrite-manifests-above 3 --dry-run` says it
// would merge them and changes nothing, and without --dry-run merges them
// into one, in a snapshot of its own. The table reads the same (iceberg-go,
// and DuckDB over the files the snapshot lists), and a sink appends on top.
func TestCompactRewritesManifests(t *testing.T) {
	const partitions, batch = 2, 200
	env := newTableEnv(t, "manifested")
	broker := kafkatest.Start(t, partitions, env.topic)
	text := env.config(t, broker.Brokers, "mfs", "1s", 100)
	_, stop := startSink(t, text)
	for i := range 6 {
		produceEvents(t, broker.Brokers, env.topic, i*batch, batch)
		env.waitRows(t, (i+1)*batch, 2*time.Minute)
	}
	stop()
	manifests := func() int {
		t.Helper()
		tbl := env.load(t)
		fsys, err := tbl.FS(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		m, err := tbl.CurrentSnapshot().Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	before := manifests()
	if before < 6 {
		t.Fatalf("six commits left %d manifests", before)
	}
	cfgPath := filepath.Join(t.TempDir(), "pqsink.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(pqsinkBinary(t), append([]string{"compact", "--config", cfgPath, "--quiet", "--min-input-files", "1000", "--rewrite-manifests-above", "3"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pqsink compact %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	snap := env.load(t).CurrentSnapshot().SnapshotID
	if out := run("--dry-run"); !strings.Contains(out, "kafka."+env.topic+": "+strconv.Itoa(before)+" manifests, would merge them") {
		t.Errorf("dry run printed:\n%s", out)
	}
	if env.load(t).CurrentSnapshot().SnapshotID != snap {
		t.Error("the dry run changed the table")
	}
	out := run()
	if !regexp.MustCompile(`kafka\.` + env.topic + `: merged \d+ of \d+ manifests into 1 \(1 now\), snapshot \d+`).MatchString(out) {
		t.Errorf("compact printed:\n%s", out)
	}
	if got := manifests(); got != 1 {
		t.Errorf("%d manifests after the rewrite, want 1", got)
	}
	if out := run(); !strings.Contains(out, "1 manifests, 3 or fewer: left as they are") {
		t.Errorf("a second run printed:\n%s", out)
	}

	produceEvents(t, broker.Brokers, env.topic, 6*batch, batch)
	_, stop = startSink(t, text)
	env.waitRows(t, 7*batch, 2*time.Minute)
	stop()
	truth := readTopic(t, broker.Brokers, env.topic, partitions)
	env.check(t, truth)
	checkSnapshotFiles(t, env, env.load(t), truth)
}
