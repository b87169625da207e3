// Package azurite starts Azurite's blob service, Microsoft's emulator of
// Azure Blob Storage, for tests of the azblob:// store.
//
// Azurite is an npm package, installed by scripts/provision.sh into
// test/azurite/node_modules from the version pinned in test/azurite's
// package-lock.json. Each Start launches its own server on a free loopback
// port, with a fresh workspace directory and a storage account of its own
// (a random name and key), and stops it when the test ends.
package azurite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/pqsink/pqsink/internal/testutil"
)

const (
	// readyTimeout bounds the wait for the first HTTP answer. Node starts
	// Azurite in one or two seconds; a loaded 2-core machine takes longer.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds the wait after SIGTERM before the server is killed.
	stopTimeout = 10 * time.Second
	// startAttempts covers the small window in which another process can
	// take the port between our probe and Azurite's bind.
	startAttempts = 3
)

// Server is a running Azurite blob service with one storage account.
type Server struct {
	// Endpoint is the account's URL, path-style as Azurite serves it, e.g.
	// "http://127.0.0.1:41234/pqsinkabcdef": what store.endpoint takes.
	Endpoint string
	Account  string // the storage account's name
	Key      string // its shared key, base64

	cmd  *exec.Cmd
	logs *testutil.Tail
	done chan struct{} // closed when the process has exited
	err  error         // exit status, valid once done is closed
}

// Start launches an Azurite blob service for the test and stops it when
// the test ends. It fails the test, with a hint on how to provision, if
// node or test/azurite's npm packages are missing.
func Start(t testing.TB) *Server {
	t.Helper()
	script, err := mainScript(testutil.RepoRoot(t))
	if err != nil {
		t.Fatalf("azurite harness: %v", err)
	}
	var lastErr error
	for range startAttempts {
		srv, err := start(t, script)
		if err == nil {
			return srv
		}
		lastErr = err
	}
	t.Fatalf("azurite harness: %v", lastErr)
	return nil
}

// mainScript returns the blob service's entry point under root, the
// repository.
func mainScript(root string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not installed (Azurite is a Node.js program): %s", testutil.ProvisionHint)
	}
	script := filepath.Join(root, "test", "azurite", "node_modules", "azurite", "dist", "src", "blob", "main.js")
	if fi, err := os.Stat(script); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("no Azurite at %s: %s", script, testutil.ProvisionHint)
	}
	return script, nil
}

func start(t testing.TB, script string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	key := make([]byte, 64)
	rand.Read(key)
	s := &Server{
		Account: "pqsink" + strings.ToLower(rand.Text()[:12]),
		Key:     base64.StdEncoding.EncodeToString(key),
		logs:    &testutil.Tail{},
		done:    make(chan struct{}),
	}
	s.Endpoint = "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/" + s.Account
	dir := t.TempDir()
	s.cmd = exec.Command("node", script,
		"--blobHost", "127.0.0.1",
		"--blobPort", strconv.Itoa(port),
		"--location", dir,
		"--silent",
		"--disableTelemetry",
		// The SDK may speak a newer API version than this Azurite knows.
		"--skipApiVersionCheck")
	s.cmd.Dir = dir
	// AZURITE_ACCOUNTS replaces the well-known development account with
	// this server's own.
	s.cmd.Env = append(os.Environ(), "AZURITE_ACCOUNTS="+s.Account+":"+s.Key, "HOME="+dir)
	s.cmd.Stdout = s.logs
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting node %s: %w", script, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	if err := s.waitReady(); err != nil {
		s.stop()
		return nil, err
	}
	t.Cleanup(s.stop)
	return s, nil
}

// freePort asks the kernel for a free loopback port. The port is released
// before Azurite binds it; Start retries if someone else takes it
// meanwhile.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits for the first HTTP answer, whatever its status: an
// unauthenticated request is refused, which shows the service is up.
func (s *Server) waitReady() error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(s.Endpoint + "?comp=list")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("azurite exited before it was ready (%v); output:\n%s", s.err, s.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("azurite not ready after %v (last probe: %v); output:\n%s", readyTimeout, err, s.logs)
		}
	}
}

// stop terminates the server, politely first.
func (s *Server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Logs returns the end of the server's output, for failure messages.
func (s *Server) Logs() string { return s.logs.String() }

// Client returns a client of the server's account, signed with its
// shared key.
func (s *Server) Client(t testing.TB) *azblob.Client {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(s.Account, s.Key)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(s.Endpoint+"/", cred, nil)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	return c
}

// Container returns a client of one container of the account.
func (s *Server) Container(t testing.TB, name string) *container.Client {
	t.Helper()
	return s.Client(t).ServiceClient().NewContainerClient(name)
}

// NewContainer creates a container with a fresh name and returns the name.
func (s *Server) NewContainer(t testing.TB) string {
	t.Helper()
	name := "test-" + strings.ToLower(rand.Text()[:16])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client(t).CreateContainer(ctx, name, nil); err != nil {
		t.Fatalf("azurite: creating container %s: %v", name, err)
	}
	return name
}

// Request is one request that a Proxy passed on or answered.
type Request struct {
	Method      string
	Path        string // unescaped, from the account's name on
	Query       string // raw
	IfNoneMatch string // the If-None-Match header
}

// Proxy is an HTTP proxy in front of the server, in the test's process,
// which logs every request and lets the test answer some itself (an
// outage, throttling). Shared-key signatures do not cover the host, so a
// client reaches the account through it as through the server.
type Proxy struct {
	// Endpoint is the account's URL through the proxy.
	Endpoint string

	mu       sync.Mutex
	requests []Request
}

// Proxy starts a proxy in front of the server, whose requests pass
// through wrap (nil: straight to the server), and stops it when the test
// ends.
func (s *Server) Proxy(t testing.TB, wrap func(http.Handler) http.Handler) *Proxy {
	t.Helper()
	target, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	target.Path = ""
	var handler http.Handler = httputil.NewSingleHostReverseProxy(target)
	if wrap != nil {
		handler = wrap(handler)
	}
	p := &Proxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests = append(p.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, IfNoneMatch: r.Header.Get("If-None-Match")})
		p.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.Endpoint = srv.URL + "/" + s.Account
	return p
}

// Requests returns the requests the proxy has seen so far, in order.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requests)
}
