package schemaregistry

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// registrar is an HTTP server answering POST /subjects/{subject}/versions
// as the Confluent Schema Registry does: {"id": N}, the same id for a
// schema the subject already has, 409 for an incompatible schema. It
// answers 503 to the first fail requests, and with answer instead of the
// id when set.
type registrar struct {
	mu       sync.Mutex
	ids      map[string]int // subject + "\x00" + schema → id
	fail     int
	answer   string
	requests []string // method, escaped path, content type and user of each
}

func (f *registrar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	user, _, _ := r.BasicAuth()
	f.requests = append(f.requests, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Content-Type")+" "+user)
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if f.fail > 0 {
		f.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 50003, "message": "Error while forwarding the request to the leader"})
		return
	}
	subject, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/subjects/"), "/versions")
	var body struct {
		Schema string `json:"schema"`
	}
	if r.Method != http.MethodPost || !ok || json.NewDecoder(r.Body).Decode(&body) != nil || body.Schema == "" {
		w.WriteHeader(http.StatusUnprocessableEntity)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 42201, "message": "Invalid schema"})
		return
	}
	if strings.Contains(body.Schema, "incompatible") {
		w.WriteHeader(http.StatusConflict)
		json.NewEncoder(w).Encode(map[string]any{"error_code": 409, "message": "Schema being registered is incompatible with an earlier schema"})
		return
	}
	if f.answer != "" {
		w.Write([]byte(f.answer))
		return
	}
	k := subject + "\x00" + body.Schema
	id, seen := f.ids[k]
	if !seen {
		id = 100 + len(f.ids)
		f.ids[k] = id
	}
	json.NewEncoder(w).Encode(map[string]any{"id": id})
}

// TestRegister: Register posts the schema under the subject (its
// name escaped), returns the registry's id, retries a 503 like any call,
// and fails on a refused schema or an answer without an id.
func TestRegister(t *testing.T) {
	const v1 = `{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}`
	cases := []struct {
		name, subject, schema string
		fail                  int
		answer                string
		wantID                uint32
		wantErr               string
		wantRequests          int
	}{
		{name: "new", subject: "orders-value", schema: v1, wantID: 100, wantRequests: 1},
		{name: "escaped subject", subject: "a/b c", schema: v1, wantID: 100, wantRequests: 1},
		{name: "after two 503s", subject: "orders-value", schema: v1, fail: 2, wantID: 100, wantRequests: 3},
		{name: "out of retries", subject: "orders-value", schema: v1, fail: 9, wantErr: "HTTP 503, error 50003", wantRequests: 4},
		{name: "incompatible", subject: "orders-value", schema: `"incompatible"`, wantErr: "schema registry: POST /subjects/orders-value/versions: HTTP 409, error 409: Schema being registered is incompatible", wantRequests: 1},
		{name: "no id", subject: "orders-value", schema: v1, answer: `{"version":1}`, wantErr: "schema registry: POST /subjects/orders-value/versions: an answer without a schema id", wantRequests: 1},
		{name: "negative id", subject: "orders-value", schema: v1, answer: `{"id":-1}`, wantErr: "an answer without a schema id", wantRequests: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &registrar{ids: map[string]int{}, fail: c.fail, answer: c.answer}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			r, err := New(srv.URL+"/", BasicAuth("svc", "pw"), Retries(3, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			id, err := r.Register(context.Background(), c.subject, c.schema)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one with %q", err, c.wantErr)
				}
			} else if err != nil || id != c.wantID {
				t.Fatalf("id %d, error %v; want %d", id, err, c.wantID)
			}
			if len(fake.requests) != c.wantRequests {
				t.Fatalf("requests %q, want %d", fake.requests, c.wantRequests)
			}
			want := "POST /subjects/" + strings.NewReplacer("/", "%2F", " ", "%20").Replace(c.subject) + "/versions application/vnd.schemaregistry.v1+json svc"
			if fake.requests[0] != want {
				t.Errorf("request %q, want %q", fake.requests[0], want)
			}
		})
	}
	// A schema the subject has keeps its id; another gets a new one.
	fake := &registrar{ids: map[string]int{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	r, _ := New(srv.URL)
	var ids []uint32
	for _, s := range []string{v1, v1, `"string"`} {
		id, err := r.Register(context.Background(), "t-value", s)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if ids[0] != 100 || ids[1] != 100 || ids[2] != 101 {
		t.Errorf("ids %v, want [100 100 101]", ids)
	}
	var re *Error
	if _, err := r.Register(context.Background(), "t-value", `"incompatible"`); !errors.As(err, &re) || re.Status != http.StatusConflict {
		t.Errorf("incompatible: %v, want an Error with status 409", err)
	}
}
