package test

import (
	"context"
	"encoding/base64"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/segmentio/kafka-go"

	"github.com/pqsink/pqsink/internal/events"
	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/internal/testutil/faultproxy"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/objstore"
)

const (
	// faultPartSize is the store's part size: S3's minimum, so that a
	// few megabytes per partition make multipart uploads.
	faultPartSize = 5 << 20
	// faultPad is the incompressible filler added to each reference event,
	// so that 9,000 records per partition make a file of more than
	// rotate.bytes (6 MiB; the file is about 9 MB, written in row groups
	// of about 1.3 MB, so a mid-file check sees it over).
	faultPad = 1000
	// faultInterval is rotate.interval: it closes the files of the
	// records produced while S3 is down.
	faultInterval = 3 * time.Second
)

// TestSinkFaults archives a topic into a store through a proxy that fails,
// cuts and delays its requests, including answers lost after the store
// carried the request out (an upload that succeeded while the sink saw an
// error), and then refuses every connection for a few seconds. Every
// record must land exactly once, and files must tell their ranges right.
// It runs on S3 (MinIO), Google Cloud Storage (fake-gcs-server) and Azure
// Blob Storage (Azurite), with the same faults: the proxy names their
// requests after the S3 operations that do the same job
// (faultproxy.GCSOperation, faultproxy.AzureOperation).
func TestSinkFaults(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) { testSinkFaults(t, newStoreTarget(t, kind, "archive")) })
	}
}

func testSinkFaults(t *testing.T, target storeTarget) {
	db := duckdb.Start(t)
	seed := uint64(20261123)
	if s := os.Getenv("PQSINK_FAULT_SEED"); s != "" {
		// To explore: the same run with other sequences of faults.
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PQSINK_FAULT_SEED: %v", err)
		}
	}
	t.Logf("fault seed %d (PQSINK_FAULT_SEED)", seed)
	proxy := target.faultProxy(t, seed)
	const partitions, topic = 4, "faults"
	const n1, n2 = 36000, 4000
	broker := kafkatest.Start(t, partitions, topic)

	// The sink's store goes through the proxy; the test's own, for
	// waiting and reading back, straight to the store.
	store := target.store(t)

	faults := faultproxy.Rates{Error500: 0.05, Error503: 0.05, DropBefore: 0.015, DropAfter: 0.015, Delay: 0.2, MaxDelay: 200 * time.Millisecond}
	proxy.SetRates(faults)
	// A CreateMultipartUpload whose answer is lost leaves an upload that
	// no one knows the id of: only stale_upload_age cleans it (after a
	// day, by default), so it would fail the check that no upload is
	// left behind, though nothing is wrong. Its other faults stay. (On
	// GCS it is the start of a resumable upload, whose lost session
	// creates nothing; Azure has no such request.)
	creates := faults
	creates.DropAfter = 0
	proxy.SetRatesFor(creates, faultproxy.CreateMultipartUpload)
	// fake-gcs-server takes a chunk of a resumable upload twice when its
	// answer is lost and the SDK sends it again (GCS does not: see
	// objstore's TestGCSChunkAnswerLost), which makes a corrupt object
	// that no client could prevent: on it, chunks keep their other faults.
	// The last chunk, which finalizes the object, loses answers as
	// everything else does.
	dropAfterParts := target.kind != "gcs"
	if !dropAfterParts {
		parts := faults
		parts.DropAfter = 0
		proxy.SetRatesFor(parts, faultproxy.UploadPart)
	}
	// Some sixty requests make the run (parts are 5 MiB): at these rates
	// a kind of fault could miss the operations that matter most. Their
	// first requests meet each kind for sure; the rates add more at random.
	partFaults := []faultproxy.Fault{faultproxy.Error500, faultproxy.DropBefore, faultproxy.Error503}
	if dropAfterParts {
		partFaults = append(partFaults, faultproxy.DropAfter)
	}
	for op, fs := range map[faultproxy.Op][]faultproxy.Fault{
		faultproxy.UploadPart:              partFaults,
		faultproxy.CompleteMultipartUpload: {faultproxy.DropAfter, faultproxy.Error503},
		faultproxy.PutObject:               {faultproxy.DropAfter, faultproxy.DropBefore},
		faultproxy.CreateMultipartUpload:   {faultproxy.Error503},
		faultproxy.HeadObject:              {faultproxy.Error500},
		faultproxy.GetObject:               {faultproxy.DropBefore},
	} {
		for _, f := range fs {
			proxy.Inject(op, f, 1)
		}
	}

	start := time.Now()
	producePadded(t, broker.Brokers, topic, 0, n1)
	t.Logf("produced %d records in %v", n1, time.Since(start).Round(time.Millisecond))

	cfg := sinkConfig{brokers: broker.Brokers, group: "g-faults", topic: topic,
		storeURL: target.url, storeKeys: target.keysVia(proxy.URL) + "  part_size: 5MiB\n  max_retries: 30\n",
		format: "variant", shred: "auto", envelope: true, records: 1000000, interval: faultInterval.String(),
		path: "{topic}/{topic}+{partition}+{first_offset}.parquet"}
	text := cfg.yaml(t)
	text = replaceYAML(t, text, "  bytes: 256MiB\n", "  bytes: 6MiB\n")
	text = replaceYAML(t, text, "  row_group_bytes: 1MiB\n", "  row_group_bytes: 2MiB\n")
	sink, stop := startSink(t, text)
	t.Cleanup(func() {
		// Before the sink stops (cleanups run last first): requests still
		// in flight show as such.
		if t.Failed() {
			t.Logf("proxy:\n%s\nproxy journal:\n%s", proxy, proxy.Journal())
		}
	})

	// Phase 1: faults at steady rates.
	waitLanded(t, store, n1, 90*time.Second)
	t.Logf("phase 1 landed after %v", time.Since(start).Round(time.Millisecond))

	// Phase 2: the store unreachable while more records arrive, until a
	// second after the upload of their files (due rotate.interval after
	// they open) was first refused; then back. Not much longer: each
	// refused attempt doubles the store's next backoff, which is what the
	// sink then waits for after the store is back.
	proxy.SetDown(true)
	down := time.Now()
	// Phase 1 had the faults at random; this one is about the store
	// being away.
	proxy.SetRates(faultproxy.Rates{})
	proxy.SetRatesFor(faultproxy.Rates{}, faultproxy.CreateMultipartUpload)
	producePadded(t, broker.Brokers, topic, n1, n2)
	time.Sleep(faultInterval)
	before := proxy.Refusals() + proxy.Count("", faultproxy.Refused)
	for deadline := time.Now().Add(15 * time.Second); proxy.Refusals()+proxy.Count("", faultproxy.Refused) == before; {
		if time.Now().After(deadline) {
			t.Fatalf("the sink made no request of the store in the %v that it was down", time.Since(down))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	refusals := proxy.Refusals() + proxy.Count("", faultproxy.Refused)
	proxy.SetDown(false)
	up := time.Now()
	waitLanded(t, store, n1+n2, 90*time.Second)
	t.Logf("phase 2: down for %v, %d connections or requests refused, landed %v after coming back",
		up.Sub(down).Round(time.Millisecond), refusals, time.Since(up).Round(time.Millisecond))
	stop()
	st := sink.Stats().Snapshot()
	t.Logf("done after %v; sink stats %+v\nproxy:\n%s", time.Since(start).Round(time.Millisecond), st, proxy)
	if failed := sink.Failed(); len(failed) > 0 {
		t.Errorf("partitions stopped: %v", failed)
	}

	// The proxy did its job: every kind of fault, and lost answers of
	// requests that succeeded for both ways of completing an object.
	for _, f := range []faultproxy.Fault{faultproxy.Error500, faultproxy.Error503, faultproxy.DropBefore, faultproxy.DropAfter, faultproxy.Delayed} {
		if proxy.Count("", f) == 0 {
			t.Errorf("the proxy injected no %s fault", f)
		}
	}
	lostPuts, lostCompletes := proxy.LostSuccesses(faultproxy.PutObject), proxy.LostSuccesses(faultproxy.CompleteMultipartUpload)
	if lostPuts == 0 || lostCompletes == 0 {
		t.Errorf("answers lost after success: %d single-request uploads, %d completions; want some of each", lostPuts, lostCompletes)
	}
	// Each object whose answer was lost exists, and its retry (or a later
	// upload of the same file) found it there: the sink adopted it. (On
	// fake-gcs-server, the retry of a resumable upload's last chunk whose
	// answer was lost meets a forgotten session, 404, and the sink's
	// later upload of the file adopts it; GCS answers that retry with the
	// object, and the upload succeeds without adopting: see objstore's
	// TestGCSFinalChunkAnswerLost.)
	if st.Adopted < int64(lostPuts+lostCompletes) {
		t.Errorf("%d objects adopted, but the answers of %d uploads that succeeded were lost", st.Adopted, lostPuts+lostCompletes)
	}
	// Objects up to one part go up in a single request, larger ones in
	// parts; both kinds occur.
	if proxy.Requests(faultproxy.PutObject) == 0 || proxy.Requests(faultproxy.UploadPart) == 0 || proxy.Requests(faultproxy.CompleteMultipartUpload) == 0 {
		t.Errorf("requests: %d single-request uploads, %d parts, %d completions: want some of each",
			proxy.Requests(faultproxy.PutObject), proxy.Requests(faultproxy.UploadPart), proxy.Requests(faultproxy.CompleteMultipartUpload))
	}
	if st.Files["bytes"] == 0 {
		t.Errorf("no file rotated by bytes: %v", st.Files)
	}
	if target.kind == "s3" {
		checkS3Uploads(t, target, store)
	}

	// Every record exactly once, as DuckDB reads the files.
	truth := readTopic(t, broker.Brokers, topic, partitions)
	if len(truth) != n1+n2 {
		t.Fatalf("Kafka holds %d records, want %d", len(truth), n1+n2)
	}
	files := download(t, store, t.TempDir())
	checkFileRanges(t, files)
	rows := readWithDuckDB(t, db, files, "variant", true)
	checkExactlyOnce(t, topic, truth, rows, "variant", true)
	t.Logf("checked after %v", time.Since(start).Round(time.Millisecond))
}

// checkS3Uploads checks what S3 tells of the uploads: none left
// half-done, and objects of more than a part made of as many 5 MiB parts
// as they need (MinIO's ETag of those ends in "-" and the number of
// parts, as S3's does), the others of a single PUT.
func checkS3Uploads(t *testing.T, target storeTarget, store objstore.Store) {
	t.Helper()
	ctx := context.Background()
	bucket, _, _ := strings.Cut(strings.TrimPrefix(target.url, "s3://"), "/")
	ups, err := target.s3.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range ups.Uploads {
		t.Errorf("multipart upload left behind: %s (id %s, started %v)", aws.ToString(u.Key), aws.ToString(u.UploadId), aws.ToTime(u.Initiated))
	}
	single, multi := 0, 0
	for info, err := range store.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(info.Key, ".parquet") {
			continue
		}
		parts := 0
		if _, n, ok := strings.Cut(info.ETag, "-"); ok {
			if parts, err = strconv.Atoi(n); err != nil {
				t.Fatalf("%s: ETag %q", info.Key, info.ETag)
			}
		}
		want := 0
		if info.Size > faultPartSize {
			want = int((info.Size + faultPartSize - 1) / faultPartSize)
		}
		if parts != want {
			t.Errorf("%s: %d bytes in %d parts (ETag %s), want %d parts (0: a single PUT)", info.Key, info.Size, parts, info.ETag, want)
		}
		if parts == 0 {
			single++
		} else {
			multi++
		}
	}
	t.Logf("%d objects by single PUT, %d by multipart upload", single, multi)
	if single == 0 || multi == 0 {
		t.Errorf("%d single PUTs and %d multipart uploads: want both", single, multi)
	}
}

// replaceYAML replaces the one occurrence of old in a rendered config.
func replaceYAML(t *testing.T, text, old, new string) string {
	t.Helper()
	if strings.Count(text, old) != 1 {
		t.Fatalf("config has %d lines %q, want one:\n%s", strings.Count(text, old), old, text)
	}
	return strings.Replace(text, old, new, 1)
}

// producePadded writes n reference events to topic, each with a "pad"
// member of faultPad random bytes in base64 that no codec shrinks, and
// keys and headers as produceEvents sets them.
func producePadded(t *testing.T, brokers []string, topic string, first, n int) {
	t.Helper()
	w := &kafka.Writer{Transport: testTransport(t),
		Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{},
		BatchSize: 500, BatchTimeout: 2 * time.Millisecond, RequiredAcks: kafka.RequireAll,
	}
	defer w.Close()
	gen := events.New(uint64(first)+1, time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC))
	rng := rand.NewChaCha8([32]byte{byte(first), byte(first >> 8), byte(first >> 16)})
	base := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	pad := make([]byte, faultPad)
	msgs := make([]kafka.Message, 0, 500)
	flush := func() {
		if err := w.WriteMessages(context.Background(), msgs...); err != nil {
			t.Fatalf("producing: %v", err)
		}
		msgs = msgs[:0]
	}
	for i := first; i < first+n; i++ {
		v := gen.Append(nil)
		rng.Read(pad)
		v = append(v[:len(v)-1], `,"pad":"`...)
		v = base64.StdEncoding.AppendEncode(v, pad)
		v = append(v, `"}`...)
		m := kafka.Message{Value: v, Time: base.Add(time.Duration(i) * 7 * time.Second), Key: []byte("k" + strconv.Itoa(i))}
		if i%5 == 0 {
			m.Key = nil
		}
		if i%3 == 0 {
			m.Headers = []kafka.Header{{Key: "trace", Value: []byte("t-" + strconv.Itoa(i))}}
		}
		msgs = append(msgs, m)
		if len(msgs) == cap(msgs) {
			flush()
		}
	}
	if len(msgs) > 0 {
		flush()
	}
}
