package test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkEndToEnd archives a topic with pqsink run's runtime, for each
// format, with and without the envelope, into MinIO and into a directory,
// and reads every file back with DuckDB: every record exactly once, equal
// to what Kafka holds.
func TestSinkEndToEnd(t *testing.T) {
	db := duckdb.Start(t)
	srv := minio.Start(t)
	cases := []struct {
		name     string
		format   string
		shred    string
		envelope bool
		s3       bool
	}{
		{"json-envelope-s3", "json", "", true, true},
		{"json-plain-file", "json", "", false, false},
		{"variant-auto-envelope-file", "variant", "auto", true, false},
		{"variant-none-envelope-s3", "variant", "none", true, true},
		{"variant-auto-plain-s3", "variant", "auto", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const partitions, n = 3, 2500
			topic := "events-" + strings.ReplaceAll(c.name, "-", "")
			broker := kafkatest.Start(t, partitions, topic)
			produceEvents(t, broker.Brokers, topic, 0, n)
			truth := readTopic(t, broker.Brokers, topic, partitions)
			if len(truth) != n {
				t.Fatalf("Kafka holds %d records, want %d", len(truth), n)
			}

			cfg := sinkConfig{brokers: broker.Brokers, group: "g-" + c.name, topic: topic, format: c.format, shred: c.shred, envelope: c.envelope, records: 700, interval: "2s"}
			var store objstore.Store
			ctx := context.Background()
			if c.s3 {
				bucket := srv.NewBucket(t)
				cfg.storeURL = fmt.Sprintf("s3://%s/archive", bucket)
				cfg.s3 = &s3Target{endpoint: srv.Endpoint, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey}
				var err error
				store, err = objstore.Open(ctx, cfg.storeURL+"?endpoint="+srv.Endpoint+"&path_style=true&region="+srv.Region,
					objstore.StaticCredentials(srv.AccessKey, srv.SecretKey, ""))
				if err != nil {
					t.Fatal(err)
				}
			} else {
				dir := t.TempDir()
				cfg.storeURL = "file://" + dir
				var err error
				if store, err = objstore.Open(ctx, cfg.storeURL); err != nil {
					t.Fatal(err)
				}
			}
			defer store.Close()

			sink, stop := startSink(t, cfg.yaml(t))
			waitLanded(t, store, n, 2*time.Minute)
			stop()
			st := sink.Stats().Snapshot()
			if st.RecordsUploaded != n || st.Rejected != 0 {
				t.Errorf("stats: %+v", st)
			}

			files := download(t, store, t.TempDir())
			if len(files) < n/700 {
				t.Errorf("%d files, want at least %d (rotation every 700 records)", len(files), n/700)
			}
			checkFileRanges(t, files)
			for _, f := range files {
				if want := topic + "/dt=2026-11-"; !strings.HasPrefix(f.key, want) || !strings.Contains(filepath.Base(f.key), topic+"+") {
					t.Errorf("key %s does not follow the path template", f.key)
				}
			}
			rows := readWithDuckDB(t, db, files, c.format, c.envelope)
			checkExactlyOnce(t, topic, truth, rows, c.format, c.envelope)
		})
	}
}
