package test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/pqsink/pqsink/connector/metrics"
	"github.com/pqsink/pqsink/internal/testutil/faultproxy"
	kafkatest "github.com/pqsink/pqsink/internal/testutil/kafka"
	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// TestSinkReadyz: /readyz says not ready while S3 is unreachable, and
// ready again once it answers; /healthz says alive throughout.
func TestSinkReadyz(t *testing.T) {
	broker := kafkatest.Start(t, 1, "r")
	srv := minio.Start(t)
	proxy := faultproxy.Start(t, srv.Endpoint, 1)
	bucket := srv.NewBucket(t)
	cfg := sinkConfig{brokers: broker.Brokers, group: "r", topic: "r", storeURL: fmt.Sprintf("s3://%s/x", bucket), format: "variant", shred: "none", envelope: true, records: 100,
		s3: &s3Target{endpoint: proxy.URL, region: srv.Region, access: srv.AccessKey, secret: srv.SecretKey}}
	sink, stop := startSink(t, cfg.yaml(t))
	defer stop()
	addr, stopMetrics, err := metrics.Serve("127.0.0.1:0", sink, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stopMetrics()
	status := func(path string) int {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitStatus := func(want int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for status("/readyz") != want {
			if time.Now().After(deadline) {
				t.Fatalf("/readyz did not become %d within 30s", want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitStatus(http.StatusOK)
	proxy.SetDown(true)
	waitStatus(http.StatusServiceUnavailable)
	if code := status("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d while S3 is down", code)
	}
	proxy.SetDown(false)
	waitStatus(http.StatusOK)
}
