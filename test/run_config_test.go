package test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
)

// issueConfig is the sink issue's configuration, as users write it; only
// the addresses, the bucket and the metrics port are filled in.
const issueConfig = `kafka:
  brokers: [%s]
  group: pqsink-archive
  topics: [events]            # or topic_regex: '^events\..*'
  start: earliest             # when the group has no committed offset: earliest | latest
  # sasl: {mechanism: SCRAM-SHA-512, username: ..., password: ${KAFKA_PASSWORD}}   tls: {ca_file: ..., cert_file: ..., key_file: ...}
store:
  url: s3://%s/raw       # or file:///var/lib/pqsink/out
  endpoint: %s
  region: us-east-1
  path_style: true
  access_key: ${S3_ACCESS_KEY}
  secret_key: ${S3_SECRET_KEY}
format:
  type: json                  # json | variant   (avro comes with the Avro issue)
  schema_file: events.schema  # message syntax, for json; variant needs none
envelope: true                # _kafka group: topic, partition, offset, timestamp, key, headers
path: "{topic}/dt={record_time:2006-01-02}/hr={record_time:15}/{topic}+{partition}+{first_offset}.parquet"
rotate:
  records: 1000000
  bytes: 256MiB
  interval: 10m
parquet:
  codec: zstd
  row_group_bytes: 64MiB
memory:
  limit: 512MiB
metrics:
  listen: 127.0.0.1:0
`

// TestRunIssueConfig runs `pqsink run --config` with the issue's file on a
// topic that kcat produced, into MinIO, and stops it with SIGTERM: the open
// files are finished, every record lands once, and the secret key appears
// nowhere in the output.
func TestRunIssueConfig(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not installed (./scripts/provision.sh installs it): %v", err)
	}
	broker := kafkatest.Start(t, 3, "events")
	srv := minio.Start(t)
	bucket := srv.NewBucket(t)

	var lines bytes.Buffer
	gen := events.New(42, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	const n = 3000
	for i := range n {
		fmt.Fprintf(&lines, "key-%d\t%s\n", i, gen.Append(nil))
	}
	runKcat(t, kcat, []string{"-P", "-b", broker.Brokers[0], "-t", "events", "-K", "\t", "-H", "source=kcat"}, &lines)
	truth := readTopic(t, broker.Brokers, "events", 3)
	if len(truth) != n {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "events.schema"), []byte(events.Schema), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "pqsink.yaml")
	if err := os.WriteFile(cfgPath, fmt.Appendf(nil, issueConfig, broker.Brokers[0], bucket, srv.Endpoint), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("S3_ACCESS_KEY", srv.AccessKey)
	t.Setenv("S3_SECRET_KEY", srv.SecretKey)
	p := runSinkProcess(t, "issue-config", cfgPath)

	// With rotate.interval 10m nothing lands before the shutdown, which
	// finishes the open files: wait until the metrics say every record is
	// consumed.
	p.waitLog(t, "serving metrics", time.Minute)
	m := regexp.MustCompile(`msg="serving metrics" address=(\S+)`).FindStringSubmatch(p.log.String())
	if m == nil {
		t.Fatalf("no metrics address in the log:\n%s", p.log.String())
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), fmt.Sprintf("pqsink_records_consumed_total %d", n)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink did not consume %d records within a minute", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.terminate(t, time.Minute)

	store, err := objstore.Open(context.Background(), fmt.Sprintf("s3://%s/raw?endpoint=%s&path_style=true&region=us-east-1", bucket, srv.Endpoint),
		objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, duckdb.Start(t), files, "json", true)
	checkExactlyOnce(t, "events", truth, rows, "json", true)
	if out := p.log.String(); strings.Contains(out, srv.SecretKey) || !strings.Contains(out, `reason=shutdown`) {
		t.Errorf("the log shows the secret key, or no file finished at shutdown:\n%s", out)
	}
}
