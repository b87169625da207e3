package avro

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

const (
	regV1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	regV2 = `{"type":"record","name":"R","fields":[{"name":"a","type":"long"},{"name":"b","type":"string","default":""}]}`
)

// schemaServer answers GET /schemas/ids/{id} with answers[id] (a 404 for
// an id it does not hold) and GET /subjects/orders-value/versions/latest
// with id 2; it counts the requests.
type schemaServer struct {
	answers  map[int]map[string]any
	requests atomic.Int64
}

func (f *schemaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if r.URL.Path == "/subjects/orders-value/versions/latest" {
		a := map[string]any{"subject": "orders-value", "version": 2, "id": 2}
		for k, v := range f.answers[2] {
			a[k] = v
		}
		json.NewEncoder(w).Encode(a)
		return
	}
	id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/schemas/ids/"))
	a, ok := f.answers[id]
	if err != nil || !ok {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": fmt.Sprintf("Schema %d not found", id)})
		return
	}
	json.NewEncoder(w).Encode(a)
}

func newRegistry(t *testing.T, f *schemaServer, cacheSize int) *Registry {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := schemaregistry.New(srv.URL, schemaregistry.Retries(0, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return NewRegistry(c, cacheSize)
}

// TestRegistry: the Avro side of the registry parses AVRO schemas, keeps
// them by id, and says which answers are final (not found, unusable).
func TestRegistry(t *testing.T) {
	f := &schemaServer{answers: map[int]map[string]any{
		1: {"schema": regV1},
		2: {"schemaType": "AVRO", "schema": regV2},
		3: {"schemaType": "PROTOBUF", "schema": `syntax = "proto3";`},
		4: {"schema": regV1, "references": []any{map[string]any{"name": "x", "subject": "x", "version": 1}}},
		5: {"schema": `{"type":"nope"}`},
	}}
	r := newRegistry(t, f, 10)
	ctx := context.Background()
	s, err := r.SchemaByID(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Canonical() != MustParse(regV2).Canonical() {
		t.Errorf("schema 2 is %s", s.Canonical())
	}
	before := f.requests.Load()
	if again, err := r.SchemaByID(ctx, 2); err != nil || again != s {
		t.Fatalf("schema 2 again: %v, %v", again, err)
	}
	if f.requests.Load() != before {
		t.Errorf("a cached schema was fetched again")
	}
	cases := []struct {
		id       uint32
		notFound bool
		want     string
	}{
		{id: 99, notFound: true, want: "40403"},
		{id: 3, want: "schema registry: GET /schemas/ids/3: schema type PROTOBUF, want AVRO"},
		{id: 4, want: "schema registry: GET /schemas/ids/4: schemas with references are not supported"},
		{id: 5, want: "schema registry: GET /schemas/ids/5: "},
	}
	for _, c := range cases {
		_, err := r.SchemaByID(ctx, c.id)
		final := schemaregistry.ErrUnusable
		if c.notFound {
			final = schemaregistry.ErrNotFound
		}
		if !errors.Is(err, final) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("schema %d: %v, want %v with %q", c.id, err, final, c.want)
		}
	}
	sv, err := r.SubjectSchema(ctx, "orders-value", "latest")
	if err != nil || sv.ID != 2 || sv.Version != 2 || sv.Subject != "orders-value" || sv.Schema.Canonical() != s.Canonical() {
		t.Errorf("latest: %+v, %v", sv, err)
	}
}

// TestRegistryCacheBound: the cache keeps the cacheSize most recently
// used schemas, and fetches an evicted one again.
func TestRegistryCacheBound(t *testing.T) {
	f := &schemaServer{answers: map[int]map[string]any{}}
	for i := 1; i <= 10; i++ {
		f.answers[i] = map[string]any{"schema": regV1}
	}
	r := newRegistry(t, f, 3)
	for i := 1; i <= 10; i++ {
		if _, err := r.SchemaByID(context.Background(), uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.lru.Len(); n != 3 {
		t.Errorf("cache holds %d schemas, want 3", n)
	}
	before := f.requests.Load()
	r.SchemaByID(context.Background(), 10) // most recent: cached
	r.SchemaByID(context.Background(), 1)  // evicted: fetched
	if got := f.requests.Load() - before; got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}
