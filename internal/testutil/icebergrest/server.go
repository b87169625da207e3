// Package icebergrest serves the Iceberg REST catalog specification's
// endpoints that a sink uses, for tests: config (with a warehouse and an
// optional prefix), OAuth2 client credentials, a fixed bearer token or
// AWS SigV4 signatures checked with the AWS SDK's signer,
// namespaces, and create, load and commit tables, a commit's broken
// requirement answered with 409 as the specification asks. It keeps the
// tables in another catalog (an iceberg-go SQL catalog in the tests), so
// that what a client committed through REST can be read back from there.
//
// No REST catalog server can be installed on the build machines; the
// tests start this one per test, on a loopback port.
package icebergrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	itable "github.com/apache/iceberg-go/table"
)

// The credentials the server accepts.
const (
	// ClientID and ClientSecret are the OAuth2 client credentials the
	// token endpoint exchanges for Token ("pqsink:s3cret" in a
	// table.catalog.credential).
	ClientID     = "pqsink"
	ClientSecret = "s3cret"
	// Token is the bearer token every other request must carry: the one
	// the token endpoint issues, or a table.catalog.token.
	Token = "tok-4711"
)

// Options change what the server answers.
type Options struct {
	// Warehouse, when set, is the only warehouse the config endpoint
	// accepts (its warehouse query parameter); another is a 400.
	Warehouse string
	// Prefix, when set, is returned by the config endpoint as the
	// "prefix" override: every later path is /v1/{prefix}/...
	Prefix string
	// Locate, when set, gives a table created at identifier ident the
	// location the server assigns it, whatever the client asked for
	// (requested, possibly empty), as catalogs that manage locations do.
	Locate func(ident []string, requested string) string
	// SigV4, when set, is the AWS signature every request must carry
	// instead of the token, as AWS's Iceberg REST endpoints (Glue's, S3
	// Tables') ask; a request without it, or whose signature does not
	// match, is answered 403.
	SigV4 *SigV4
}

// Server is a REST catalog over another catalog.
type Server struct {
	// URL is the server's base URL (table.catalog.uri).
	URL string

	t       testing.TB
	backing catalog.Catalog
	opts    Options

	mu       sync.Mutex
	authed   int // requests that carried the token, or a valid signature
	commits  int
	tokens   int      // tokens issued
	refusals []string // why requests were refused, in order
}

// Start serves a REST catalog over backing until the test ends.
func Start(t testing.TB, backing catalog.Catalog, opts Options) *Server {
	s := &Server{t: t, backing: backing, opts: opts}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Counts returns how many requests carried the token (with
// Options.SigV4, a valid signature), how many commits succeeded and how
// many tokens the token endpoint issued.
func (s *Server) Counts() (authed, commits, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authed, s.commits, s.tokens
}

// Refusals returns why the server refused requests that did not
// authenticate, in order.
func (s *Server) Refusals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refusals)
}

// refuse answers a request that did not authenticate with code.
func (s *Server) refuse(w http.ResponseWriter, code int, typ string, err error) {
	s.mu.Lock()
	s.refusals = append(s.refusals, err.Error())
	s.mu.Unlock()
	s.fail(w, code, typ, err)
}

func (s *Server) fail(w http.ResponseWriter, code int, typ string, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": err.Error(), "type": typ, "code": code}})
}

func (s *Server) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		s.t.Error(err)
	}
}

func (s *Server) table(w http.ResponseWriter, tbl *itable.Table) {
	md, err := json.Marshal(tbl.Metadata())
	if err != nil {
		s.fail(w, 500, "ServerError", err)
		return
	}
	s.reply(w, map[string]any{"metadata-location": tbl.MetadataLocation(), "metadata": json.RawMessage(md), "config": map[string]string{}})
}

// ident reads a namespace path element: levels joined by the unit
// separator, as the specification encodes a multi-level namespace.
func ident(ns string, name ...string) itable.Identifier {
	return append(strings.Split(ns, "\x1f"), name...)
}

// ServeHTTP serves the endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	if s.opts.SigV4 != nil {
		if err := s.opts.SigV4.check(r); err != nil {
			s.refuse(w, 403, "ForbiddenException", err)
			return
		}
	} else if path == "oauth/tokens" {
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" ||
			r.Form.Get("client_id") != ClientID || r.Form.Get("client_secret") != ClientSecret {
			s.fail(w, 401, "NotAuthorizedException", errors.New("bad client credentials"))
			return
		}
		s.mu.Lock()
		s.tokens++
		s.mu.Unlock()
		s.reply(w, map[string]any{"access_token": Token, "token_type": "bearer", "expires_in": 3600, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		return
	}
	if s.opts.SigV4 == nil && r.Header.Get("Authorization") != "Bearer "+Token {
		s.refuse(w, 401, "NotAuthorizedException", errors.New("no token"))
		return
	}
	s.mu.Lock()
	s.authed++
	s.mu.Unlock()
	if path == "config" {
		if wh := r.URL.Query().Get("warehouse"); s.opts.Warehouse != "" && wh != s.opts.Warehouse {
			s.fail(w, 400, "BadRequestException", fmt.Errorf("no warehouse %q", wh))
			return
		}
		overrides := map[string]string{}
		if s.opts.Prefix != "" {
			overrides["prefix"] = s.opts.Prefix
		}
		s.reply(w, map[string]any{"defaults": map[string]string{}, "overrides": overrides})
		return
	}
	if s.opts.Prefix != "" {
		rest, ok := strings.CutPrefix(path, s.opts.Prefix+"/")
		if !ok {
			s.fail(w, 404, "NotFoundException", fmt.Errorf("%s is not under the prefix %s", r.URL.Path, s.opts.Prefix))
			return
		}
		path = rest
	}
	parts := strings.Split(path, "/")
	switch {
	case path == "namespaces" && r.Method == http.MethodPost:
		s.createNamespace(w, r)
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
		id := ident(parts[1], req.Name)
		loc := req.Location
		if s.opts.Locate != nil {
			loc = s.opts.Locate(id, req.Location)
		}
		opts := []catalog.CreateTableOpt{catalog.WithProperties(req.Props)}
		if loc != "" {
			opts = append(opts, catalog.WithLocation(loc))
		}
		if req.Spec != nil {
			opts = append(opts, catalog.WithPartitionSpec(req.Spec))
		}
		tbl, err := s.backing.CreateTable(ctx, id, req.Schema, opts...)
		switch {
		case errors.Is(err, catalog.ErrTableAlreadyExists):
			s.fail(w, 409, "AlreadyExistsException", err)
		case errors.Is(err, catalog.ErrNoSuchNamespace):
			s.fail(w, 404, "NoSuchNamespaceException", err)
		case err != nil:
			s.fail(w, 500, "ServerError", err)
		default:
			s.table(w, tbl)
		}
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodGet:
		tbl, err := s.backing.LoadTable(ctx, ident(parts[1], parts[3]))
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable):
			s.fail(w, 404, "NoSuchTableException", err)
		case err != nil:
			s.fail(w, 500, "ServerError", err)
		default:
			s.table(w, tbl)
		}
	case len(parts) == 4 && parts[0] == "namespaces" && parts[2] == "tables" && r.Method == http.MethodPost:
		s.commit(w, r, ident(parts[1], parts[3]))
	default:
		s.t.Logf("REST server: no endpoint for %s %s", r.Method, r.URL.Path)
		s.fail(w, 404, "NotFoundException", errors.New("no such endpoint"))
	}
}

func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, 400, "BadRequestException", err)
		return
	}
	switch err := s.backing.CreateNamespace(r.Context(), req.Namespace, req.Properties); {
	case errors.Is(err, catalog.ErrNamespaceAlreadyExists):
		s.fail(w, 409, "AlreadyExistsException", err)
	case err != nil:
		s.fail(w, 500, "ServerError", err)
	default:
		s.reply(w, map[string]any{"namespace": req.Namespace, "properties": req.Properties})
	}
}

// commit checks the requirements against the current metadata, as the
// specification asks (a broken one is a 409), and applies the updates.
func (s *Server) commit(w http.ResponseWriter, r *http.Request, id itable.Identifier) {
	ctx := r.Context()
	var req struct {
		Requirements itable.Requirements `json:"requirements"`
		Updates      itable.Updates      `json:"updates"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, 400, "BadRequestException", err)
		return
	}
	cur, err := s.backing.LoadTable(ctx, id)
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
	md, loc, err := s.backing.CommitTable(ctx, id, req.Requirements, req.Updates)
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
}
