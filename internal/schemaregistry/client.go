// Package schemaregistry is pqsink's one client of a Confluent Schema
// Registry, shared by every format that reads its schemas from one (Avro,
// Protobuf, JSON Schema) and by replay, which registers schemas: lookups by
// id and by subject version, registration, retries with backoff, basic
// authentication, TLS and timeouts, and the errors that say whether asking
// again can help. It also splits and writes the Confluent wire format's
// header (magic byte, schema id). It knows no schema language: each format
// parses, compiles and caches what it reads here. It imports only the
// standard library.
package schemaregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrNotFound is wrapped by the registry's errors for an unknown schema id,
// subject or version (HTTP 404). It is final: the call is not retried.
var ErrNotFound = errors.New("schema registry: not found")

// ErrUnusable is wrapped by the errors of a schema that the registry
// returned but that its format cannot use (of another schema type, with
// references it cannot resolve, not valid). Like ErrNotFound it is final:
// asking again gives the same answer. Formats mark their errors with
// Unusable.
var ErrUnusable = errors.New("schema registry: unusable schema")

// unusable marks an error as ErrUnusable without changing its text.
type unusable struct{ error }

func (u unusable) Unwrap() []error { return []error{u.error, ErrUnusable} }

// Error is an error answer of the registry: its HTTP status and, when the
// body has one, the registry's error_code and message.
type Error struct {
	Status  int
	Code    int
	Message string
	Call    string // e.g. "GET /schemas/ids/7"
}

func (e *Error) Error() string {
	return fmt.Sprintf("schema registry: %s: HTTP %d, error %d: %s", e.Call, e.Status, e.Code, e.Message)
}

// Unwrap makes a 404 match ErrNotFound.
func (e *Error) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

// Option configures a Client.
type Option func(*options) error

type options struct {
	user, password string
	tls            *tls.Config
	client         *http.Client
	retries        int
	backoff        time.Duration
	maxBackoff     time.Duration
	timeout        time.Duration
}

// BasicAuth sends HTTP basic authentication with every request. The
// password appears in no error, log line or String.
func BasicAuth(user, password string) Option {
	return func(o *options) error {
		o.user, o.password = user, password
		return nil
	}
}

// TLS sets the TLS configuration (CA pool, client certificate) of
// the registry's HTTPS connections. Defaults to the system's roots.
func TLS(c *tls.Config) Option {
	return func(o *options) error {
		o.tls = c
		return nil
	}
}

// HTTPClient makes the registry use c instead of its own client; TLS and
// Timeout are then ignored.
func HTTPClient(c *http.Client) Option {
	return func(o *options) error {
		o.client = c
		return nil
	}
}

// Retries sets how often a failed call (a network error, HTTP 429 or 5xx)
// is retried, and the first wait, doubled after each try up to 30 times
// it, with jitter. Defaults to 5 retries from 100ms.
func Retries(n int, backoff time.Duration) Option {
	return func(o *options) error {
		if n < 0 || backoff < 0 {
			return fmt.Errorf("schema registry: retries %d, backoff %v: want both non-negative", n, backoff)
		}
		o.retries, o.backoff, o.maxBackoff = n, backoff, 30*backoff
		return nil
	}
}

// Timeout bounds each HTTP request. Defaults to 10s.
func Timeout(d time.Duration) Option {
	return func(o *options) error {
		if d <= 0 {
			return fmt.Errorf("schema registry: timeout %v, want > 0", d)
		}
		o.timeout = d
		return nil
	}
}

// Client is a client of a Confluent Schema Registry: schemas by id and by
// subject version, as the registry holds them, subjects and their
// versions, and the registration of a schema under a subject. It caches
// nothing: each format keeps what it makes of a schema. It is safe for
// concurrent use.
type Client struct {
	base   *url.URL // without user info
	opts   options
	client *http.Client
}

// New returns a client of the registry at baseURL (http or https). User
// info in the URL is taken as basic authentication and removed from the
// URL, so that it never shows in errors.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("schema registry: bad URL: %w", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("schema registry: URL scheme %q, want http or https", u.Scheme)
	}
	o := options{retries: 5, backoff: 100 * time.Millisecond, maxBackoff: 3 * time.Second, timeout: 10 * time.Second}
	if u.User != nil {
		o.user = u.User.Username()
		o.password, _ = u.User.Password()
		u.User = nil
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	r := &Client{base: u, opts: o, client: o.client}
	if r.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if o.tls != nil {
			tr.TLSClientConfig = o.tls
		}
		r.client = &http.Client{Transport: tr, Timeout: o.timeout}
	}
	return r, nil
}

// redactURLError drops the URL, which may hold a password, from a parse error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// String names the registry by its URL, without credentials.
func (r *Client) String() string { return r.base.String() }

// maxAnswer bounds an answer's body: a schema of a megabyte is already
// enormous.
const maxAnswer = 16 << 20

// get does GET path with retries and decodes the JSON answer into out.
func (r *Client) get(ctx context.Context, path string, out any) error {
	return r.do(ctx, http.MethodGet, path, nil, out)
}

// do sends method path with body (JSON, or nil for none), with retries,
// and decodes the JSON answer into out.
func (r *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	call := method + " " + path
	wait := r.opts.backoff
	for try := 0; ; try++ {
		err, retry := r.try(ctx, method, path, call, body, out)
		if err == nil || !retry || try >= r.opts.retries {
			return err
		}
		d := wait/2 + rand.N(wait/2+1)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		}
		wait = min(2*wait, r.opts.maxBackoff)
	}
}

func (r *Client) try(ctx context.Context, method, path, call string, body []byte, out any) (err error, retry bool) {
	// path is escaped (a subject may hold '/' or '%'): it extends the
	// escaped path, and Path is what that unescapes to.
	u := *r.base
	u.RawPath = r.base.EscapedPath() + path
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return fmt.Errorf("schema registry: %s: %w", call, err), false
	}
	var content io.Reader
	if body != nil {
		content = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), content)
	if err != nil {
		return fmt.Errorf("schema registry: %s: %w", call, redactURLError(err)), false
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	}
	if r.opts.user != "" || r.opts.password != "" {
		req.SetBasicAuth(r.opts.user, r.opts.password)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err(), false
		}
		// url.Error carries the URL, which holds no credentials (they go
		// in the header); keep the cause only, for a short message.
		return fmt.Errorf("schema registry: %s: %w", call, redactURLError(err)), true
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("schema registry: %s: reading the answer: %w", call, err), true
	}
	if len(answer) > maxAnswer {
		return fmt.Errorf("schema registry: %s: answer larger than %d bytes", call, maxAnswer), false
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Status: resp.StatusCode, Call: call}
		var eb struct {
			Code    int    `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(answer, &eb) == nil {
			e.Code, e.Message = eb.Code, eb.Message
		}
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
		return e, resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("schema registry: %s: bad answer: %w", call, err), false
	}
	return nil, false
}
