package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/testutil/minio"
)

// fault is what faultProxy does to a request instead of passing it on.
type fault int

const (
	pass       fault = iota
	slowDown         // answer 503 SlowDown, as throttling S3 does
	internal         // answer 500 InternalError
	dropBefore       // close the connection without passing the request on
	dropAfter        // pass the request on, then close the connection instead of answering
)

func (f fault) String() string {
	return [...]string{"pass", "503 SlowDown", "500 InternalError", "drop before", "drop after"}[f]
}

// faultProxy is a reverse proxy in front of a real S3 server that fails
// the first attempt of chosen operations, recognised by their SDK
// invocation id, which every retry of one call repeats. It also counts the
// requests of each operation and the most in flight at once.
type faultProxy struct {
	url   string
	proxy *httputil.ReverseProxy

	mu       sync.Mutex
	faults   map[string][]fault // by operation: the faults of its successive calls, the last one repeating
	calls    map[string]int     // calls seen, by operation
	seen     map[string]bool    // invocation ids seen
	injected map[string]int     // faults injected, by operation
	requests map[string]int     // requests, by operation
	active   map[string]int     // requests in flight, by operation
	peak     map[string]int     // most requests in flight, by operation
	delay    map[string]time.Duration
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{
		faults:   make(map[string][]fault),
		calls:    make(map[string]int),
		seen:     make(map[string]bool),
		injected: make(map[string]int),
		requests: make(map[string]int),
		active:   make(map[string]int),
		peak:     make(map[string]int),
		delay:    make(map[string]time.Duration),
	}
	p.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host // the client signed the Host it sent
	}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// fail makes the first attempt of successive calls of op fail with
// faults, the last one repeating for further calls.
func (p *faultProxy) fail(op string, faults ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults[op] = faults
}

// slow delays every request of op.
func (p *faultProxy) slow(op string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay[op] = d
}

func (p *faultProxy) count(m map[string]int, op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m[op]
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := s3Operation(r)
	p.mu.Lock()
	f := pass
	if id := r.Header.Get("Amz-Sdk-Invocation-Id"); id != "" && !p.seen[id] {
		p.seen[id] = true
		if faults := p.faults[op]; len(faults) > 0 {
			f = faults[min(p.calls[op], len(faults)-1)]
		}
		p.calls[op]++
	}
	if f != pass {
		p.injected[op]++
	}
	p.requests[op]++
	p.active[op]++
	p.peak[op] = max(p.peak[op], p.active[op])
	delay := p.delay[op]
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.active[op]--
		p.mu.Unlock()
	}()
	time.Sleep(delay)

	switch f {
	case pass:
		p.proxy.ServeHTTP(w, r)
	case slowDown:
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case internal:
		writeS3Error(w, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case dropBefore:
		hangUp(w)
	case dropAfter:
		p.proxy.ServeHTTP(discardResponse{make(http.Header)}, r)
		hangUp(w)
	}
}

// s3Operation names the S3 operation of a request.
func s3Operation(r *http.Request) string {
	q := r.URL.Query()
	if id := q.Get("x-id"); id != "" {
		return id // the SDK names some operations itself
	}
	switch r.Method {
	case http.MethodPost:
		if q.Has("uploads") {
			return "CreateMultipartUpload"
		}
		if q.Has("uploadId") {
			return "CompleteMultipartUpload"
		}
	case http.MethodPut:
		if q.Has("partNumber") {
			return "UploadPart"
		}
		return "PutObject"
	case http.MethodDelete:
		if q.Has("uploadId") {
			return "AbortMultipartUpload"
		}
		return "DeleteObject"
	case http.MethodHead:
		return "HeadObject"
	case http.MethodGet:
		switch {
		case q.Has("uploadId"):
			return "ListParts"
		case q.Has("uploads"):
			return "ListMultipartUploads"
		case q.Has("list-type"):
			return "ListObjectsV2"
		}
		return "GetObject"
	}
	return r.Method
}

func writeS3Error(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, code, message)
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	conn.Close()
}

// discardResponse swallows the answer of a request passed on by dropAfter.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}
func (d discardResponse) Flush()                      {}

// retryLog records OnRetry calls.
type retryLog struct {
	mu    sync.Mutex
	calls []retryCall
}

type retryCall struct {
	op      string
	attempt int
	err     error
}

func (l *retryLog) hook(op string, attempt int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, retryCall{op, attempt, err})
}

func (l *retryLog) all() []retryCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

// ops returns the operations retried, one entry per retry, sorted.
func (l *retryLog) ops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ops []string
	for _, c := range l.calls {
		ops = append(ops, c.op)
	}
	slices.Sort(ops)
	return ops
}

// TestS3Faults puts a proxy that fails requests between the store and
// MinIO, and checks that transient failures are retried, reported to
// OnRetry, and change nothing in the objects that land.
func TestS3Faults(t *testing.T) {
	srv := minio.Start(t)
	ctx := context.Background()
	open := func(t *testing.T, opts ...Option) (Store, *faultProxy, *retryLog) {
		p := startFaultProxy(t, srv.Endpoint)
		log := &retryLog{}
		s := openBucket(t, p.url, srv, srv.NewBucket(t), append([]Option{OnRetry(log.hook)}, opts...)...)
		t.Cleanup(func() { s.Close() })
		return s, p, log
	}

	t.Run("TransientFailures", func(t *testing.T) {
		pool := newCountingPool(-1)
		s, p, log := open(t, Buffers(pool))
		p.fail("CreateMultipartUpload", internal)
		p.fail("UploadPart", slowDown, dropBefore, internal, dropAfter)
		p.fail("CompleteMultipartUpload", dropBefore)
		p.fail("PutObject", slowDown, dropBefore)
		big, small := payload(3*testPartSize+7, 1), payload(1000, 2)
		if _, err := stream(t, s, "big", big, 1<<20); err != nil {
			t.Fatalf("multipart upload through faults: %v", err)
		}
		for i := range 2 {
			if _, err := Put(ctx, s, fmt.Sprintf("small/%d", i), bytes.NewReader(small)); err != nil {
				t.Fatalf("single PUT %d through faults: %v", i, err)
			}
		}
		want := []string{"CompleteMultipartUpload", "CreateMultipartUpload", "PutObject", "PutObject",
			"UploadPart", "UploadPart", "UploadPart", "UploadPart"}
		if got := log.ops(); !slices.Equal(got, want) {
			t.Errorf("OnRetry calls for %q, want %q", got, want)
		}
		for _, c := range log.all() {
			if c.attempt != 1 || c.err == nil {
				t.Errorf("OnRetry(%s, %d, %v), want attempt 1 and its error", c.op, c.attempt, c.err)
			}
		}
		for op, n := range map[string]int{"CreateMultipartUpload": 1, "UploadPart": 4, "CompleteMultipartUpload": 1, "PutObject": 2} {
			if got := p.count(p.injected, op); got != n {
				t.Errorf("%d faults injected into %s, want %d", got, op, n)
			}
		}
		if got, _ := readAll(t, s, "big"); !bytes.Equal(got, big) {
			t.Error("multipart object reads back wrong")
		}
		if got := listKeys(t, s, ""); !slices.Equal(got, []string{"big", "small/0", "small/1"}) {
			t.Errorf("objects %q, want big, small/0 and small/1", got)
		}
		if p := s3Pending(t, s, ""); len(p) != 0 {
			t.Errorf("uploads left: %q", p)
		}
		// The failed attempts' buffers were retried, not dropped: only a
		// request that finally fails drops its buffer.
		if st := pool.stats(t); st.drops != 0 || st.puts != st.gets {
			t.Errorf("%d gets, %d puts, %d drops; want every buffer back", st.gets, st.puts, st.drops)
		}
	})

	t.Run("LostCommitAnswer", func(t *testing.T) {
		// The commit lands, its answer is lost, the retry finds the
		// object: ErrExists, and the object is ours, whole.
		s, p, log := open(t)
		p.fail("CompleteMultipartUpload", dropAfter)
		p.fail("PutObject", dropAfter)
		for _, n := range []int{1000, 2*testPartSize + 1} {
			key := fmt.Sprintf("lost/%d", n)
			data := payload(n, 3)
			_, err := stream(t, s, key, data, 1<<20)
			if !errors.Is(err, ErrExists) {
				t.Errorf("%d bytes: Commit whose answer was lost: err = %v, want ErrExists", n, err)
			}
			if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
				t.Errorf("%d bytes: object reads back wrong", n)
			}
		}
		// The completion is retried; the PUT is not: a conditional PUT
		// that fails without an answer asks with a HEAD whether the key
		// exists first.
		if got := log.ops(); len(got) != 1 || got[0] != "CompleteMultipartUpload" {
			t.Errorf("retries %v, want one, of the completion", got)
		}
		if p := s3Pending(t, s, ""); len(p) != 0 {
			t.Errorf("uploads left: %q", p)
		}
	})

	t.Run("LostCommitAnswerUnconditional", func(t *testing.T) {
		// Without If-None-Match, the retried completion finds no upload
		// (NoSuchUpload) and Commit finds the key taken: ErrExists, the
		// object ours. A retried PUT simply writes the same bytes again.
		s, p, _ := open(t, ConditionalWrites(false))
		p.fail("CompleteMultipartUpload", dropAfter)
		p.fail("PutObject", dropAfter)
		for _, n := range []int{1000, 2*testPartSize + 1} {
			key := fmt.Sprintf("lost/%d", n)
			data := payload(n, 3)
			_, err := stream(t, s, key, data, 1<<20)
			if n < testPartSize && err != nil {
				t.Errorf("%d bytes: PUT whose answer was lost: %v", n, err)
			}
			if n > testPartSize && !errors.Is(err, ErrExists) {
				t.Errorf("%d bytes: Commit whose answer was lost: err = %v, want ErrExists", n, err)
			}
			if got, _ := readAll(t, s, key); !bytes.Equal(got, data) {
				t.Errorf("%d bytes: object reads back wrong", n)
			}
		}
		if p := s3Pending(t, s, ""); len(p) != 0 {
			t.Errorf("uploads left: %q", p)
		}
	})

	t.Run("NoRetries", func(t *testing.T) {
		s, p, log := open(t, MaxRetries(0))
		p.fail("UploadPart", slowDown)
		up, err := s.Create(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := up.Write(payload(2*testPartSize+1, 4))
		_, cerr := up.Commit(ctx)
		// The client sees the 503, or, when the server hangs up before
		// reading the body it refused, a reset connection.
		if cerr == nil || errors.Is(cerr, ErrExists) {
			t.Errorf("upload with a failing part and no retries: Write: %v, Commit: %v; want a failure", werr, cerr)
		}
		if n, calls := p.count(p.requests, "UploadPart"), p.count(p.calls, "UploadPart"); n != calls {
			t.Errorf("%d UploadPart requests for %d calls, want one each", n, calls)
		}
		if err := up.Abort(ctx); err != nil {
			t.Error(err)
		}
		if got := log.ops(); len(got) != 0 {
			t.Errorf("OnRetry called for %q with MaxRetries(0)", got)
		}
		if _, err := s.Head(ctx, "k"); !errors.Is(err, ErrNotExist) {
			t.Errorf("Head: err = %v, want ErrNotExist", err)
		}
		if p := s3Pending(t, s, ""); len(p) != 0 {
			t.Errorf("uploads left: %q", p)
		}
	})

	t.Run("PreconditionFailedIsNotRetried", func(t *testing.T) {
		s, p, log := open(t)
		create(t, s, "taken", []byte("first"))
		create(t, s, "taken-big", []byte("first"))
		puts, completes := p.count(p.requests, "PutObject"), p.count(p.requests, "CompleteMultipartUpload")
		if _, err := Put(ctx, s, "taken", bytes.NewReader([]byte("second"))); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
		if _, err := stream(t, s, "taken-big", payload(testPartSize+1, 5), 1<<20); !errors.Is(err, ErrExists) {
			t.Fatalf("err = %v, want ErrExists", err)
		}
		if n := p.count(p.requests, "PutObject") - puts; n != 1 {
			t.Errorf("%d PutObject requests for one refused PUT, want 1", n)
		}
		if n := p.count(p.requests, "CompleteMultipartUpload") - completes; n != 1 {
			t.Errorf("%d CompleteMultipartUpload requests for one refused completion, want 1", n)
		}
		if got := log.ops(); len(got) != 0 {
			t.Errorf("OnRetry called for %q", got)
		}
	})

	t.Run("Concurrency", func(t *testing.T) {
		for _, c := range []int{1, 3} {
			s, p, _ := open(t, Concurrency(c))
			p.slow("UploadPart", 200*time.Millisecond) // parts pile up behind a slow server
			data := payload(6*testPartSize, 6)
			if _, err := stream(t, s, "k", data, 1<<20); err != nil {
				t.Fatal(err)
			}
			if got := p.count(p.peak, "UploadPart"); got != c {
				t.Errorf("Concurrency(%d): %d parts in flight at most, want %d", c, got, c)
			}
			if got, _ := readAll(t, s, "k"); !bytes.Equal(got, data) {
				t.Errorf("Concurrency(%d): object reads back wrong", c)
			}
		}
	})
}
