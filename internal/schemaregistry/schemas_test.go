package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// textRegistry answers the lookups of schemas of any type with their
// references, and records what is registered.
type textRegistry struct {
	posted map[string]any
}

func (f *textRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/schemas/ids/7":
		json.NewEncoder(w).Encode(map[string]any{"schemaType": "JSON", "schema": `{"$ref":"a.json"}`,
			"references": []any{map[string]any{"name": "a.json", "subject": "a", "version": 3}}})
	case req.Method == http.MethodGet && req.URL.Path == "/schemas/ids/8":
		json.NewEncoder(w).Encode(map[string]any{"schema": `"string"`})
	case req.Method == http.MethodGet && req.URL.Path == "/subjects/a b/versions/3":
		json.NewEncoder(w).Encode(map[string]any{"schemaType": "JSON", "schema": `{"type":"string"}`})
	case req.Method == http.MethodPost && req.URL.Path == "/subjects/t-value/versions":
		body, _ := io.ReadAll(req.Body)
		json.Unmarshal(body, &f.posted)
		json.NewEncoder(w).Encode(map[string]any{"id": 42})
	default:
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 40403, "message": "not found"})
	}
}

func TestSchemas(t *testing.T) {
	fake := &textRegistry{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r, err := New(srv.URL, Retries(0, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := r.SchemaByID(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if s.Type != "JSON" || s.Text != `{"$ref":"a.json"}` || len(s.References) != 1 || s.References[0] != (Reference{"a.json", "a", 3}) {
		t.Errorf("schema 7: %+v", s)
	}
	if s, err := r.SchemaByID(ctx, 8); err != nil || s.Type != "AVRO" {
		t.Errorf("schema 8 (no schemaType): %+v, %v", s, err)
	}
	if _, err := r.SchemaByID(ctx, 9); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if s, err := r.SchemaByVersion(ctx, "a b", "3"); err != nil || s.Text != `{"type":"string"}` {
		t.Errorf("subject a b version 3: %+v, %v", s, err)
	}
	id, err := r.RegisterSchema(ctx, "t-value", &Schema{Type: "JSON", Text: `{}`, References: []Reference{{"a.json", "a", 3}}})
	if err != nil || id != 42 {
		t.Fatalf("register: %d, %v", id, err)
	}
	if fake.posted["schemaType"] != "JSON" || fake.posted["schema"] != "{}" || len(fake.posted["references"].([]any)) != 1 {
		t.Errorf("registered %v", fake.posted)
	}
	fake.posted = nil
	if _, err := r.RegisterSchema(ctx, "t-value", &Schema{Type: "AVRO", Text: `"string"`}); err != nil || fake.posted["schemaType"] != nil {
		t.Errorf("an AVRO schema is registered without schemaType: %v, %v", fake.posted, err)
	}
}
