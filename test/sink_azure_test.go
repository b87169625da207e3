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

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

// TestSinkAzure archives a topic into Azure Blob Storage (Azurite, reached
// through a proxy in the test's process, whose URL is store.endpoint)
// across a crash and an outage: `pqsink run` is killed with SIGKILL once
// its first file has landed, while others are being staged as blocks, and
// a second sink, with more records produced meanwhile, takes over, while
// the store answers 503 to everything for a few seconds. Every record
// lands exactly once, read back through the Azure store and DuckDB; files
// of more than a block went up as staged blocks and a block list, every
// request that creates a blob carried If-None-Match: *, and the account
// key shows in no log.
//
// Where Azurite differs from the service: it refuses a conditional Put
// Blob over a name that holds only the killed sink's uncommitted blocks,
// which the service takes; the store then commits the object as a block
// list instead (see objstore's TestAzuritePreconditions), so this test
// passes through that path whenever the first sink died with blocks
// staged under a key that the second sink writes as one block.
func TestSinkAzure(t *testing.T) {
	db := duckdb.Start(t)
	srv := azurite.Start(t)
	t.Setenv(objstore.EnvAzureAccount, srv.Account)
	t.Setenv(objstore.EnvAzureKey, srv.Key)
	t.Setenv(objstore.EnvAzureSASToken, "")
	// An outage of the store, when on, answers every request with 503.
	// Once armed, the next write request starts it.
	var outage, armed atomic.Bool
	var refused atomic.Int64
	proxy := srv.Proxy(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && armed.CompareAndSwap(true, false) {
				outage.Store(true)
			}
			if outage.Load() {
				refused.Add(1)
				io.Copy(io.Discard, r.Body)
				w.Header().Set("x-ms-error-code", "ServerBusy")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	container := srv.NewContainer(t)
	const partitions, topic = 3, "azure"
	const n1, n2 = 27000, 3000
	broker := kafkatest.Start(t, partitions, topic)
	ctx := context.Background()
	storeURL := fmt.Sprintf("azblob://%s/archive", container)
	store, err := objstore.Open(ctx, storeURL, objstore.Endpoint(srv.Endpoint))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// Padded records: about 9 MB per partition, rotated at 6 MiB, so that
	// the first file of each partition is two blocks of 5 MiB.
	producePadded(t, broker.Brokers, topic, 0, n1)
	cfg := sinkConfig{brokers: broker.Brokers, group: "g-azure", topic: topic,
		storeURL: storeURL,
		format:   "variant", shred: "auto", envelope: true, records: 1000000, interval: "3s",
		path: "{topic}/{topic}+{partition}+{first_offset}.parquet"}
	text := cfg.yaml(t)
	text = replaceYAML(t, text, fmt.Sprintf("  url: %s\n", storeURL),
		fmt.Sprintf("  url: %s\n  endpoint: %s\n  part_size: 5MiB\n", storeURL, proxy.Endpoint))
	text = replaceYAML(t, text, "  bytes: 256MiB\n", "  bytes: 6MiB\n")

	first := startSinkProcess(t, "sink-azure-1", text)
	waitLanded(t, store, 1, 2*time.Minute)
	first.kill(t)
	landedBefore := landedCount(t, store)
	t.Logf("killed the first sink with %d records landed", landedBefore)
	if first.log.Contains(srv.Key) {
		t.Errorf("the first sink's log shows the account key")
	}

	producePadded(t, broker.Brokers, topic, n1, n2)
	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n1+n2 {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n1+n2)
	}
	sink, stop := startSink(t, text)
	// A store outage of a few seconds from the second sink's first write:
	// its requests are retried (store.max_retries, 10), and nothing is
	// lost or doubled.
	armed.Store(true)
	for deadline := time.Now().Add(2 * time.Minute); !outage.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second sink wrote nothing within 2 minutes")
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

	// What went over the wire: block lists for the large files, and the
	// condition on every request that creates a blob.
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
		t.Errorf("no file larger than a block (5 MiB): the staged path went untested")
	}
	ops := map[string]int{}
	for _, r := range proxy.Requests() {
		if r.Method != http.MethodPut || !strings.HasPrefix(r.Path, "/"+srv.Account+"/"+container+"/") {
			continue
		}
		q, err := url.ParseQuery(r.Query)
		if err != nil {
			t.Fatal(err)
		}
		comp := q.Get("comp")
		ops[comp]++
		if comp != "block" && r.IfNoneMatch != "*" {
			t.Errorf("a request creating a blob without If-None-Match: *: PUT %s?%s", r.Path, r.Query)
		}
	}
	if ops["blocklist"] == 0 || ops[""] == 0 || ops["block"] == 0 {
		t.Errorf("writes by kind %v, want block lists (large files) and single Put Blobs (small ones)", ops)
	}
}
