package avro

import (
	"bytes"
	"container/list"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound is wrapped by the registry's errors for an unknown schema id,
// subject or version (HTTP 404). It is final: the call is not retried.
var ErrNotFound = errors.New("schema registry: not found")

// ErrUnusable is wrapped by the registry's errors for a schema that the
// registry returned but that cannot be used: not AVRO, with references, or
// not a valid Avro schema. Like ErrNotFound it is final: asking again
// gives the same answer.
var ErrUnusable = errors.New("schema registry: unusable schema")

// unusable marks an error as ErrUnusable without changing its text.
type unusable struct{ error }

func (u unusable) Unwrap() []error { return []error{u.error, ErrUnusable} }

// RegistryError is an error answer of the registry: its HTTP status and,
// when the body has one, the registry's error_code and message.
type RegistryError struct {
	Status  int
	Code    int
	Message string
	Call    string // e.g. "GET /schemas/ids/7"
}

func (e *RegistryError) Error() string {
	return fmt.Sprintf("schema registry: %s: HTTP %d, error %d: %s", e.Call, e.Status, e.Code, e.Message)
}

// Unwrap makes a 404 match ErrNotFound.
func (e *RegistryError) Unwrap() error {
	if e.Status == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

// RegistryOption configures a Registry.
type RegistryOption func(*registryOptions) error

type registryOptions struct {
	user, password string
	tls            *tls.Config
	client         *http.Client
	cacheSize      int
	retries        int
	backoff        time.Duration
	maxBackoff     time.Duration
	timeout        time.Duration
}

// BasicAuth sends HTTP basic authentication with every request. The
// password appears in no error, log line or String.
func BasicAuth(user, password string) RegistryOption {
	return func(o *registryOptions) error {
		o.user, o.password = user, password
		return nil
	}
}

// RegistryTLS sets the TLS configuration (CA pool, client certificate) of
// the registry's HTTPS connections. Defaults to the system's roots.
func RegistryTLS(c *tls.Config) RegistryOption {
	return func(o *registryOptions) error {
		o.tls = c
		return nil
	}
}

// HTTPClient makes the registry use c instead of its own client; RegistryTLS
// and RegistryTimeout are then ignored.
func HTTPClient(c *http.Client) RegistryOption {
	return func(o *registryOptions) error {
		o.client = c
		return nil
	}
}

// CacheSize bounds the number of schemas kept by id (least recently used
// first out). Defaults to 1000.
func CacheSize(n int) RegistryOption {
	return func(o *registryOptions) error {
		if n < 1 {
			return fmt.Errorf("schema registry: cache size %d, want at least 1", n)
		}
		o.cacheSize = n
		return nil
	}
}

// Retries sets how often a failed call (a network error, HTTP 429 or 5xx)
// is retried, and the first wait, doubled after each try up to 30 times
// it, with jitter. Defaults to 5 retries from 100ms.
func Retries(n int, backoff time.Duration) RegistryOption {
	return func(o *registryOptions) error {
		if n < 0 || backoff < 0 {
			return fmt.Errorf("schema registry: retries %d, backoff %v: want both non-negative", n, backoff)
		}
		o.retries, o.backoff, o.maxBackoff = n, backoff, 30*backoff
		return nil
	}
}

// RegistryTimeout bounds each HTTP request. Defaults to 10s.
func RegistryTimeout(d time.Duration) RegistryOption {
	return func(o *registryOptions) error {
		if d <= 0 {
			return fmt.Errorf("schema registry: timeout %v, want > 0", d)
		}
		o.timeout = d
		return nil
	}
}

// Registry is a client of a Confluent Schema Registry: schemas by id
// (cached, bounded), subjects and their versions, and the registration of
// a schema under a subject. It is pqsink's one registry client: the sink
// reads writer schemas with it, replay registers the schemas of Avro files.
// It is safe for concurrent use.
type Registry struct {
	base   *url.URL // without user info
	opts   registryOptions
	client *http.Client

	mu    sync.Mutex
	cache map[uint32]*list.Element
	lru   *list.List // of *cached, most recent first
	wait  map[uint32]*fetch
}

type cached struct {
	id     uint32
	schema *Schema
}

// fetch is a lookup in flight, shared by the callers that ask for the same
// id at once.
type fetch struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// NewRegistry returns a client of the registry at baseURL (http or https).
// User info in the URL is taken as basic authentication and removed from
// the URL, so that it never shows in errors.
func NewRegistry(baseURL string, opts ...RegistryOption) (*Registry, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("schema registry: bad URL: %w", redactURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("schema registry: URL scheme %q, want http or https", u.Scheme)
	}
	o := registryOptions{cacheSize: 1000, retries: 5, backoff: 100 * time.Millisecond, maxBackoff: 3 * time.Second, timeout: 10 * time.Second}
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
	r := &Registry{base: u, opts: o, cache: make(map[uint32]*list.Element), lru: list.New(), wait: make(map[uint32]*fetch)}
	r.client = o.client
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
func (r *Registry) String() string { return r.base.String() }

// SchemaByID returns the schema registered under id (GET /schemas/ids/{id}),
// from the cache when it holds it. Only AVRO schemas are accepted, and
// schemas with references are not supported yet.
func (r *Registry) SchemaByID(ctx context.Context, id uint32) (*Schema, error) {
	r.mu.Lock()
	if e, ok := r.cache[id]; ok {
		r.lru.MoveToFront(e)
		r.mu.Unlock()
		return e.Value.(*cached).schema, nil
	}
	if f, ok := r.wait[id]; ok {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.schema, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &fetch{done: make(chan struct{})}
	r.wait[id] = f
	r.mu.Unlock()

	f.schema, f.err = r.fetchSchema(ctx, id)
	r.mu.Lock()
	delete(r.wait, id)
	if f.err == nil {
		r.cache[id] = r.lru.PushFront(&cached{id: id, schema: f.schema})
		for r.lru.Len() > r.opts.cacheSize {
			old := r.lru.Remove(r.lru.Back()).(*cached)
			delete(r.cache, old.id)
		}
	}
	r.mu.Unlock()
	close(f.done)
	return f.schema, f.err
}

// schemaAnswer is the body of GET /schemas/ids/{id} and of
// GET /subjects/{subject}/versions/{version}.
type schemaAnswer struct {
	Subject    string            `json:"subject"`
	Version    int               `json:"version"`
	ID         uint32            `json:"id"`
	SchemaType string            `json:"schemaType"`
	Schema     string            `json:"schema"`
	References []json.RawMessage `json:"references"`
}

func (a *schemaAnswer) parse(call string) (*Schema, error) {
	if a.SchemaType != "" && a.SchemaType != "AVRO" {
		return nil, unusable{fmt.Errorf("schema registry: %s: schema type %s, want AVRO", call, a.SchemaType)}
	}
	if len(a.References) > 0 {
		return nil, unusable{fmt.Errorf("schema registry: %s: schemas with references are not supported", call)}
	}
	s, err := Parse(a.Schema)
	if err != nil {
		return nil, unusable{fmt.Errorf("schema registry: %s: %w", call, err)}
	}
	return s, nil
}

func (r *Registry) fetchSchema(ctx context.Context, id uint32) (*Schema, error) {
	path := "/schemas/ids/" + strconv.FormatUint(uint64(id), 10)
	var a schemaAnswer
	if err := r.get(ctx, path, &a); err != nil {
		return nil, err
	}
	return a.parse("GET " + path)
}

// Subjects returns the registered subjects (GET /subjects).
func (r *Registry) Subjects(ctx context.Context) ([]string, error) {
	var out []string
	return out, r.get(ctx, "/subjects", &out)
}

// Versions returns the versions of a subject (GET /subjects/{subject}/versions).
func (r *Registry) Versions(ctx context.Context, subject string) ([]int, error) {
	var out []int
	return out, r.get(ctx, "/subjects/"+url.PathEscape(subject)+"/versions", &out)
}

// SubjectVersion is one version of a subject.
type SubjectVersion struct {
	Subject string
	Version int
	ID      uint32
	Schema  *Schema
}

// SubjectSchema returns a version of a subject, a number or "latest"
// (GET /subjects/{subject}/versions/{version}). The schema is also cached
// under its id.
func (r *Registry) SubjectSchema(ctx context.Context, subject, version string) (SubjectVersion, error) {
	path := "/subjects/" + url.PathEscape(subject) + "/versions/" + url.PathEscape(version)
	var a schemaAnswer
	if err := r.get(ctx, path, &a); err != nil {
		return SubjectVersion{}, err
	}
	s, err := a.parse("GET " + path)
	if err != nil {
		return SubjectVersion{}, err
	}
	r.mu.Lock()
	if _, ok := r.cache[a.ID]; !ok {
		r.cache[a.ID] = r.lru.PushFront(&cached{id: a.ID, schema: s})
		for r.lru.Len() > r.opts.cacheSize {
			old := r.lru.Remove(r.lru.Back()).(*cached)
			delete(r.cache, old.id)
		}
	}
	r.mu.Unlock()
	return SubjectVersion{Subject: a.Subject, Version: a.Version, ID: a.ID, Schema: s}, nil
}

// maxAnswer bounds an answer's body: a schema of a megabyte is already
// enormous.
const maxAnswer = 16 << 20

// Register registers schema, an Avro schema's text, under subject (POST
// /subjects/{subject}/versions) and returns its id; a schema the subject
// already has keeps its id, so a call that failed half-way is retried like
// the others.
func (r *Registry) Register(ctx context.Context, subject, schema string) (uint32, error) {
	return r.RegisterText(ctx, subject, &SchemaText{Type: "AVRO", Text: schema})
}

// get does GET path with retries and decodes the JSON answer into out.
func (r *Registry) get(ctx context.Context, path string, out any) error {
	return r.do(ctx, http.MethodGet, path, nil, out)
}

// do sends method path with body (JSON, or nil for none), with retries,
// and decodes the JSON answer into out.
func (r *Registry) do(ctx context.Context, method, path string, body []byte, out any) error {
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

func (r *Registry) try(ctx context.Context, method, path, call string, body []byte, out any) (err error, retry bool) {
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
		e := &RegistryError{Status: resp.StatusCode, Call: call}
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
