package table

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	itable "github.com/apache/iceberg-go/table"

	"github.com/pqsink/pqsink/config"
)

// restServer serves the endpoints of the Iceberg REST catalog
// specification that a sink uses (config, OAuth2 client credentials,
// namespaces, create, load and commit tables, a commit's requirements
// answered with 409), keeping the tables in another catalog.
type restServer struct {
	t       *testing.T
	backing catalog.Catalog
	token   string // issued for the credential id:secret

	mu      sync.Mutex
	authed  int // requests that carried the issued token
	commits int
}

const restToken = "tok-4711"

func startREST(t *testing.T, backing catalog.Catalog) (*restServer, string) {
	s := &restServer{t: t, backing: backing}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func (s *restServer) fail(w http.ResponseWriter, code int, typ string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": err.Error(), "type": typ, "code": code}})
}

func (s *restServer) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.t.Error(err)
	}
}

func (s *restServer) table(w http.ResponseWriter, tbl *itable.Table) {
	md, err := json.Marshal(tbl.Metadata())
	if err != nil {
		s.fail(w, 500, "ServerError", err)
		return
	}
	s.reply(w, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": json.RawMessage(md), "config": map[string]string{}})
}

func (s *restServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	if path == "oauth/tokens" {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" ||
			r.Form.Get("client_id") != "pqsink" || r.Form.Get("client_secret") != "s3cret" {
			s.fail(w, 401, "NotAuthorizedException", errors.New("bad client credentials"))
			return
		}
		s.reply(w, map[string]any{"access_token": restToken, "token_type": "bearer", "expires_in": 3600, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+restToken {
		s.fail(w, 401, "NotAuthorizedException", errors.New("no token"))
		return
	}
	s.mu.Lock()
	s.authed++
	s.mu.Unlock()
	parts := strings.Split(path, "/")
	switch {
	case path == "config":
		s.reply(w, map[string]any{"defaults": map[string]string{}, "overrides": map[string]string{}})
	case path == "namespaces" && r.Method == http.MethodPost:
		var req struct {
			Namespace  []string          `json:"namespace"`
			Properties map[string]string `json:"properties"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			s.fail(w, 400, "BadRequestException", err)
			return
		}
		switch err := s.backing.CreateNamespace(ctx, req.Namespace, req.Properties); {
		case errors.Is(err, catalog.ErrNamespaceAlreadyExists):
			s.fail(w, 409, "AlreadyExistsException", err)
		case err != nil:
			s.fail(w, 500, "ServerError", err)
		default:
			s.reply(w, map[string]any{"namespace": req.Namespace, "properties": req.Properties})
		}
	case len(parts) == 3 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodPost:
		var req struct {
			Name     string                 `json:"name"`
			Schema   *iceberg.Schema        `json:"schema"`
			Location string                 `json:"location"`
			Spec     *iceberg.PartitionSpec `json:"partition-spec"`
			Props    iceberg.Properties     `json:"properties"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			s.fail(w, 400, "BadRequestException", err)
			return
		}
		opts := []catalog.CreateTableOpt{catalog.WithLocation(req.Location), catalog.WithProperties(req.Props)}
		if req.Spec != nil {
			opts = append(opts, catalog.WithPartitionSpec(req.Spec))
		}
		tbl, err := s.backing.CreateTable(ctx, itable.Identifier{parts[1], req.Name}, req.Schema, opts...)
		switch {
		case errors.Is(err, catalog.ErrTableAlreadyExists):
			s.fail(w, 409, "AlreadyExistsException", err)
		case err != nil:
			s.fail(w, 500, "ServerError", err)
		default:
			s.table(w, tbl)
		}
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodGet:
		tbl, err := s.backing.LoadTable(ctx, itable.Identifier{parts[1], parts[3]})
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable):
			s.fail(w, 404, "NoSuchTableException", err)
		case err != nil:
			s.fail(w, 500, "ServerError", err)
		default:
			s.table(w, tbl)
		}
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodPost:
		var req struct {
			Requirements itable.Requirements `json:"requirements"`
			Updates      itable.Updates      `json:"updates"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			s.fail(w, 400, "BadRequestException", err)
			return
		}
		ident := itable.Identifier{parts[1], parts[3]}
		// The requirements are checked against the current metadata, as
		// the specification asks; a broken one is a 409.
		cur, err := s.backing.LoadTable(ctx, ident)
		if err != nil {
			s.fail(w, 404, "NoSuchTableException", err)
			return
		}
		for _, req := range req.Requirements {
			if err := req.Validate(cur.Metadata()); err != nil {
				s.fail(w, 409, "CommitFailedException", err)
				return
			}
		}
		md, loc, err := s.backing.CommitTable(ctx, ident, req.Requirements, req.Updates)
		if err != nil {
			s.fail(w, 409, "CommitFailedException", err)
			return
		}
		s.mu.Lock()
		s.commits++
		s.mu.Unlock()
		raw, err := json.Marshal(md)
		if err != nil {
			s.fail(w, 500, "ServerError", err)
			return
		}
		s.reply(w, map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw)})
	default:
		s.t.Logf("REST server: no endpoint for %s %s", r.Method, r.URL.Path)
		s.fail(w, 404, "NotFoundException", errors.New("no such endpoint"))
	}
}

// TestRESTCatalog: the sink's table through a REST catalog with OAuth2
// client credentials: created, committed to with a conflict on the way,
// read back; the server saw the token on every call.
func TestRESTCatalog(t *testing.T) {
	ctx := context.Background()
	backingEnv := newEnv(t)
	backing := backingEnv.open(t)
	srv, url := startREST(t, backing.cat)

	e := newEnv(t)
	e.cfg.Store.URL = backingEnv.cfg.Store.URL
	e.cfg.Table.Catalog.Type = "rest"
	e.cfg.Table.Catalog.URI = config.Secret(url)
	e.cfg.Table.Catalog.Credential = config.Secret("pqsink:s3cret")
	_, h1, _, mine, _ := racingMembers(t, e)
	res, err := h1.Commit(ctx, "g", []File{mine}, State{{"g", "events", 0}: {Committed: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || res.Appended != 1 {
		t.Errorf("commit = %+v, want 2 attempts, 1 appended", res)
	}
	got, err := h1.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (State{{"g", "events", 0}: {Committed: 10}, {"g", "events", 1}: {Committed: 10}}); !equalState(got, want) {
		t.Errorf("state = %v, want %v", got, want)
	}
	// The backing catalog, read directly, holds both files.
	tbl, err := backing.cat.LoadTable(ctx, itable.Identifier{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 {
		t.Errorf("%d files in the table, want 2", len(tasks))
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.commits != 2 || srv.authed < 6 {
		t.Errorf("server saw %d commits and %d calls with the token", srv.commits, srv.authed)
	}
}
