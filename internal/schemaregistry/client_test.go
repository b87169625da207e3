package schemaregistry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRegistry is an HTTP server implementing the part of the Confluent
// Schema Registry REST API (https://docs.confluent.io/platform/current/schema-registry/develop/api.html)
// that Client uses: GET /schemas/ids/{id}, GET /subjects,
// GET /subjects/{subject}/versions and GET /subjects/{subject}/versions/{version},
// with the documented answers and error bodies ({"error_code": 40403,
// "message": ...} for an unknown id, 40401 for an unknown subject, 40402
// for an unknown version, 40101 for bad credentials). No real registry
// runs in these tests.
type fakeRegistry struct {
	mu       sync.Mutex
	subjects map[string][]int // subject → schema ids, version i+1 at i
	schemas  map[int]string
	user     string
	password string
	fail     int // answer 503 to this many requests first
	requests atomic.Int64
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	answerErr := func(status, code int, msg string) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error_code": code, "message": msg})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail > 0 {
		f.fail--
		answerErr(http.StatusServiceUnavailable, 50003, "Error while forwarding the request to the leader")
		return
	}
	if f.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.user || p != f.password {
			answerErr(http.StatusUnauthorized, 40101, "Unauthorized")
			return
		}
	}
	if r.Method != http.MethodGet {
		answerErr(http.StatusMethodNotAllowed, 405, "method not allowed")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids":
		id, _ := strconv.Atoi(parts[2])
		s, ok := f.schemas[id]
		if !ok {
			answerErr(http.StatusNotFound, 40403, fmt.Sprintf("Schema %d not found", id))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"schema": s})
	case len(parts) == 1 && parts[0] == "subjects":
		var out []string
		for s := range f.subjects {
			out = append(out, s)
		}
		json.NewEncoder(w).Encode(out)
	case len(parts) >= 3 && parts[0] == "subjects" && parts[2] == "versions":
		ids, ok := f.subjects[parts[1]]
		if !ok {
			answerErr(http.StatusNotFound, 40401, "Subject '"+parts[1]+"' not found.")
			return
		}
		if len(parts) == 3 {
			var vs []int
			for i := range ids {
				vs = append(vs, i+1)
			}
			json.NewEncoder(w).Encode(vs)
			return
		}
		v := len(ids)
		if parts[3] != "latest" {
			v, _ = strconv.Atoi(parts[3])
		}
		if v < 1 || v > len(ids) {
			answerErr(http.StatusNotFound, 40402, "Version "+parts[3]+" not found.")
			return
		}
		id := ids[v-1]
		json.NewEncoder(w).Encode(map[string]any{"subject": parts[1], "version": v, "id": id, "schema": f.schemas[id]})
	default:
		answerErr(http.StatusNotFound, 404, "HTTP 404 Not Found")
	}
}

const (
	regV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	regV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string","default":""}]}`
)

func newFake() *fakeRegistry {
	return &fakeRegistry{
		subjects: map[string][]int{"orders-value": {1, 2}},
		schemas:  map[int]string{1: regV1, 2: regV2},
	}
}

func TestClient(t *testing.T) {
	fake := newFake()
	fake.user, fake.password = "svc", "s3cr3t-pw"
	srv := httptest.NewServer(fake)
	defer srv.Close()
	ctx := context.Background()

	// Credentials in the URL are taken and dropped from it.
	u := strings.Replace(srv.URL, "http://", "http://svc:s3cr3t-pw@", 1)
	r, err := New(u, Retries(2, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.String(), "s3cr3t") {
		t.Errorf("String() shows the password: %s", r)
	}
	s, err := r.SchemaByID(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != 2 || s.Type != "AVRO" || s.Text != regV2 {
		t.Errorf("schema 2 is %+v", s)
	}
	_, err = r.SchemaByID(ctx, 99)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "40403") {
		t.Errorf("unknown id: %v", err)
	}
	subjects, err := r.Subjects(ctx)
	if err != nil || len(subjects) != 1 || subjects[0] != "orders-value" {
		t.Errorf("subjects %v, %v", subjects, err)
	}
	versions, err := r.Versions(ctx, "orders-value")
	if err != nil || fmt.Sprint(versions) != "[1 2]" {
		t.Errorf("versions %v, %v", versions, err)
	}
	sv, err := r.SchemaByVersion(ctx, "orders-value", "latest")
	if err != nil || sv.ID != 2 || sv.Version != 2 || sv.Subject != "orders-value" || sv.Text != regV2 {
		t.Errorf("latest: %+v, %v", sv, err)
	}
	if _, err := r.SchemaByVersion(ctx, "nope", "1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown subject: %v", err)
	}

	// Bad credentials: an error that never shows the password.
	bad, _ := New(srv.URL, BasicAuth("svc", "wrong-pw-123"), Retries(0, 0))
	_, err = bad.SchemaByID(ctx, 1)
	var re *Error
	if !errors.As(err, &re) || re.Status != 401 || strings.Contains(err.Error(), "wrong-pw-123") {
		t.Errorf("bad credentials: %v", err)
	}
}

func TestClientRetries(t *testing.T) {
	fake := newFake()
	fake.fail = 2
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r, _ := New(srv.URL, Retries(3, time.Millisecond))
	if _, err := r.SchemaByID(context.Background(), 1); err != nil {
		t.Fatalf("after two 503s: %v", err)
	}
	if n := fake.requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
	fake.fail = 5
	r, _ = New(srv.URL, Retries(1, time.Millisecond))
	_, err := r.SchemaByID(context.Background(), 2)
	var re *Error
	if !errors.As(err, &re) || re.Status != 503 {
		t.Errorf("out of retries: %v", err)
	}
}

func TestClientTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(newFake())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	// Without the server's CA the handshake fails.
	r, _ := New(srv.URL, Retries(0, 0))
	if _, err := r.SchemaByID(context.Background(), 1); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	r, _ = New(srv.URL, TLS(&tls.Config{RootCAs: pool}))
	if _, err := r.SchemaByID(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
}
