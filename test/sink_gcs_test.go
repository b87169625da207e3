package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkGCS archives a topic into Google Cloud Storage (fake-gcs-server,
// in the test's process, which the sink reaches over HTTP as store.endpoint)
// across a crash and an outage: `pqsink run` is killed with SIGKILL once its
// first file has landed, while others are being written and uploaded, and
// a second sink, with more records produced meanwhile, takes over, while
// the store answers 503 to everything for a few seconds. Every record
// lands exactly once, read back through the GCS store and DuckDB; files of
// more than a chunk went up as resumable uploads, and every upload carried
// the create-if-absent precondition.
func TestSinkGCS(t *testing.T) {
	db := duckdb.Start(t)
	// An outage of the store, when on, answers every request with 503.
	// Once armed, the next upload request starts it.
	var outage, armed atomic.Bool
	var refused atomic.Int64
	srv := fakegcs.Start(t, fakegcs.WithMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/upload/") && armed.CompareAndSwap(true, false) {
				outage.Store(true)
			}
			if outage.Load() {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":503,"message":"outage"}}`)
				return
			}
			next.ServeHTTP(w, r)
		})
	}))
	bucket := srv.NewBucket()
	const partitions, topic = 3, "gcs"
	const n1, n2 = 27000, 3000
	broker := kafkatest.Start(t, partitions, topic)
	ctx := context.Background()
	store, err := objstore.Open(ctx, fmt.Sprintf("gs://%s/archive", bucket), objstore.Endpoint(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Padded records: about 9 MB per partition, rotated at 6 MiB, so that
	// the first file of each partition is two chunks of 5 MiB.
	producePadded(t, broker.Brokers, topic, 0, n1)
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-gcs", topic: topic,
		storeURL: fmt.Sprintf("gs://%s/archive", bucket),
		format:   "variant", shred: "auto", envelope: true, records: 1000000, interval: "3s",
		path: "{topic}/{topic}+{partition}+{first_offset}.parquet"}
	text := cfg.yaml(t)
	text = replaceYAML(t, text, fmt.Sprintf("  url: gs://%s/archive\n", bucket),
		fmt.Sprintf("  url: gs://%s/archive\n  endpoint: %s\n  part_size: 5MiB\n", bucket, srv.Endpoint))
	text = replaceYAML(t, text, "  bytes: 256MiB\n", "  bytes: 6MiB\n")

	first := startSinkProcess(t, "sink-gcs-1", text)
	waitLanded(t, store, 1, 2*time.Minute)
	first.kill(t)
	landedBefore := landedCount(t, store)
	t.Logf("killed the first sink with %d records landed", landedBefore)

	producePadded(t, broker.Brokers, topic, n1, n2)
	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n1+n2 {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n1+n2)
	}
	sink, stop := startSink(t, text)
	// A store outage of a few seconds from the second sink's first upload:
	// its requests are retried (store.max_retries, 10, waits up to about
	// 85 seconds), and nothing is lost or doubled.
	armed.Store(true)
	for deadline := time.Now().Add(2 * time.Minute); !outage.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second sink uploaded nothing within 2 minutes")
		}
	}
	time.Sleep(3 * time.Second)
	outage.Store(false)
	if refused.Load() == 0 {
		t.Errorf("the outage refused no request")
	}
	t.Logf("the outage refused %d requests", refused.Load())
	waitLanded(t, store, n1+n2, 3*time.Minute)
	stop()
	if st := sink.Stats().Snapshot(); st.Rejected != 0 {
		t.Errorf("stats: %+v", st)
	}

	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, db, files, "variant", true)
	checkExactlyOnce(t, topic, truth, rows, "variant", true)

	// What went over the wire: resumable uploads for the large files, and
	// the precondition on every upload.
	var large int
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if info.Size > 5<<20 {
			large++
		}
	}
	if large == 0 {
		t.Errorf("no file larger than a chunk (5 MiB): the resumable path went untested")
	}
	kinds := map[string]int{}
	for _, r := range srv.Requests() {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Path, "/upload/storage/v1/b/"+bucket+"/o") {
			continue
		}
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatal(err)
		}
		if q.Has("upload_id") {
			continue // a chunk of a session whose start carried the precondition
		}
		kinds[q.Get("uploadType")]++
		if q.Get("ifGenerationMatch") != "0" {
			t.Errorf("upload without ifGenerationMatch=0: %s?%s", r.Path, r.Query)
		}
	}
	if kinds["resumable"] == 0 || kinds["multipart"] == 0 {
		t.Errorf("uploads by type %v, want both resumable (large files) and multipart (small ones)", kinds)
	}
}
