package main

import (
	"fmt"
	"strings"
	"testing"
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

// TestRunCheck: --check accepts a good configuration without connecting
// to Kafka, and the effective configuration it would log hides secrets.
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
	code, _, stderr := pqsink(t, "", "run", "--config", cfg, "--check")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "is valid") || strings.Contains(stderr, "hunter2-secret") {
		t.Errorf("stderr: %s", stderr)
	}
	if code, _, stderr := pqsink(t, "", "run"); code != 2 || !strings.Contains(stderr, "--config is required") {
		t.Errorf("no --config: exit %d: %s", code, stderr)
	}
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
