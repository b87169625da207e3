package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/internal/events"
)

// TestInspectTable: `inspect meta iceberg:NS.T --config FILE` on the table
// `demo --table` made shows its current snapshot, data files, schema,
// spec and each partition's committed offset in pqsink's state, and
// changes nothing in the catalog or the warehouse. A table reference
// with another subcommand, a snapshot id or no --config is a usage error,
// and a SQLite catalog that does not exist is an error that creates none.
func TestInspectTable(t *testing.T) {
	const n, partitions = 3000, 3
	work := t.TempDir()
	cmd := exec.Command(os.Args[0], "demo", "--table", "--records", fmt.Sprint(n), "--partitions", fmt.Sprint(partitions))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pqsink demo --table: %v\n%s", err, out)
	}
	dir := filepath.Join(work, "pqsink-demo")
	writeConfig := func(name, catalog string) string {
		schemaFile := writeFile(t, work, "events.schema", events.Schema)
		return writeFile(t, work, name, fmt.Sprintf(`kafka: {brokers: [127.0.0.1:9], group: g, topics: [events]}
store: {url: %q}
format: {type: json, schema_file: %s}
envelope: true
table:
  format: iceberg
  catalog: {type: sql, uri: %q}
  namespace: kafka
`, "file://"+filepath.Join(dir, "warehouse"), schemaFile, "sqlite://"+catalog))
	}
	cfg := writeConfig("pqsink.yaml", filepath.Join(dir, "catalog.db"))
	before := treeState(t, dir)

	code, stdout, stderr := pqsink(t, "", "inspect", "meta", "iceberg:kafka.events", "--config", cfg)
	if code != 0 {
		t.Fatalf("inspect meta: exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		"table      kafka.events (Iceberg, format version 2)\n",
		"  total-records: " + fmt.Sprint(n) + "\n",
		"partition spec id 0\n  _kafka_timestamp_day: day(_kafka.timestamp)\n",
		"pqsink state (pqsink.state of snapshot ",
		fmt.Sprintf("): %d partitions\n", partitions),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if m := regexp.MustCompile(`(?m)^data files (\d+), (\d+) bytes, (\d+) records$`).FindStringSubmatch(stdout); m == nil || m[3] != fmt.Sprint(n) || m[1] == "0" {
		t.Errorf("data files line %q, want %d records:\n%s", m, n, stdout)
	}
	for _, col := range []string{"id", "ts", "user", "country", "_kafka"} {
		if !regexp.MustCompile(`(?m)^  \d+: ` + col + `: `).MatchString(stdout) {
			t.Errorf("schema lacks column %s:\n%s", col, stdout)
		}
	}
	committed := regexp.MustCompile(`(?m)^  group pqsink-bench-\d+, topic events, partition (\d): committed (\d+)$`).FindAllStringSubmatch(stdout, -1)
	if len(committed) != partitions {
		t.Errorf("%d state lines, want %d:\n%s", len(committed), partitions, stdout)
	}
	for i, m := range committed {
		if m[1] != fmt.Sprint(i) || m[2] != fmt.Sprint(n/partitions) {
			t.Errorf("state line %q, want partition %d committed %d", m[0], i, n/partitions)
		}
	}
	if after := treeState(t, dir); after != before {
		t.Errorf("inspect changed the demo's folder:\nbefore\n%s\nafter\n%s", before, after)
	}

	missing := filepath.Join(work, "none", "catalog.db")
	cfgMissing := writeConfig("missing.yaml", missing)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"inspect", "schema", "iceberg:kafka.events", "--config", cfg}, 2},
		{[]string{"inspect", "meta", "iceberg:kafka.events@1", "--config", cfg}, 2},
		{[]string{"inspect", "meta", "iceberg:kafka.events"}, 2},
		{[]string{"inspect", "meta", filepath.Join(dir, "x.parquet"), "--config", cfg}, 2},
		{[]string{"inspect", "meta", "iceberg:kafka.events", "--config", cfgMissing}, 1},
		{[]string{"inspect", "meta", "iceberg:kafka.nothing", "--config", cfg}, 1},
	} {
		if code, _, stderr := pqsink(t, "", tc.args...); code != tc.code || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want %d", tc.args, code, stderr, tc.code)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("inspect of a missing SQLite catalog made %s (%v)", filepath.Dir(missing), err)
	}
}

// treeState lists every file under dir with its size and modification
// time, one per line.
func treeState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", path, info.Size(), info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
