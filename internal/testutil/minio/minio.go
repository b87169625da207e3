// Package minio starts a real MinIO server for tests that need the S3 API.
//
// The server binary is built by scripts/provision.sh from the version pinned
// in tools/minio (a separate module, so MinIO never enters pqsink's go.mod).
// Each Start launches its own server on a free loopback port, with a fresh
// data directory and random credentials, and stops it when the test ends.
package minio

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pqsink/pqsink/internal/testutil"
)

const (
	// readyTimeout bounds the wait for /minio/health/live. A cold start on a
	// loaded 2-core machine takes a few seconds.
	readyTimeout = 60 * time.Second
	// stopTimeout bounds the wait after SIGTERM before the server is killed.
	stopTimeout = 10 * time.Second
	// startAttempts covers the small window in which another process can
	// take the port between our probe and MinIO's bind.
	startAttempts = 3
)

// Server is a running MinIO server.
type Server struct {
	Endpoint  string // base URL, e.g. "http://127.0.0.1:41234"
	AccessKey string
	SecretKey string
	Region    string

	cmd  *exec.Cmd
	logs *testutil.Tail
	done chan struct{} // closed when the process has exited
	err  error         // exit status, valid once done is closed
}

// Option configures Start.
type Option func(*[]string)

// WithKMS gives the server a static KMS key, so that it accepts SSE-S3 and
// SSE-KMS (key id "pqsink-test-key") requests.
func WithKMS() Option {
	return func(env *[]string) {
		key := make([]byte, 32)
		rand.Read(key)
		*env = append(*env, "MINIO_KMS_SECRET_KEY="+KMSKeyID+":"+base64.StdEncoding.EncodeToString(key))
	}
}

// KMSKeyID is the id of the key that WithKMS installs.
const KMSKeyID = "pqsink-test-key"

// Start launches a MinIO server for the test and stops it when the test
// ends. The binary is $PQSINK_MINIO, or bin/minio in the provisioning cache
// (see testutil.CacheDir). Start fails the test, with a hint on how to
// provision, if the binary is missing.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatalf("minio harness: %v", err)
	}
	var env []string
	for _, opt := range opts {
		opt(&env)
	}
	var lastErr error
	for range startAttempts {
		srv, err := start(t, bin, env)
		if err == nil {
			return srv
		}
		lastErr = err
	}
	t.Fatalf("minio harness: %v", lastErr)
	return nil
}

func binary() (string, error) {
	bin := os.Getenv("PQSINK_MINIO")
	if bin == "" {
		cache, err := testutil.CacheDir()
		if err != nil {
			return "", err
		}
		bin = filepath.Join(cache, "bin", "minio")
	}
	fi, err := os.Stat(bin)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("no MinIO server binary at %s: %s", bin, testutil.ProvisionHint)
	}
	return bin, nil
}

func start(t testing.TB, bin string, env []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	consolePort, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	s := &Server{
		Endpoint:  "http://" + addr,
		AccessKey: "pqsink-" + rand.Text()[:12],
		SecretKey: rand.Text(),
		Region:    "us-east-1",
		logs:      &testutil.Tail{},
		done:      make(chan struct{}),
	}

	dir := t.TempDir()
	s.cmd = exec.Command(bin, "server",
		"--address", addr,
		"--console-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(consolePort)),
		"--certs-dir", filepath.Join(dir, "certs"),
		"--quiet",
		filepath.Join(dir, "data"))
	s.cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_REGION="+s.Region,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		// Keep MinIO's own config (and anything it writes to $HOME) per test.
		"HOME="+dir,
	)
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout = s.logs
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
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
// before MinIO binds it; Start retries if someone else takes it meanwhile.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady() error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(readyTimeout)
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("minio exited before it was ready (%v); output:\n%s", s.err, s.logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("minio not ready after %v (last probe: %v); output:\n%s", readyTimeout, err, s.logs)
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

// Client returns an S3 client for the server, path-style, with its
// credentials.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// CreateBucket creates a bucket, failing the test on error.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("minio: creating bucket %s: %v", name, err)
	}
}

// NewBucket creates a bucket with a fresh name and returns the name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := "test-" + strings.ToLower(rand.Text()[:16])
	s.CreateBucket(t, name)
	return name
}
