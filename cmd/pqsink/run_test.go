package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pqconfig "github.com/pqsink/pqsink/config"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/table"
)

// TestRunConfigErrors: a bad configuration stops `pqsink run` before it
// connects anywhere, with a message naming each bad key, and never shows
// a secret.
func TestRunConfigErrors(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "events.schema", testSchema)
	const secret, password = "s3cr3t-KEY-value", "kafka-PASS-word"
	cases := []struct {
		name, body string
		want       []string
	}{
		{"unknown key", `kafka: {brokers: [b:9092], group: g, topics: [t], topicz: [x]}`, []string{"kafka.topicz", "unknown key"}},
		{"wrong type", `rotate: {records: many}`, []string{"rotate.records"}},
		{"impossible value", `kafka: {brokers: [b:9092], group: g, topics: [t], start: middle}`, []string{"kafka.start", "earliest, latest"}},
		{"bad codec", `parquet: {codec: zstdd}`, []string{"parquet.codec"}},
		{"bad path", `path: "{topic}/{partition}.parquet"`, []string{"path", "{first_offset}"}},
		{"bad secret type", `store: {url: "s3://b/p", secret_key: [` + secret + `]}`, []string{"store.secret_key"}},
		{"bad sasl", `kafka: {brokers: [b:9092], group: g, topics: [t], sasl: {mechanism: MD5, username: u, password: ` + password + `}}`, []string{"kafka.sasl.mechanism"}},
	}
	base := map[string]string{
		"kafka":  "kafka: {brokers: [b:9092], group: g, topics: [t]}",
		"store":  fmt.Sprintf("store: {url: \"file://%s/out\", secret_key: %s}", dir, secret),
		"format": fmt.Sprintf("format: {type: json, schema_file: %s}", schemaFile),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var lines []string
			for _, sec := range []string{"kafka", "store", "format"} {
				if !strings.HasPrefix(c.body, sec+":") {
					lines = append(lines, base[sec])
				}
			}
			lines = append(lines, c.body)
			cfg := writeFile(t, t.TempDir(), "pqsink.yaml", strings.Join(lines, "\n")+"\n")
			code, stdout, stderr := pqsink(t, "", "run", "--config", cfg)
			if code == 0 {
				t.Fatalf("exit 0 for a bad configuration:\n%s", strings.Join(lines, "\n"))
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, s := range []string{secret, password} {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("a secret appears in the output:\n%s", stdout+stderr)
				}
			}
		})
	}
}

// TestRunCheck: --check --offline accepts a good configuration without
// connecting to Kafka, and the effective configuration it would log hides
// secrets.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "events.schema", testSchema)
	cfg := writeFile(t, dir, "pqsink.yaml", fmt.Sprintf(`kafka:
  brokers: [127.0.0.1:1]
  group: g
  topics: [events]
  sasl: {mechanism: SCRAM-SHA-512, username: u, password: hunter2-secret}
store:
  url: file://%s/out
format:
  type: json
  schema_file: %s
`, dir, schemaFile))
	code, _, stderr := pqsink(t, "", "run", "--config", cfg, "--check", "--offline")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "is valid (offline") || strings.Contains(stderr, "hunter2-secret") {
		t.Errorf("stderr: %s", stderr)
	}
	if code, _, stderr := pqsink(t, "", "run"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("no --config: exit %d: %s", code, stderr)
	}
	if code, _, stderr := pqsink(t, "", "run", "--config", cfg, "--offline"); code != 2 || !strings.Contains(stderr, "--offline goes with --check") {
		t.Errorf("--offline without --check: exit %d: %s", code, stderr)
	}
}

// TestRunCheckContacts: --check contacts the brokers, the topics, the
// store's bucket with its credentials and the catalog, and fails naming
// the configuration key of each that does not answer as it should; it
// creates no file or folder (a missing file:// folder or SQLite catalog is
// a note), and opens an existing SQLite catalog without changing it.
func TestRunCheckContacts(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "events.schema", testSchema)
	broker := kafkatest.Start(t, 1, "events")
	srv := minio.Start(t)
	bucket := srv.NewBucket(t)
	config := func(brokers, topic, store, table string) string {
		return fmt.Sprintf("kafka: {brokers: [%s], group: g, topics: [%s]}\nstore: %s\nformat: {type: json, schema_file: %s}\n%s",
			brokers, topic, store, schemaFile, table)
	}
	good := broker.Brokers[0]
	fileStore := func(d string) string { return fmt.Sprintf("{url: \"file://%s\"}", d) }
	s3Store := func(bucket, secret string) string {
		return fmt.Sprintf("{url: \"s3://%s/p\", endpoint: %q, path_style: true, region: %s, access_key: %s, secret_key: %q}",
			bucket, srv.Endpoint, srv.Region, srv.AccessKey, secret)
	}
	sqlite := func(db string) string {
		return fmt.Sprintf("table: {format: iceberg, namespace: kafka, catalog: {type: sql, uri: 'sqlite://%s'}}\n", db)
	}
	for _, tc := range []struct {
		name, text string
		want       []string // in stderr; the check fails when one names a key
		fails      bool
	}{
		{"good, file store", config(good, "events", fileStore(filepath.Join(dir, "a", "out")), ""), []string{"note: store.url: the folder", "is valid"}, false},
		{"good, s3 store", config(good, "events", s3Store(bucket, srv.SecretKey), ""), []string{"is valid"}, false},
		{"wrong broker", config("127.0.0.1:1", "events", fileStore(dir), ""), []string{"kafka.brokers: cannot reach 127.0.0.1:1"}, true},
		{"missing topic", config(good, "nosuchtopic", fileStore(dir), ""), []string{`kafka.topics: topic "nosuchtopic" does not exist`}, true},
		// The first check did not create it (the broker would on a
		// request that allows it).
		{"missing topic again", config(good, "nosuchtopic", fileStore(dir), ""), []string{`kafka.topics: topic "nosuchtopic" does not exist`}, true},
		{"missing bucket", config(good, "events", s3Store("nosuchbucket", srv.SecretKey), ""), []string{"store.url:", "NoSuchBucket"}, true},
		{"wrong keys", config(good, "events", s3Store(bucket, "wrong-secret-key"), ""), []string{"store.url:", "SignatureDoesNotMatch"}, true},
		{"missing sqlite catalog", config(good, "events", fileStore(filepath.Join(dir, "b", "wh")), sqlite(filepath.Join(dir, "b", "state", "catalog.db"))),
			[]string{"note: table.catalog.uri: the SQLite catalog", "does not exist yet", "is valid"}, false},
		{"everything wrong at once", config("127.0.0.1:1", "events", s3Store("nosuchbucket", srv.SecretKey), ""), []string{"kafka.brokers", "store.url", "NoSuchBucket"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeFile(t, t.TempDir(), "pqsink.yaml", tc.text)
			before := tree(t, dir)
			code, _, stderr := pqsink(t, "", "run", "--config", cfg, "--check")
			if (code != 0) != tc.fails {
				t.Errorf("exit %d, want failure %v:\n%s", code, tc.fails, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "wrong-secret-key") || strings.Contains(stderr, srv.SecretKey) {
				t.Errorf("a secret key appears in the output:\n%s", stderr)
			}
			if after := tree(t, dir); !slices.Equal(before, after) {
				t.Errorf("the check changed the files: before %q, after %q", before, after)
			}
		})
	}

	// An existing SQLite catalog is read, not changed: a table absent
	// from it is checked, not created.
	state := filepath.Join(dir, "c", "catalog.db")
	cfgText := config(good, "events", fileStore(filepath.Join(dir, "c", "wh")), sqlite(state))
	cfg, err := pqconfig.Parse([]byte(cfgText), nil)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := table.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cat.Close()
	before := tree(t, dir)
	code, _, stderr := pqsink(t, "", "run", "--config", writeFile(t, t.TempDir(), "pqsink.yaml", cfgText), "--check")
	if code != 0 || strings.Contains(stderr, "note: table.catalog.uri") {
		t.Errorf("existing catalog: exit %d:\n%s", code, stderr)
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Errorf("the check changed the files: before %q, after %q", before, after)
	}
}

// tree lists the files and folders under dir with their sizes and
// modification times.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		size := fi.Size()
		if d.IsDir() {
			size = 0
		}
		out = append(out, fmt.Sprintf("%s %d %d", p, size, fi.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunMemoryBeyondMachine: a memory.limit above the machine's memory
// bounds nothing and is refused, by --check too.
func TestRunMemoryBeyondMachine(t *testing.T) {
	dir := t.TempDir()
	schemaFile := writeFile(t, dir, "events.schema", testSchema)
	cfg := writeFile(t, dir, "pqsink.yaml", fmt.Sprintf(`kafka: {brokers: [127.0.0.1:1], group: g, topics: [events]}
store: {url: "file://%s/out"}
format: {type: json, schema_file: %s}
memory: {limit: 100TiB}
`, dir, schemaFile))
	code, _, stderr := pqsink(t, "", "run", "--config", cfg, "--check")
	if code == 0 || !strings.Contains(stderr, "memory.limit: 100TiB is more than") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
