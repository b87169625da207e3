package avro

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// Registry is the Avro side of a Schema Registry: the AVRO schemas that
// the registry client (internal/schemaregistry) reads, parsed, and the
// most recently used of them kept by id. Concurrent lookups of one id
// share one request. It is safe for concurrent use.
type Registry struct {
	client *schemaregistry.Client
	size   int

	mu    sync.Mutex
	cache map[uint32]*list.Element
	lru   *list.List // of *cached, most recent first
	wait  map[uint32]*fetch
}

type cached struct {
	id     uint32
	schema *Schema
}

// fetch is a lookup in flight, shared by the callers that ask for the same
// id at once.
type fetch struct {
	done   chan struct{}
	schema *Schema
	err    error
}

// NewRegistry returns the Avro side of the registry client c, keeping up
// to cacheSize parsed schemas (at least 1).
func NewRegistry(c *schemaregistry.Client, cacheSize int) *Registry {
	return &Registry{client: c, size: max(cacheSize, 1), cache: make(map[uint32]*list.Element), lru: list.New(), wait: make(map[uint32]*fetch)}
}

// String names the registry by its URL, without credentials.
func (r *Registry) String() string { return r.client.String() }

// SchemaByID returns the Avro schema registered under id (GET
// /schemas/ids/{id}), from the cache when it holds it. An id the registry
// does not know wraps schemaregistry.ErrNotFound; a schema that is not
// AVRO, has references (not supported yet) or does not parse wraps
// schemaregistry.ErrUnusable; other errors are worth a retry.
func (r *Registry) SchemaByID(ctx context.Context, id uint32) (*Schema, error) {
	r.mu.Lock()
	if e, ok := r.cache[id]; ok {
		r.lru.MoveToFront(e)
		r.mu.Unlock()
		return e.Value.(*cached).schema, nil
	}
	if f, ok := r.wait[id]; ok {
		r.mu.Unlock()
		select {
		case <-f.done:
			return f.schema, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f := &fetch{done: make(chan struct{})}
	r.wait[id] = f
	r.mu.Unlock()

	f.schema, f.err = r.fetchSchema(ctx, id)
	r.mu.Lock()
	delete(r.wait, id)
	if f.err == nil {
		r.add(id, f.schema)
	}
	r.mu.Unlock()
	close(f.done)
	return f.schema, f.err
}

// add caches s under id, dropping the least recently used beyond the
// bound; r.mu is held.
func (r *Registry) add(id uint32, s *Schema) {
	if _, ok := r.cache[id]; ok {
		return
	}
	r.cache[id] = r.lru.PushFront(&cached{id: id, schema: s})
	for r.lru.Len() > r.size {
		old := r.lru.Remove(r.lru.Back()).(*cached)
		delete(r.cache, old.id)
	}
}

func (r *Registry) fetchSchema(ctx context.Context, id uint32) (*Schema, error) {
	s, err := r.client.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return parseRegistered(s, "GET "+schemaregistry.IDPath(id))
}

// parseRegistered parses a schema of the registry, read by call, as Avro.
func parseRegistered(s *schemaregistry.Schema, call string) (*Schema, error) {
	if s.Type != "AVRO" {
		return nil, schemaregistry.Unusable(fmt.Errorf("schema registry: %s: schema type %s, want AVRO", call, s.Type))
	}
	if len(s.References) > 0 {
		return nil, schemaregistry.Unusable(fmt.Errorf("schema registry: %s: schemas with references are not supported", call))
	}
	parsed, err := Parse(s.Text)
	if err != nil {
		return nil, schemaregistry.Unusable(fmt.Errorf("schema registry: %s: %w", call, err))
	}
	return parsed, nil
}

// SubjectVersion is one version of a subject, its schema parsed.
type SubjectVersion struct {
	Subject string
	Version int
	ID      uint32
	Schema  *Schema
}

// SubjectSchema returns a version of a subject, a number or "latest"
// (GET /subjects/{subject}/versions/{version}), parsed as SchemaByID
// parses. The schema is also cached under its id.
func (r *Registry) SubjectSchema(ctx context.Context, subject, version string) (SubjectVersion, error) {
	rs, err := r.client.SchemaByVersion(ctx, subject, version)
	if err != nil {
		return SubjectVersion{}, err
	}
	s, err := parseRegistered(rs, "GET "+schemaregistry.VersionPath(subject, version))
	if err != nil {
		return SubjectVersion{}, err
	}
	r.mu.Lock()
	r.add(rs.ID, s)
	r.mu.Unlock()
	return SubjectVersion{Subject: rs.Subject, Version: rs.Version, ID: rs.ID, Schema: s}, nil
}
