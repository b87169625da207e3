package protobuf

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// registryServer answers GET /schemas/ids/{id} and GET
// /subjects/{subject}/versions/{version} from answers, as Confluent's
// Schema Registry does, and counts the calls.
type registryServer struct {
	mu      sync.Mutex
	answers map[string]any
	calls   map[string]int
}

func (s *registryServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[req.URL.Path]++
	a, ok := s.answers[req.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "Schema not found"})
		return
	}
	json.NewEncoder(w).Encode(a)
}

func TestRegistry(t *testing.T) {
	all, err := os.ReadFile("testdata/all_types.proto")
	if err != nil {
		t.Fatal(err)
	}
	inner, err := os.ReadFile("testdata/imports/pqsink/test/inner.proto")
	if err != nil {
		t.Fatal(err)
	}
	refs := []map[string]any{
		{"name": "pqsink/test/inner.proto", "subject": "inner", "version": 3},
		{"name": "google/protobuf/timestamp.proto", "subject": "google/protobuf/timestamp.proto", "version": 1},
	}
	srv := &registryServer{calls: map[string]int{}, answers: map[string]any{}}
	for path, a := range map[string]map[string]any{
		"/schemas/ids/7":             {"schemaType": "PROTOBUF", "schema": string(all), "references": refs},
		"/subjects/inner/versions/3": {"subject": "inner", "version": 3, "id": 2, "schemaType": "PROTOBUF", "schema": string(inner)},
		"/schemas/ids/8":             {"schema": `{"type":"string"}`},
		"/schemas/ids/9":             {"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\"; message M { Missing m = 1; }"},
		"/schemas/ids/10":            {"schemaType": "PROTOBUF", "schema": string(all), "references": []map[string]any{{"name": "pqsink/test/inner.proto", "subject": "gone", "version": 1}}},
	} {
		srv.answers[path] = a
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	reg, err := schemaregistry.New(hs.URL, schemaregistry.Retries(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(reg, 10)
	ctx := context.Background()
	for range 3 {
		fd, err := r.FileByID(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		m, err := MessageAt(fd, []int{0})
		if err != nil || m.FullName() != "pqsink.test.AllTypes" {
			t.Fatalf("message 0: %v %v", m, err)
		}
		if _, err := Parquet(m); err != nil {
			t.Fatal(err)
		}
	}
	if srv.calls["/schemas/ids/7"] != 1 || srv.calls["/subjects/inner/versions/3"] != 1 || len(srv.calls) != 2 {
		t.Errorf("calls %v: want one of the schema and one of its reference (the well-known type is built in)", srv.calls)
	}
	for _, c := range []struct {
		id   uint32
		want error
		text string
	}{
		{8, schemaregistry.ErrUnusable, "is AVRO, want PROTOBUF"},
		{9, schemaregistry.ErrUnusable, "Missing"},
		{10, schemaregistry.ErrUnusable, "reference pqsink/test/inner.proto (subject gone, version 1)"},
		{11, schemaregistry.ErrNotFound, "HTTP 404"},
	} {
		_, err := r.FileByID(ctx, c.id)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("id %d: got %v, want %v with %q", c.id, err, c.want, c.text)
		}
	}
}
