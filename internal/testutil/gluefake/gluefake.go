// Package gluefake serves the AWS Glue Data Catalog actions that
// iceberg-go's Glue catalog calls, for tests: databases (get, list,
// create, update, delete) and tables (get, list, create, update, delete),
// kept in memory. It speaks Glue's JSON 1.1 protocol as the AWS SDK does:
// a POST to / naming the action in X-Amz-Target ("AWSGlue.GetTable"),
// JSON bodies, and errors as HTTP 400 with {"__type": ..., "Message": ...}.
//
// Each table has a VersionId that grows by one at every UpdateTable; an
// UpdateTable carrying another VersionId than the table's is refused with
// ConcurrentModificationException, as Glue's optimistic locking does. The
// server does not check SigV4 signatures, but it refuses a request
// without an Authorization header, or one signed with another access key
// than Options.AccessKeyID, so a test proves the SDK signed with the
// credentials it was given.
//
// Names are lowercased, as Glue stores them. Nothing else of Glue is
// modelled: partitions, table versions, permissions, column validation.
// It is test-only: no AWS endpoint is reachable from the build machines,
// and the tests start one server per test, on a loopback port.
package gluefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options change what the server accepts.
type Options struct {
	// AccessKeyID, when set, is the only access key a request's SigV4
	// Authorization header may name; another is AccessDeniedException.
	AccessKeyID string
}

// Server is an in-memory Glue Data Catalog.
type Server struct {
	// URL is the server's endpoint (table.catalog.endpoint).
	URL string

	opts Options

	mu           sync.Mutex
	dbs          map[string]map[string]any // database name -> its Database
	tables       map[string]map[string]any // "db.table" -> its Table
	calls        map[string]int            // by action
	conflicts    int                       // UpdateTable refused on VersionId
	catalogIDs   map[string]bool           // CatalogId values the requests carried
	beforeUpdate func()
}

// Start serves an empty catalog until the test ends.
func Start(t testing.TB, opts Options) *Server {
	s := &Server{
		opts:       opts,
		dbs:        map[string]map[string]any{},
		tables:     map[string]map[string]any{},
		calls:      map[string]int{},
		catalogIDs: map[string]bool{},
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Calls returns how many requests named action ("UpdateTable") were
// answered, successfully or not, after their signature was accepted.
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[action]
}

// Conflicts returns how many UpdateTable requests were refused because
// their VersionId was not the table's.
func (s *Server) Conflicts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conflicts
}

// CatalogIDs returns the CatalogId values the requests carried, sorted.
func (s *Server) CatalogIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.catalogIDs {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// Table returns a copy of the table's Glue parameters and its VersionId;
// ok is false when it does not exist.
func (s *Server) Table(database, name string) (params map[string]string, version string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tbl, ok := s.tables[key(database, name)]
	if !ok {
		return nil, "", false
	}
	params = map[string]string{}
	if p, _ := tbl["Parameters"].(map[string]any); p != nil {
		for k, v := range p {
			params[k], _ = v.(string)
		}
	}
	version, _ = tbl["VersionId"].(string)
	return params, version, true
}

// BeforeUpdate sets fn to run once, at the next UpdateTable, after the
// request is read and before its VersionId is compared: a test commits
// another writer's change there to make the request's VersionId stale.
func (s *Server) BeforeUpdate(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeUpdate = fn
}

// glueError is an error answer: its __type names the exception.
type glueError struct {
	status int
	typ    string
	msg    string
}

func (e *glueError) Error() string { return e.typ + ": " + e.msg }

func fail(status int, typ, format string, args ...any) *glueError {
	return &glueError{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) *glueError {
	return fail(http.StatusBadRequest, "EntityNotFoundException", format, args...)
}

func invalid(format string, args ...any) *glueError {
	return fail(http.StatusBadRequest, "InvalidInputException", format, args...)
}

// ServeHTTP answers one Glue action.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out, gerr := s.serve(r)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if gerr != nil {
		w.Header().Set("X-Amzn-ErrorType", gerr.typ)
		w.WriteHeader(gerr.status)
		json.NewEncoder(w).Encode(map[string]string{"__type": gerr.typ, "Message": gerr.msg})
		return
	}
	json.NewEncoder(w).Encode(out)
}

func (s *Server) serve(r *http.Request) (map[string]any, *glueError) {
	if r.Method != http.MethodPost {
		return nil, invalid("method %s; Glue takes POST", r.Method)
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") {
		return nil, fail(http.StatusForbidden, "AccessDeniedException", "the request is not signed with SigV4")
	}
	if s.opts.AccessKeyID != "" && !strings.Contains(auth, "Credential="+s.opts.AccessKeyID+"/") {
		return nil, fail(http.StatusForbidden, "AccessDeniedException", "the request is signed with another access key than %s", s.opts.AccessKeyID)
	}
	action, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSGlue.")
	if !ok {
		return nil, invalid("X-Amz-Target %q does not name an AWSGlue action", r.Header.Get("X-Amz-Target"))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return nil, invalid("reading the request: %v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, invalid("the request is not a JSON object: %v", err)
	}
	if action == "UpdateTable" {
		s.mu.Lock()
		fn := s.beforeUpdate
		s.beforeUpdate = nil
		s.mu.Unlock()
		if fn != nil {
			fn()
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
	if id, _ := in["CatalogId"].(string); id != "" {
		s.catalogIDs[id] = true
	}
	switch action {
	case "GetDatabase":
		db, gerr := s.database(in, "Name")
		if gerr != nil {
			return nil, gerr
		}
		return map[string]any{"Database": db}, nil
	case "GetDatabases":
		var list []any
		for _, name := range sortedKeys(s.dbs) {
			list = append(list, s.dbs[name])
		}
		return map[string]any{"DatabaseList": list}, nil
	case "CreateDatabase":
		din, _ := in["DatabaseInput"].(map[string]any)
		name := lower(din, "Name")
		if name == "" {
			return nil, invalid("DatabaseInput.Name is required")
		}
		if _, ok := s.dbs[name]; ok {
			return nil, fail(http.StatusBadRequest, "AlreadyExistsException", "Database %s already exists.", name)
		}
		db := clone(din)
		db["Name"] = name
		db["CreateTime"] = now()
		s.dbs[name] = db
		return map[string]any{}, nil
	case "UpdateDatabase":
		db, gerr := s.database(in, "Name")
		if gerr != nil {
			return nil, gerr
		}
		din, _ := in["DatabaseInput"].(map[string]any)
		next := clone(din)
		next["Name"], next["CreateTime"] = db["Name"], db["CreateTime"]
		s.dbs[db["Name"].(string)] = next
		return map[string]any{}, nil
	case "DeleteDatabase":
		db, gerr := s.database(in, "Name")
		if gerr != nil {
			return nil, gerr
		}
		name := db["Name"].(string)
		for k := range s.tables {
			if strings.HasPrefix(k, name+".") {
				delete(s.tables, k)
			}
		}
		delete(s.dbs, name)
		return map[string]any{}, nil
	case "GetTable":
		tbl, gerr := s.table(in, lower(in, "Name"))
		if gerr != nil {
			return nil, gerr
		}
		return map[string]any{"Table": tbl}, nil
	case "GetTables":
		return s.getTables(in)
	case "CreateTable":
		return s.createTable(in)
	case "UpdateTable":
		return s.updateTable(in)
	case "DeleteTable":
		tbl, gerr := s.table(in, lower(in, "Name"))
		if gerr != nil {
			return nil, gerr
		}
		delete(s.tables, key(tbl["DatabaseName"].(string), tbl["Name"].(string)))
		return map[string]any{}, nil
	}
	return nil, invalid("action %s is not served by gluefake", action)
}

// database finds the database named by in's field.
func (s *Server) database(in map[string]any, field string) (map[string]any, *glueError) {
	name := lower(in, field)
	db, ok := s.dbs[name]
	if !ok {
		return nil, notFound("Database %s not found.", name)
	}
	return db, nil
}

// table finds the table name of in's DatabaseName.
func (s *Server) table(in map[string]any, name string) (map[string]any, *glueError) {
	db, gerr := s.database(in, "DatabaseName")
	if gerr != nil {
		return nil, gerr
	}
	tbl, ok := s.tables[key(db["Name"].(string), name)]
	if !ok {
		return nil, notFound("Table %s not found.", name)
	}
	return tbl, nil
}

// getTables lists a database's tables, MaxResults at a time; the
// NextToken is the index of the next one.
func (s *Server) getTables(in map[string]any) (map[string]any, *glueError) {
	db, gerr := s.database(in, "DatabaseName")
	if gerr != nil {
		return nil, gerr
	}
	prefix := db["Name"].(string) + "."
	var names []string
	for k := range s.tables {
		if strings.HasPrefix(k, prefix) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	start := 0
	if tok, _ := in["NextToken"].(string); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(names) {
			return nil, invalid("NextToken %q is not one of this server's", tok)
		}
		start = n
	}
	end := len(names)
	if m, ok := in["MaxResults"].(float64); ok && m > 0 && start+int(m) < end {
		end = start + int(m)
	}
	list := []any{}
	for _, k := range names[start:end] {
		list = append(list, s.tables[k])
	}
	out := map[string]any{"TableList": list}
	if end < len(names) {
		out["NextToken"] = strconv.Itoa(end)
	}
	return out, nil
}

func (s *Server) createTable(in map[string]any) (map[string]any, *glueError) {
	db, gerr := s.database(in, "DatabaseName")
	if gerr != nil {
		return nil, gerr
	}
	tin, _ := in["TableInput"].(map[string]any)
	name := lower(tin, "Name")
	if name == "" {
		return nil, invalid("TableInput.Name is required")
	}
	k := key(db["Name"].(string), name)
	if _, ok := s.tables[k]; ok {
		return nil, fail(http.StatusBadRequest, "AlreadyExistsException", "Table %s already exists.", name)
	}
	tbl := clone(tin)
	tbl["Name"], tbl["DatabaseName"] = name, db["Name"]
	tbl["CreateTime"], tbl["UpdateTime"] = now(), now()
	tbl["VersionId"] = "1"
	s.tables[k] = tbl
	return map[string]any{}, nil
}

// updateTable replaces a table's input when the request's VersionId, if
// any, is the table's current one, and counts the version up.
func (s *Server) updateTable(in map[string]any) (map[string]any, *glueError) {
	tin, _ := in["TableInput"].(map[string]any)
	cur, gerr := s.table(in, lower(tin, "Name"))
	if gerr != nil {
		return nil, gerr
	}
	version, _ := cur["VersionId"].(string)
	if v, ok := in["VersionId"].(string); ok && v != version {
		s.conflicts++
		return nil, fail(http.StatusBadRequest, "ConcurrentModificationException",
			"Update table failed due to concurrent modifications: version %s is not the table's current version %s", v, version)
	}
	n, _ := strconv.Atoi(version)
	next := clone(tin)
	next["Name"], next["DatabaseName"] = cur["Name"], cur["DatabaseName"]
	next["CreateTime"], next["UpdateTime"] = cur["CreateTime"], now()
	next["VersionId"] = strconv.Itoa(n + 1)
	s.tables[key(cur["DatabaseName"].(string), cur["Name"].(string))] = next
	return map[string]any{}, nil
}

func key(database, table string) string {
	return strings.ToLower(database) + "." + strings.ToLower(table)
}

func lower(m map[string]any, field string) string {
	v, _ := m[field].(string)
	return strings.ToLower(v)
}

// clone copies a decoded JSON object deeply enough that later changes to
// the request's do not reach the stored one.
func clone(m map[string]any) map[string]any {
	out := map[string]any{}
	if m == nil {
		return out
	}
	b, _ := json.Marshal(m)
	json.Unmarshal(b, &out)
	return out
}

func sortedKeys(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// now is a timestamp as Glue's JSON protocol writes one: epoch seconds.
func now() float64 { return float64(time.Now().UnixMilli()) / 1000 }
