package protobuf

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pqsink/pqsink/internal/schemaregistry"
)

// Bounds of the references a registry schema may pull in: a schema that
// imports more, or nests its imports deeper, is refused rather than
// fetched without end (a reference cycle, say).
const (
	maxReferences     = 256
	maxReferenceDepth = 32
)

// Registry is the Protobuf side of a Schema Registry: it reads PROTOBUF
// schemas by id through pqsink's one registry client
// (internal/schemaregistry: retries, timeouts, credentials), resolves their references (the imports, by subject and
// version), compiles them with the well-known types built in, and keeps
// the compiled files of the most recently used ids. It is safe for
// concurrent use.
type Registry struct {
	reg  *schemaregistry.Client
	size int

	mu    sync.Mutex
	cache map[uint32]*list.Element
	lru   *list.List // of *cachedFile, most recent first
}

type cachedFile struct {
	id uint32
	fd protoreflect.FileDescriptor
}

// NewRegistry returns a Registry over reg that keeps up to cacheSize
// compiled schemas (at least 1).
func NewRegistry(reg *schemaregistry.Client, cacheSize int) *Registry {
	return &Registry{reg: reg, size: max(cacheSize, 1), cache: map[uint32]*list.Element{}, lru: list.New()}
}

// FileByID returns the compiled schema registered under id. An id the
// registry does not know wraps schemaregistry.ErrNotFound; a schema that is not
// PROTOBUF, whose references cannot be resolved or that does not compile
// wraps schemaregistry.ErrUnusable; other errors (the registry cannot be reached)
// are worth a retry.
func (r *Registry) FileByID(ctx context.Context, id uint32) (protoreflect.FileDescriptor, error) {
	r.mu.Lock()
	if e, ok := r.cache[id]; ok {
		r.lru.MoveToFront(e)
		r.mu.Unlock()
		return e.Value.(*cachedFile).fd, nil
	}
	r.mu.Unlock()
	fd, err := r.fetch(ctx, id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if _, ok := r.cache[id]; !ok {
		r.cache[id] = r.lru.PushFront(&cachedFile{id: id, fd: fd})
		for r.lru.Len() > r.size {
			old := r.lru.Remove(r.lru.Back()).(*cachedFile)
			delete(r.cache, old.id)
		}
	}
	r.mu.Unlock()
	return fd, nil
}

func (r *Registry) fetch(ctx context.Context, id uint32) (protoreflect.FileDescriptor, error) {
	raw, err := r.reg.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if raw.Type != "PROTOBUF" {
		return nil, schemaregistry.Unusable(fmt.Errorf("schema registry: schema id %d is %s, want PROTOBUF", id, raw.Type))
	}
	name := fmt.Sprintf("pqsink-registry/%d.proto", id)
	sources := map[string]string{name: raw.Text}
	if err := r.references(ctx, raw.References, sources, 0); err != nil {
		return nil, err
	}
	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(sources)}),
		Reporter: reporter.NewReporter(nil, nil),
	}
	files, err := c.Compile(ctx, name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, schemaregistry.Unusable(fmt.Errorf("schema registry: schema id %d: %w", id, err))
	}
	return files[0], nil
}

// references fetches refs, and theirs, into sources by import name. The
// well-known types are built in, and not fetched.
func (r *Registry) references(ctx context.Context, refs []schemaregistry.Reference, sources map[string]string, depth int) error {
	if depth > maxReferenceDepth {
		return schemaregistry.Unusable(fmt.Errorf("schema registry: references nested more than %d deep", maxReferenceDepth))
	}
	for _, ref := range refs {
		if strings.HasPrefix(ref.Name, "google/protobuf/") {
			continue
		}
		if _, ok := sources[ref.Name]; ok {
			continue
		}
		if len(sources) > maxReferences {
			return schemaregistry.Unusable(fmt.Errorf("schema registry: more than %d references", maxReferences))
		}
		version := "latest"
		if ref.Version > 0 {
			version = strconv.Itoa(ref.Version)
		}
		raw, err := r.reg.SchemaByVersion(ctx, ref.Subject, version)
		if err != nil {
			err = fmt.Errorf("schema registry: reference %s (subject %s, version %d): %w", ref.Name, ref.Subject, ref.Version, err)
			if errors.Is(err, schemaregistry.ErrNotFound) {
				return schemaregistry.Unusable(err)
			}
			return err
		}
		sources[ref.Name] = raw.Text
		if err := r.references(ctx, raw.References, sources, depth+1); err != nil {
			return err
		}
	}
	return nil
}
