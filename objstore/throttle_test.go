package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/azurite"
	"github.com/pqsink/pqsink/internal/testutil/fakegcs"
	"github.com/pqsink/pqsink/internal/testutil/faultproxy"
	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// withRetryAfterHook records the waits that a Retry-After made the store
// choose (options.onRetryAfter).
func withRetryAfterHook(hook func(time.Duration)) Option {
	return func(o *options) error {
		o.onRetryAfter = hook
		return nil
	}
}

// throttled is a store's server behind a fault-injecting proxy, and a way
// to open a fresh location of the store through the proxy.
type throttled struct {
	kind  string
	proxy *faultproxy.Proxy
	open  func(t *testing.T, opts ...Option) Store
}

// startThrottled starts a server of the kind (s3: MinIO, gcs:
// fake-gcs-server, azure: Azurite) behind a faultproxy.
func startThrottled(t *testing.T, kind string) throttled {
	t.Helper()
	switch kind {
	case "s3":
		srv := minio.Start(t)
		p := faultproxy.Start(t, srv.Endpoint, 1)
		return throttled{kind: kind, proxy: p, open: func(t *testing.T, opts ...Option) Store {
			return openBucket(t, p.URL, srv, srv.NewBucket(t), opts...)
		}}
	case "gcs":
		srv := fakegcs.Start(t)
		p := faultproxy.StartFor(t, srv.Endpoint, 1, faultproxy.GCSOperation)
		return throttled{kind: kind, proxy: p, open: func(t *testing.T, opts ...Option) Store {
			return openGCSBucket(t, p.URL, srv.NewBucket(), opts...)
		}}
	case "azure":
		srv := azurite.Start(t)
		azureEnv(t, srv)
		base := strings.TrimSuffix(srv.Endpoint, "/"+srv.Account)
		p := faultproxy.StartFor(t, base, 1, faultproxy.AzureOperation)
		return throttled{kind: kind, proxy: p, open: func(t *testing.T, opts ...Option) Store {
			return openAzureContainer(t, p.URL+"/"+srv.Account, srv.NewContainer(t), opts...)
		}}
	}
	t.Fatalf("no store kind %q", kind)
	return throttled{}
}

// throttledOp is one call of the Store interface, and the operation of
// the requests that the proxy throttles for it (faultproxy names the
// requests of GCS and Azure after S3's that do the same job).
type throttledOp struct {
	name string
	op   faultproxy.Op
	// run makes the call on key, which prepare made ready.
	prepare func(t *testing.T, s Store, key string)
	run     func(ctx context.Context, s Store, key string) error
}

func throttledOps() []throttledOp {
	small := payload(1000, 1)
	large := payload(2*testPartSize+3, 2) // two full parts (chunks, blocks) and 3 bytes
	put := func(data []byte) func(context.Context, Store, string) error {
		return func(ctx context.Context, s Store, key string) error {
			_, err := Put(ctx, s, key, bytes.NewReader(data))
			return err
		}
	}
	exists := func(t *testing.T, s Store, key string) {
		t.Helper()
		if _, err := Put(context.Background(), s, key, bytes.NewReader(small)); err != nil {
			t.Fatal(err)
		}
	}
	none := func(*testing.T, Store, string) {}
	return []throttledOp{
		{name: "upload", op: faultproxy.PutObject, prepare: none, run: put(small)},
		{name: "upload parts", op: faultproxy.UploadPart, prepare: none, run: put(large)},
		{name: "upload completion", op: faultproxy.CompleteMultipartUpload, prepare: none, run: put(large)},
		{name: "get", op: faultproxy.GetObject, prepare: exists, run: func(ctx context.Context, s Store, key string) error {
			r, _, err := s.Get(ctx, key)
			if err != nil {
				return err
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, small) {
				err = fmt.Errorf("read %d bytes that differ from the %d written", len(got), len(small))
			}
			return err
		}},
		{name: "head", op: faultproxy.HeadObject, prepare: exists, run: func(ctx context.Context, s Store, key string) error {
			_, err := s.Head(ctx, key)
			return err
		}},
		{name: "list", op: faultproxy.ListObjects, prepare: exists, run: func(ctx context.Context, s Store, key string) error {
			n := 0
			for info, err := range s.List(ctx, key) {
				if err != nil {
					return err
				}
				if info.Key == key {
					n++
				}
			}
			if n != 1 {
				return fmt.Errorf("listed %s %d times, want once", key, n)
			}
			return nil
		}},
		{name: "delete", op: faultproxy.DeleteObject, prepare: exists, run: func(ctx context.Context, s Store, key string) error {
			if err := s.Delete(ctx, key); err != nil {
				return err
			}
			if _, err := s.Head(ctx, key); !errors.Is(err, ErrNotExist) {
				return fmt.Errorf("after Delete, Head: %v, want ErrNotExist", err)
			}
			return nil
		}},
	}
}

// TestThrottling puts a proxy that throttles (429 Too Many Requests, or
// 503 as S3 and Azure answer when they are busy; to GCS's JSON API a 429
// of reason rateLimitExceeded) between each store and its server, and
// checks, by counting the requests that reach the proxy, that uploads
// (single requests, parts or chunks or blocks, completions), gets, heads,
// lists and deletes retry until they succeed; that a Retry-After in the
// answer makes the store wait what it asks, or MaxRetryWait when it asks
// more (Azure's SDK would give up at once instead); and that once the
// retries (MaxRetries) run out, the call fails with an error that names
// the answer and how many attempts were made. No emulator throttles by
// itself, and none sends Retry-After: the proxy plays the services.
func TestThrottling(t *testing.T) {
	for _, kind := range []string{"s3", "gcs", "azure"} {
		t.Run(kind, func(t *testing.T) { testThrottling(t, startThrottled(t, kind)) })
	}
}

func testThrottling(t *testing.T, st throttled) {
	ctx := context.Background()
	p := st.proxy
	cases := []struct {
		name       string
		fault      faultproxy.Fault
		n          int    // throttled attempts in a row
		retryAfter string // the Retry-After of the throttled answers
		limit      time.Duration
		wantWait   time.Duration // each wait that Retry-After chose; 0: none chosen
	}{
		{"429 without Retry-After", faultproxy.Error429, 2, "", 50 * time.Millisecond, 0},
		{"429 Retry-After within MaxRetryWait", faultproxy.Error429, 1, "1", 5 * time.Second, time.Second},
		{"503 Retry-After beyond MaxRetryWait", faultproxy.Error503, 2, "3600", 50 * time.Millisecond, 50 * time.Millisecond},
		{"429 Retry-After as a date beyond MaxRetryWait", faultproxy.Error429, 1,
			time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 50 * time.Millisecond, 50 * time.Millisecond},
	}
	for _, op := range throttledOps() {
		t.Run(op.name, func(t *testing.T) {
			for ci, c := range cases {
				var mu sync.Mutex
				var waits []time.Duration
				s := st.open(t, MaxRetries(3), MaxRetryWait(c.limit), withRetryAfterHook(func(d time.Duration) {
					mu.Lock()
					waits = append(waits, d)
					mu.Unlock()
				}))
				defer s.Close()
				// A clean call first: how many requests of op it makes.
				clean, key := fmt.Sprintf("clean-%d", ci), fmt.Sprintf("throttled-%d", ci)
				op.prepare(t, s, clean)
				op.prepare(t, s, key)
				before := p.Requests(op.op)
				if err := op.run(ctx, s, clean); err != nil {
					t.Fatalf("%s: unthrottled: %v", c.name, err)
				}
				cleanRequests := p.Requests(op.op) - before
				if cleanRequests == 0 {
					t.Fatalf("%s: the call made no %s request", c.name, op.op)
				}

				p.SetRetryAfter(c.retryAfter)
				before, faults := p.Requests(op.op), p.Count(op.op, c.fault)
				mu.Lock()
				waits = nil
				mu.Unlock()
				p.Inject(op.op, c.fault, c.n)
				if err := op.run(ctx, s, key); err != nil {
					t.Fatalf("%s: %d throttled answers, 3 retries allowed: %v\n%s", c.name, c.n, err, p)
				}
				if got := p.Count(op.op, c.fault) - faults; got != c.n {
					t.Errorf("%s: %d %s answers given, want %d", c.name, got, c.fault, c.n)
				}
				if got, want := p.Requests(op.op)-before, cleanRequests+c.n; got != want {
					t.Errorf("%s: %d %s requests, want %d (%d as unthrottled, and a retry per throttled answer)",
						c.name, got, op.op, want, cleanRequests)
				}
				mu.Lock()
				got := waits
				mu.Unlock()
				// Google's client decides the retry of a resumable upload's
				// chunk from the answer's status alone, without its
				// headers: there the retries back off exponentially (up
				// to MaxRetryWait) and no Retry-After is seen. GCS sends
				// none itself.
				want := []time.Duration{}
				if c.wantWait > 0 && !(st.kind == "gcs" && (op.op == faultproxy.UploadPart || op.op == faultproxy.CompleteMultipartUpload)) {
					for range c.n {
						want = append(want, c.wantWait)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
					t.Errorf("%s: waits chosen for Retry-After %q: %v, want %v", c.name, c.retryAfter, got, want)
				}
			}
		})
	}

	// Out of retries: MaxRetries(2) allows 3 attempts, and all three are
	// throttled.
	attempts := regexp.MustCompile(`after 3 attempts|attempts, 3`)
	for _, op := range throttledOps() {
		if op.name == "upload parts" || op.name == "upload completion" {
			continue // the same retries as a single upload's; several requests
		}
		t.Run(op.name+" gives up", func(t *testing.T) {
			s := st.open(t, MaxRetries(2), MaxRetryWait(50*time.Millisecond))
			defer s.Close()
			key := "given-up"
			op.prepare(t, s, key)
			p.SetRetryAfter("1")
			before, faults := p.Requests(op.op), p.Count(op.op, faultproxy.Error429)
			p.Inject(op.op, faultproxy.Error429, 3)
			err := op.run(ctx, s, key)
			if err == nil {
				t.Fatalf("3 throttled attempts of 3 allowed: no error\n%s", p)
			}
			msg := err.Error()
			if !strings.Contains(msg, "429") || !attempts.MatchString(msg) || errors.Is(err, ErrExists) || errors.Is(err, ErrNotExist) {
				t.Errorf("error = %q, want one that names the 429 and the 3 attempts", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error runs over several lines: %q", msg)
			}
			if got := p.Requests(op.op) - before; got != 3 {
				t.Errorf("%d %s requests, want 3 (every one allowed, no more)", got, op.op)
			}
			if got := p.Count(op.op, faultproxy.Error429) - faults; got != 3 {
				t.Errorf("%d throttled answers, want 3", got)
			}
		})
	}
}

// TestRetryAfter reads the waits that answers ask for, in each form, and
// the wait chosen from them.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 8, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"zero", map[string]string{"Retry-After": "0"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"RFC 1123 date in UTC", map[string]string{"Retry-After": now.Add(time.Minute).Format(time.RFC1123)}, time.Minute},
		{"date past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"huge", map[string]string{"Retry-After": "99999999999999"}, MaxMaxRetryWait},
		{"Azure milliseconds first", map[string]string{"Retry-After": "30", "retry-after-ms": "250"}, 250 * time.Millisecond},
		{"Azure x-ms milliseconds", map[string]string{"x-ms-retry-after-ms": "1500"}, 1500 * time.Millisecond},
	} {
		h := http.Header{}
		for k, v := range c.headers {
			h.Set(k, v)
		}
		if got := retryAfter(h, now); got != c.want {
			t.Errorf("%s: retryAfter = %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct{ backoff, ra, limit, want time.Duration }{
		{100 * time.Millisecond, 0, time.Second, 100 * time.Millisecond},
		{100 * time.Millisecond, 2 * time.Second, 20 * time.Second, 2 * time.Second},
		{3 * time.Second, 2 * time.Second, 20 * time.Second, 3 * time.Second},
		{100 * time.Millisecond, time.Hour, 20 * time.Second, 20 * time.Second},
	} {
		if got := retryWait(c.backoff, c.ra, c.limit); got != c.want {
			t.Errorf("retryWait(%v, %v, %v) = %v, want %v", c.backoff, c.ra, c.limit, got, c.want)
		}
	}
}

// TestMaxRetryWaitOption checks the option's bounds and its URL form.
func TestMaxRetryWaitOption(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		url  string
		opts []Option
		ok   bool
	}{
		{"gs://b/p?max_retry_wait=45s&endpoint=http://127.0.0.1:1", nil, true},
		{"gs://b/p?max_retry_wait=forever&endpoint=http://127.0.0.1:1", nil, false},
		{"s3://b/p?max_retry_wait=11m&endpoint=http://127.0.0.1:1", nil, false},
		{"s3://b/p?endpoint=http://127.0.0.1:1", []Option{MaxRetryWait(0)}, false},
		{"file:///tmp/x", []Option{MaxRetryWait(time.Second)}, false},
	} {
		s, err := Open(ctx, c.url, c.opts...)
		if err == nil {
			s.Close()
		}
		if (err == nil) != c.ok {
			t.Errorf("Open(%s): err = %v, want ok = %v", c.url, err, c.ok)
		}
	}
}
