// Package faultproxy puts an unreliable network and an overloaded S3 between
// a test's S3 client and a real S3 server (internal/testutil/minio): a
// reverse proxy that, driven by a seeded random source and rates the test
// sets (for all operations or per operation), answers 500 InternalError,
// 503 SlowDown or 429 Too Many Requests (with a Retry-After if the test
// sets one) without passing the request on, hangs up in the middle of a
// request, hangs up after the server has carried the request out (the
// client sees a failure for a request that succeeded: the case that
// conditional PutObject and CompleteMultipartUpload must survive), delays
// answers, and can refuse every connection for a while (S3 unreachable).
// It counts what it did per S3 operation (see Operation), so that a test
// can check that every kind of fault was really injected, and keeps a
// journal of the latest requests for the log of a failing test. Otherwise
// it is transparent: a client sees no failure the proxy does not count.
//
// Point a client at Proxy.URL with path-style addressing; requests keep the
// Host header they were signed with. The seed fixes the sequence of
// decisions; which request meets which decision also depends on the order
// in which concurrent requests arrive. Test-only.
package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what the proxy did with a request.
type Fault int

const (
	// Forwarded: passed on to the server, its answer relayed.
	Forwarded Fault = iota
	// Error500: answered 500 InternalError, not passed on.
	Error500
	// Error503: answered 503 SlowDown, not passed on.
	Error503
	// Error429: answered 429 Too Many Requests (throttled), not passed on.
	Error429
	// DropBefore: part of the body read (perhaps none), then the
	// connection closed; not passed on.
	DropBefore
	// DropAfter: passed on and answered by the server, then the connection
	// closed instead of relaying the answer.
	DropAfter
	// Delayed: the server's answer held back before it was relayed. A
	// delayed request is also counted as Forwarded.
	Delayed
	// Refused: the connection closed at once because the proxy is down.
	Refused
	numFaults
)

func (f Fault) String() string {
	return [...]string{"forwarded", "500", "503", "429", "drop-before", "drop-after", "delayed", "refused"}[f]
}

// Rates are the probabilities, each in [0, 1], that a request meets a
// fault. Error500, Error503, Error429, DropBefore and DropAfter exclude each other
// (their sum is at most 1); Delay applies to the requests met by none of
// them, which are passed on and their answers relayed.
type Rates struct {
	Error500   float64
	Error503   float64
	Error429   float64
	DropBefore float64
	DropAfter  float64
	Delay      float64
	// MaxDelay bounds a delay, drawn uniformly between MaxDelay/2 and
	// MaxDelay.
	MaxDelay time.Duration
}

func (r Rates) check() error {
	for _, x := range []float64{r.Error500, r.Error503, r.Error429, r.DropBefore, r.DropAfter, r.Delay} {
		if x < 0 || x > 1 {
			return fmt.Errorf("faultproxy: rate %v outside [0, 1]", x)
		}
	}
	sum := r.Error500 + r.Error503 + r.Error429 + r.DropBefore + r.DropAfter
	if sum > 1 {
		return fmt.Errorf("faultproxy: exclusive fault rates add up to %v > 1", sum)
	}
	if r.Delay > 0 && r.MaxDelay <= 0 {
		return fmt.Errorf("faultproxy: Delay %v without MaxDelay", r.Delay)
	}
	return nil
}

// counts is what happened to one operation's requests.
type counts struct {
	requests  int
	faults    [numFaults]int
	lostOK    int         // DropAfter whose server answer was 2xx
	answers   map[int]int // statuses of the server's answers, relayed or not
	dropped   map[int]int // statuses of the answers DropAfter kept from the client
	unreached int         // requests passed on that got no answer from the server
	lastErr   string      // why the last of those got none
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is the proxy's base URL, e.g. "http://127.0.0.1:41234".
	URL string

	t     testing.TB
	srv   *httptest.Server
	proxy *httputil.ReverseProxy
	tr    *http.Transport
	// classify names a request's operation.
	classify Classifier
	keepHost bool   // pass the client's Host header on (S3)
	target   string // the server's base URL, without a trailing slash

	mu       sync.Mutex
	rng      *rand.Rand
	rates    Rates
	perOp    map[Op]Rates
	queued   map[Op][]Fault // Inject's faults, before any drawn
	down     bool
	refusals int // connections refused while down
	// retryAfter is the Retry-After header of 429 and 503 answers, "" for
	// none (SetRetryAfter).
	retryAfter string
	ops        map[Op]*counts
	journal    []*event // the latest requests, oldest first
}

// journalSize bounds the journal: enough for the requests of a test run
// around a failure.
const journalSize = 2000

// event is one request in the journal.
type event struct {
	start  time.Time
	took   time.Duration // 0 while in flight
	op     Op
	method string
	target string // path and query
	fault  Fault
	status int // the server's answer; 0 when none reached the proxy
	done   bool
}

// Start runs a proxy in front of target (a base URL such as
// minio.Server.Endpoint) with every rate zero, and stops it when the test
// ends.
func Start(t testing.TB, target string, seed uint64) *Proxy {
	t.Helper()
	return start(t, target, seed, Operation, true)
}

// StartFor is Start for a store of another protocol, whose requests
// classify names (GCSOperation, AzureOperation). Its error answers are
// S3's XML all the same: the clients of those stores retry by status.
// Requests reach the server with its own Host header, not the proxy's,
// and a Location header that points at the server (a GCS resumable
// upload's session URI) points at the proxy when it reaches the client.
func StartFor(t testing.TB, target string, seed uint64, classify Classifier) *Proxy {
	t.Helper()
	return start(t, target, seed, classify, false)
}

func start(t testing.TB, target string, seed uint64, classify Classifier, isS3 bool) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		t.Fatalf("faultproxy: target %q is not a base URL (%v)", target, err)
	}
	p := &Proxy{
		t:        t,
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		perOp:    map[Op]Rates{},
		queued:   map[Op][]Fault{},
		ops:      map[Op]*counts{},
		tr:       http.DefaultTransport.(*http.Transport).Clone(),
		classify: classify,
		keepHost: isS3,
		target:   strings.TrimSuffix(target, "/"),
	}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(u)
			// An S3 client signed the Host it sent (SigV4): keep it.
			// Neither GCS nor Azure signs it, and fake-gcs-server routes
			// its XML API by it: theirs is the server's.
			if p.keepHost {
				r.Out.Host = r.In.Host
			}
		},
		Transport:      p.tr,
		ModifyResponse: p.answered,
		ErrorHandler:   p.unreachable,
		// A client that hangs up (SetDown, or its own timeout) makes the
		// proxy log; the test's client sees the failure anyway.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	p.srv = httptest.NewUnstartedServer(p)
	p.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	p.srv.Listener = &listener{Listener: p.srv.Listener, p: p}
	p.srv.Start()
	p.URL = p.srv.URL
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy. Start's cleanup calls it.
func (p *Proxy) Close() {
	p.srv.Close()
	p.tr.CloseIdleConnections()
}

// SetRates sets the rates of every operation that has none of its own.
func (p *Proxy) SetRates(r Rates) {
	if err := r.check(); err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.rates = r
	p.mu.Unlock()
}

// SetRatesFor gives ops rates of their own, which replace SetRates' for
// them.
func (p *Proxy) SetRatesFor(r Rates, ops ...Op) {
	if err := r.check(); err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	for _, op := range ops {
		p.perOp[op] = r
	}
	p.mu.Unlock()
}

// Inject makes the next n requests of op meet f (Error500, Error503,
// Error429, DropBefore or DropAfter), whatever the rates: for a fault a test must
// see where few requests go, such as a lost CompleteMultipartUpload
// answer.
func (p *Proxy) Inject(op Op, f Fault, n int) {
	switch f {
	case Error500, Error503, Error429, DropBefore, DropAfter:
	default:
		p.t.Fatalf("faultproxy: cannot inject %s", f)
	}
	p.mu.Lock()
	for range n {
		p.queued[op] = append(p.queued[op], f)
	}
	p.mu.Unlock()
}

// SetRetryAfter makes the proxy's 429 and 503 answers carry Retry-After:
// v (seconds, or an HTTP date), as a throttled service's do; "" sends
// none, the default.
func (p *Proxy) SetRetryAfter(v string) {
	p.mu.Lock()
	p.retryAfter = v
	p.mu.Unlock()
}

// SetDown takes the proxy down (S3 unreachable: open connections are cut,
// new ones closed as soon as they are accepted, with a reset) or brings it
// back up.
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	p.down = down
	p.mu.Unlock()
	if down {
		p.srv.CloseClientConnections()
	}
}

// Count returns how many requests of op met f; op "" counts every
// operation.
func (p *Proxy) Count(op Op, f Fault) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for o, c := range p.ops {
		if op == "" || o == op {
			n += c.faults[f]
		}
	}
	return n
}

// Requests returns how many requests of op arrived; op "" counts every
// operation. Connections refused while down carry no request and are not
// counted here (see Refusals).
func (p *Proxy) Requests(op Op) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for o, c := range p.ops {
		if op == "" || o == op {
			n += c.requests
		}
	}
	return n
}

// LostSuccesses returns how many requests of op (every operation for "")
// the server carried out successfully (2xx) while the client got a broken
// connection instead (DropAfter).
func (p *Proxy) LostSuccesses(op Op) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for o, c := range p.ops {
		if op == "" || o == op {
			n += c.lostOK
		}
	}
	return n
}

// Refusals returns how many connections were refused while down.
func (p *Proxy) Refusals() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refusals
}

// String is a table of what happened, one line per operation, for test
// logs.
func (p *Proxy) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := make([]Op, 0, len(p.ops))
	for op := range p.ops {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %8s", "operation", "requests")
	for f := range numFaults {
		fmt.Fprintf(&b, " %11s", f)
	}
	fmt.Fprintf(&b, " %9s %s\n", "lost-2xx", "server answers")
	for _, op := range ops {
		c := p.ops[op]
		fmt.Fprintf(&b, "%-24s %8d", op, c.requests)
		for f := range numFaults {
			fmt.Fprintf(&b, " %11d", c.faults[f])
		}
		fmt.Fprintf(&b, " %9d %v\n", c.lostOK, statusText(c.answers))
		if len(c.dropped) > 0 {
			fmt.Fprintf(&b, "    answers lost by drop-after: %v\n", statusText(c.dropped))
		}
		if c.unreached > 0 {
			fmt.Fprintf(&b, "    %d requests got no answer from the server, the last: %s\n", c.unreached, c.lastErr)
		}
	}
	fmt.Fprintf(&b, "connections refused while down: %d\n", p.refusals)
	return b.String()
}

// decision is what the proxy will do with one request.
type decision struct {
	fault Fault
	delay time.Duration
	cut   float64 // DropBefore: the fraction of the body read before hanging up
}

// decide draws the fate of a request of op and counts it.
func (p *Proxy) decide(op Op) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.ops[op]
	if c == nil {
		c = &counts{answers: map[int]int{}, dropped: map[int]int{}}
		p.ops[op] = c
	}
	c.requests++
	if p.down {
		c.faults[Refused]++
		return decision{fault: Refused}
	}
	r, ok := p.perOp[op]
	if !ok {
		r = p.rates
	}
	d := decision{fault: Forwarded}
	if q := p.queued[op]; len(q) > 0 {
		d.fault, p.queued[op] = q[0], q[1:]
	} else {
		u := p.rng.Float64()
		for _, x := range []struct {
			rate  float64
			fault Fault
		}{{r.Error500, Error500}, {r.Error503, Error503}, {r.Error429, Error429}, {r.DropBefore, DropBefore}, {r.DropAfter, DropAfter}} {
			if u < x.rate {
				d.fault = x.fault
				break
			}
			u -= x.rate
		}
	}
	if d.fault == DropBefore {
		d.cut = p.rng.Float64()
	}
	if d.fault == Forwarded && r.Delay > 0 && p.rng.Float64() < r.Delay {
		d.delay = r.MaxDelay/2 + time.Duration(p.rng.Int64N(int64(r.MaxDelay/2)+1))
		c.faults[Delayed]++
	}
	c.faults[d.fault]++
	return d
}

// forward is what the proxy's hooks need to know of a request passed on;
// forwardKey keys it in the request's context.
type forward struct {
	op    Op
	e     *event
	delay time.Duration // before relaying the answer
}

type forwardKey struct{}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := p.classify(r)
	d := p.decide(op)
	e := p.begin(op, r, d.fault)
	defer p.end(e)
	switch d.fault {
	case Refused:
		hangUp(w)
	case Error500:
		io.Copy(io.Discard, r.Body)
		writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case Error503:
		io.Copy(io.Discard, r.Body)
		p.throttle(w)
		writeError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case Error429:
		io.Copy(io.Discard, r.Body)
		p.throttle(w)
		writeError(w, r, http.StatusTooManyRequests, "TooManyRequests", "Please reduce your request rate.")
	case DropBefore:
		// Cut the request short: read a part of the body, then hang up.
		if r.ContentLength > 0 {
			io.CopyN(io.Discard, r.Body, int64(d.cut*float64(r.ContentLength)))
		}
		hangUp(w)
	case DropAfter:
		rec := &recorder{h: http.Header{}}
		p.proxy.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), forwardKey{}, forward{op: op, e: e})))
		p.mu.Lock()
		c := p.ops[op]
		if rec.status >= 200 && rec.status < 300 {
			c.lostOK++
		}
		c.dropped[rec.status]++
		p.mu.Unlock()
		hangUp(w)
	default:
		// A server may answer before it has read the whole body (MinIO
		// answers a conditional PUT of an existing key with 412 while the
		// body is still coming). Going straight, the client then races the
		// server's hang-up to read the answer, and may lose it; through the
		// proxy, which would hang up on an unread body too, it would lose
		// it nearly always. Take the rest of the body after relaying the
		// answer instead: the proxy loses no answer it does not mean to.
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		p.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), forwardKey{}, forward{op: op, e: e, delay: d.delay})))
		rc.Flush()
		io.Copy(io.Discard, r.Body)
	}
}

// begin enters a request into the journal.
func (p *Proxy) begin(op Op, r *http.Request, f Fault) *event {
	e := &event{start: time.Now(), op: op, method: r.Method, target: r.URL.RequestURI(), fault: f}
	p.mu.Lock()
	if len(p.journal) == journalSize {
		p.journal = slices.Delete(p.journal, 0, journalSize/10)
	}
	p.journal = append(p.journal, e)
	p.mu.Unlock()
	return e
}

// end notes in the journal that a request is over.
func (p *Proxy) end(e *event) {
	p.mu.Lock()
	e.took, e.done = time.Since(e.start), true
	p.mu.Unlock()
}

// Journal lists the latest requests (up to 2000), oldest first, with what
// the proxy did, the server's answer and how long each took, or for how
// long it has been in flight: for the log of a failing test.
func (p *Proxy) Journal() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, e := range p.journal {
		fmt.Fprintf(&b, "%s %-23s %-11s", e.start.Format("15:04:05.000"), e.op, e.fault)
		if e.status != 0 {
			fmt.Fprintf(&b, " %d", e.status)
		} else {
			b.WriteString(" ---")
		}
		if e.done {
			fmt.Fprintf(&b, " %9v", e.took.Round(time.Millisecond))
		} else {
			fmt.Fprintf(&b, " IN FLIGHT for %v", time.Since(e.start).Round(time.Millisecond))
		}
		fmt.Fprintf(&b, " %s %s\n", e.method, e.target)
	}
	return b.String()
}

// answered counts the status of the server's answer to a request of op
// passed on (ReverseProxy.ModifyResponse).
func (p *Proxy) answered(resp *http.Response) error {
	fw, _ := resp.Request.Context().Value(forwardKey{}).(forward)
	// A URL of the server's in an answer (the session URI of a GCS
	// resumable upload) becomes the proxy's: what the client sends
	// there passes through the proxy too.
	if loc := resp.Header.Get("Location"); !p.keepHost && strings.HasPrefix(loc, p.target) {
		resp.Header.Set("Location", p.URL+strings.TrimPrefix(loc, p.target))
	}
	p.mu.Lock()
	p.ops[fw.op].answers[resp.StatusCode]++
	fw.e.status = resp.StatusCode
	p.mu.Unlock()
	return p.hold(resp, fw.delay)
}

// unreachable answers a request that the server did not answer
// (ReverseProxy.ErrorHandler), as a gateway does: 502.
func (p *Proxy) unreachable(w http.ResponseWriter, r *http.Request, err error) {
	fw, _ := r.Context().Value(forwardKey{}).(forward)
	p.mu.Lock()
	c := p.ops[fw.op]
	c.unreached++
	c.lastErr = err.Error()
	p.mu.Unlock()
	w.WriteHeader(http.StatusBadGateway)
}

// hold delays the server's answer by d before it is relayed.
func (p *Proxy) hold(resp *http.Response, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-resp.Request.Context().Done():
		return resp.Request.Context().Err()
	}
}

// throttle adds the Retry-After header that SetRetryAfter set, if any.
func (p *Proxy) throttle(w http.ResponseWriter) {
	p.mu.Lock()
	v := p.retryAfter
	p.mu.Unlock()
	if v != "" {
		w.Header().Set("Retry-After", v)
	}
}

// writeError answers as S3 does when it fails a request (Azure's errors
// have the same XML shape), or, to a request of GCS's JSON API, as GCS
// does: a JSON error whose reason for a 429 is rateLimitExceeded.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	if gcsJSONPath(r.URL.Path) {
		reason := "backendError"
		if status == http.StatusTooManyRequests {
			reason = "rateLimitExceeded"
		}
		body := fmt.Sprintf(`{"error":{"code":%d,"message":%q,"errors":[{"domain":"usageLimits","reason":%q,"message":%q}]}}`,
			status, message, reason, message)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			io.WriteString(w, body)
		}
		return
	}
	var body bytes.Buffer
	fmt.Fprintf(&body, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>faultproxy</RequestId></Error>`,
		code, message, r.URL.Path)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(body.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(body.Bytes())
	}
}

// gcsJSONPath reports whether path is one of GCS's JSON API.
func gcsJSONPath(path string) bool {
	for _, p := range []string{"/storage/v1/", "/upload/storage/v1/", "/download/storage/v1/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(fmt.Sprintf("faultproxy: hijacking the connection: %v", err))
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, as a dying server or middlebox sends
	}
	conn.Close()
}

// recorder swallows the answer of a request that DropAfter passed on,
// keeping its status.
type recorder struct {
	h      http.Header
	status int
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return len(p), nil
}
func (r *recorder) WriteHeader(status int) {
	// ReverseProxy passes on informational answers (100 Continue to a
	// request with Expect: 100-continue) before the final one.
	if r.status == 0 && status >= 200 {
		r.status = status
	}
}
func (r *recorder) Flush() {}

// statusText renders a count of statuses, "200×8 412×1".
func statusText(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for code := range m {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	var b strings.Builder
	for i, code := range codes {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d×%d", code, m[code])
	}
	return b.String()
}

// listener resets connections as soon as they are accepted while the proxy
// is down.
type listener struct {
	net.Listener
	p *Proxy
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.p.mu.Lock()
		down := l.p.down
		if down {
			l.p.refusals++
		}
		l.p.mu.Unlock()
		if !down {
			return c, nil
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}
