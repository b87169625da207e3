// Package fakegcs runs fake-gcs-server (its Go library,
// github.com/fsouza/fake-gcs-server/fakestorage) in the test's process, as
// an HTTP server on a free loopback port, for tests of the GCS store: the
// real SDK talks to it over HTTP as it would to storage.googleapis.com.
//
// The server keeps objects in memory, and logs every request it receives
// (method, path and query), so that a test can check what the client sent,
// for instance a precondition that the emulator might not enforce.
package fakegcs

import (
	"context"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

// Server is a running fake-gcs-server.
type Server struct {
	// Endpoint is the server's base URL, e.g. "http://127.0.0.1:41234":
	// the store's endpoint, or STORAGE_EMULATOR_HOST without the scheme.
	Endpoint string

	fake *fakestorage.Server
	http *http.Server

	mu       sync.Mutex
	requests []Request
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string // unescaped
	Query  string // raw
}

// Option configures Start.
type Option func(*options)

type options struct {
	wrap func(http.Handler) http.Handler
}

// WithMiddleware puts wrap around the emulator's handler: every request,
// the chunks of resumable uploads included, goes through it, e.g. to fail
// some on purpose.
func WithMiddleware(wrap func(http.Handler) http.Handler) Option {
	return func(o *options) { o.wrap = wrap }
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fakegcs: %v", err)
	}
	host := l.Addr().String()
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		Scheme:     "http",
		NoListener: true, // this package serves its handler, to log requests
		// Resumable upload sessions and XML API reads address this
		// server, not Google's hosts.
		ExternalURL: "http://" + host,
		PublicHost:  host,
	})
	if err != nil {
		l.Close()
		t.Fatalf("fakegcs: %v", err)
	}
	s := &Server{Endpoint: "http://" + host, fake: fake}
	handler := fake.HTTPHandler()
	if o.wrap != nil {
		handler = o.wrap(handler)
	}
	s.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery})
			s.mu.Unlock()
			handler.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: time.Minute,
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := s.http.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("fakegcs: serving: %v", err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.http.Close()
		}
		<-served
		fake.Stop()
	})
	return s
}

// Host returns host:port, the form STORAGE_EMULATOR_HOST takes.
func (s *Server) Host() string { return strings.TrimPrefix(s.Endpoint, "http://") }

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(name string) {
	s.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
}

// NewBucket creates a bucket with a fresh name and returns the name.
func (s *Server) NewBucket() string {
	name := "test-" + strings.ToLower(rand.Text()[:16])
	s.CreateBucket(name)
	return name
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Fake returns the emulator itself, to look at objects without the SDK.
func (s *Server) Fake() *fakestorage.Server { return s.fake }
