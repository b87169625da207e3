package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/schema/jsonschema"
	"github.com/pqsink/pqsink/table"
)

// The JSON Schema format (format.type: json_schema). With a registry, each
// record value is in Confluent's JSON Schema wire format: magic byte 0,
// the 4-byte id of its schema in the registry, then the JSON text; with
// a schema_file, each value is plain JSON of that one schema. A value is
// validated against its schema (reason schema when it fails), then
// shredded by the JSON shredder into the columns of the schema's Parquet
// mapping (package schema/jsonschema). Each file has one schema: a record
// of another schema id finishes its path's file (rotation reason schema).
// A new schema id must evolve the partition's schemas compatibly (fields
// only added, and optional; a required field may become optional);
// records of one that does not are rejected with reason schema, naming
// the field, and follow the errors policy (fail stops the partition).

// maxSchemaReferences bounds the schemas one registry schema may pull in
// through its references, transitively: a reference loop or a hostile
// registry cannot make the sink fetch without end.
const maxSchemaReferences = 256

// jsSchema is a JSON Schema the sink has seen: by its registry id, or the
// schema_file (id 0).
type jsSchema struct {
	id      uint32
	js      *jsonschema.Schema
	parquet *schema.Schema // with the envelope
	footer  [][2]string    // the files' key-value metadata: the schema, its references
	err     error          // the schema cannot be the files' schema
}

// jsonSchemaSink is the sink's side of the format, shared by its
// partitions: the schema_file's schema, or the registry's schemas by id,
// compiled once and kept up to format.registry.cache_size of them.
type jsonSchemaSink struct {
	registry *avro.Registry
	file     *jsSchema

	mu    sync.Mutex
	byID  map[uint32]*jsSchema
	order []uint32 // ids in byID, oldest first
	max   int
}

// newJSONSchema readies the format for format.type json_schema.
func (f *format) newJSONSchema(cfg *config.Config) error {
	k := &jsonSchemaSink{byID: map[uint32]*jsSchema{}, max: 1000}
	if cfg.Format.LossyNumbers {
		f.jsonOpts = append(f.jsonOpts, rowgroup.LossyNumbers())
	}
	f.js = k
	if cfg.Format.Registry != nil && cfg.Format.Registry.URL != "" {
		reg, err := schemaregistry.New(cfg.Format.Registry)
		if err != nil {
			return err
		}
		k.registry = reg
		if cfg.Format.Registry.CacheSize > 0 {
			k.max = cfg.Format.Registry.CacheSize
		}
		return nil
	}
	path := cfg.Format.SchemaFile
	if !filepath.IsAbs(path) && cfg.Dir != "" {
		path = filepath.Join(cfg.Dir, path)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("format.schema_file: %w", err)
	}
	js, err := jsonschema.Compile(text, jsonschema.Base(path), jsonschema.LocalFiles())
	if err != nil {
		return fmt.Errorf("format.schema_file %s: %w", path, err)
	}
	s := f.jsSchema(0, js, js.Loaded(), false)
	if s.err != nil {
		return fmt.Errorf("format.schema_file %s: %w", path, s.err)
	}
	k.file = s
	return nil
}

// jsSchema makes the sink's record of a compiled schema: its Parquet
// schema with the envelope, and the footer entries of its files.
func (f *format) jsSchema(id uint32, js *jsonschema.Schema, refs []jsonschema.FileReference, wire bool) *jsSchema {
	s := &jsSchema{id: id, js: js, footer: [][2]string{{jsonschema.MetadataKey, string(js.Text())}}}
	if len(refs) > 0 {
		b, _ := json.Marshal(refs)
		s.footer = append(s.footer, [2]string{jsonschema.ReferencesKey, string(b)})
	}
	if wire {
		s.footer = append(s.footer, [2]string{jsonschema.IDKey, strconv.FormatUint(uint64(id), 10)})
	}
	var extra []*schema.Node
	if f.envelope {
		if !js.Wrapped() {
			for _, n := range js.Fields() {
				if n.Name == rowgroup.EnvelopeField {
					s.err = fmt.Errorf("json schema: property %s is the Kafka envelope's; rename it or set envelope: false", rowgroup.EnvelopeField)
					return s
				}
			}
		}
		extra = append(extra, rowgroup.EnvelopeNodeIn(f.timeUnit))
	}
	s.parquet, s.err = js.Parquet(extra...)
	return s
}

// lookup returns the schema of id: from the cache, or fetched from the
// registry with its references and compiled. A schema the registry gives
// but that cannot be used (not JSON, not valid, not mappable) comes back
// with its err set; an error is the registry's (not found, unreachable).
func (k *jsonSchemaSink) lookup(ctx context.Context, f *format, id uint32) (*jsSchema, error) {
	k.mu.Lock()
	s := k.byID[id]
	k.mu.Unlock()
	if s != nil {
		return s, nil
	}
	t, err := k.registry.SchemaTextByID(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err = k.compile(ctx, f, id, t)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if old := k.byID[id]; old != nil {
		return old, nil
	}
	k.byID[id] = s
	k.order = append(k.order, id)
	for len(k.order) > k.max {
		delete(k.byID, k.order[0])
		k.order = k.order[1:]
	}
	return s, nil
}

// compile fetches t's references, transitively, and compiles t.
func (k *jsonSchemaSink) compile(ctx context.Context, f *format, id uint32, t *avro.SchemaText) (*jsSchema, error) {
	if t.Type != "JSON" {
		return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: the registry holds a %s schema under it, not JSON", id, t.Type)}, nil
	}
	opts := []jsonschema.Option{}
	var refs []jsonschema.FileReference
	seen := map[string]bool{}
	queue := append([]avro.SchemaReference(nil), t.References...)
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if seen[ref.Name] {
			continue
		}
		if seen[ref.Name] = true; len(seen) > maxSchemaReferences {
			return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: more than %d references", id, maxSchemaReferences)}, nil
		}
		rt, err := k.registry.SchemaTextByVersion(ctx, ref.Subject, ref.Version)
		if errors.Is(err, avro.ErrNotFound) {
			return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: reference %s (subject %s version %d): %w", id, ref.Name, ref.Subject, ref.Version, err)}, nil
		} else if err != nil {
			return nil, err
		}
		opts = append(opts, jsonschema.Reference(ref.Name, []byte(rt.Text)))
		refs = append(refs, jsonschema.FileReference{Name: ref.Name, Subject: ref.Subject, Version: ref.Version, Schema: rt.Text})
		queue = append(queue, rt.References...)
	}
	js, err := jsonschema.Compile([]byte(t.Text), opts...)
	if err != nil {
		return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: %w", id, err)}, nil
	}
	s := f.jsSchema(id, js, refs, true)
	if s.err != nil {
		s.err = fmt.Errorf("json schema id %d: %w", id, s.err)
	}
	return s, nil
}

// jsonSchemaFormat is a partition's side of the JSON Schema format: the
// schemas its records were written with, and whether each evolves the
// others compatibly.
type jsonSchemaFormat struct {
	f    *format
	log  *slog.Logger
	file *jsSchema // the schema_file's, with the partition's Parquet schema

	verdicts map[uint32]error // nil: the schema's records are admitted
	admitted []*jsSchema      // ascending ids
	wrapped  []byte

	// With a table and a registry: fit gives each schema the table's field
	// ids (evolving the table), and fitted holds what it gave.
	fit    fitFunc
	fitted map[*jsSchema]*schema.Schema
	// table is the committer of the partition's table when its partition
	// fields over payload columns are computed with each registry schema's
	// columns (partVals holds them by schema); nil otherwise.
	table    *tableCommitter
	partVals map[*jsSchema]*tablePartValues
}

// newJSONSchemaFormat returns a partition's side of the format. fixed is
// the files' schema the partition writes, when it is known at startup (a
// schema_file): the sink's, or the table's, which carries the table's
// field ids instead of the mapping's.
func newJSONSchemaFormat(f *format, fixed *schema.Schema, log *slog.Logger, fit fitFunc) *jsonSchemaFormat {
	x := &jsonSchemaFormat{f: f, log: log, verdicts: map[uint32]error{}, file: f.js.file, fit: fit, fitted: map[*jsSchema]*schema.Schema{}}
	if x.file != nil && fixed != nil && fixed != x.file.parquet {
		c := *x.file
		c.parquet = fixed
		x.file = &c
	}
	return x
}

func (x *jsonSchemaFormat) sampling() bool              { return false }
func (x *jsonSchemaFormat) sample(*record) bool         { return true }
func (x *jsonSchemaFormat) learn(context.Context) error { return nil }
func (x *jsonSchemaFormat) reason(err error) string     { return classify(err) }

// decode finds r's schema, checks that it evolves the partition's others,
// and validates the value against it. As for Avro, a value not in the
// wire format or of an id the registry does not know is a rejection
// (decode), and a registry that cannot be reached an error (errRestart
// after a pause): the record is read again, never rejected for it.
func (x *jsonSchemaFormat) decode(ctx context.Context, r *record) (decoded, *rejection, error) {
	k := x.f.js
	s, body := x.file, r.value
	if k.registry != nil {
		id, rest, err := avro.SplitWire(r.value)
		if err != nil {
			return decoded{}, &rejection{rejectDecode, fmt.Errorf("json schema wire format: %w", err)}, nil
		}
		body = rest
		s, err = k.lookup(ctx, x.f, id)
		switch {
		case err == nil:
		case errors.Is(err, avro.ErrNotFound):
			return decoded{}, &rejection{rejectDecode, fmt.Errorf("json schema id %d: %w", id, err)}, nil
		case ctx.Err() != nil:
			return decoded{}, nil, ctx.Err()
		default:
			x.log.Error("schema registry unreachable; consuming again from the committed offset after a pause",
				"schema_id", id, "offset", r.offset, "pause", registryPause, "error", err)
			if !sleep(ctx, registryPause) {
				return decoded{}, nil, ctx.Err()
			}
			return decoded{}, nil, errRestart
		}
	}
	if s.err != nil {
		return decoded{}, &rejection{rejectSchema, s.err}, nil
	}
	if err := x.admit(s); err != nil {
		return decoded{}, &rejection{rejectSchema, err}, nil
	}
	if x.fit != nil && k.registry != nil && x.fitted[s] == nil {
		fitted, err := x.fit(ctx, s.parquet)
		switch {
		case errors.Is(err, table.ErrIncompatible):
			err = fmt.Errorf("json schema id %d: %w", s.id, err)
			x.verdicts[s.id] = err
			return decoded{}, &rejection{rejectSchema, err}, nil
		case err != nil:
			return decoded{}, nil, catalogUnreachable(ctx, x.log, err, "schema_id", s.id, "offset", r.offset)
		}
		x.fitted[s] = fitted
	}
	var vals *tablePartValues
	if x.table != nil && k.registry != nil {
		if vals = x.partVals[s]; vals == nil {
			spec, err := x.table.specFields(ctx, x.fitted[s])
			if err != nil {
				return decoded{}, nil, catalogUnreachable(ctx, x.log, err, "schema_id", s.id, "offset", r.offset)
			}
			if vals, err = x.table.newSchemaPartValues(spec, x.fitted[s]); err != nil {
				err = fmt.Errorf("json schema id %d: %w", s.id, err)
				x.verdicts[s.id] = err
				return decoded{}, &rejection{rejectSchema, err}, nil
			}
			if x.partVals == nil {
				x.partVals = map[*jsSchema]*tablePartValues{}
			}
			x.partVals[s] = vals
		}
	}
	if err := s.js.Validate(body); errors.Is(err, jsonschema.ErrNotJSON) {
		return decoded{}, &rejection{rejectDecode, err}, nil
	} else if err != nil {
		return decoded{}, &rejection{rejectSchema, err}, nil
	}
	text := body
	if s.js.Wrapped() {
		x.wrapped = jsonschema.AppendWrapped(x.wrapped[:0], body)
		body = x.wrapped
	}
	return decoded{payload: body, js: s, jsonText: text, tableVals: vals}, nil, nil
}

// admit decides, once per schema id, whether records of s can be
// written beside the partition's admitted schemas: s must evolve the
// admitted schema of the next lower id, and the one of the next higher id
// must evolve s.
func (x *jsonSchemaFormat) admit(s *jsSchema) error {
	if err, ok := x.verdicts[s.id]; ok {
		return err
	}
	i := sort.Search(len(x.admitted), func(i int) bool { return x.admitted[i].id >= s.id })
	var err error
	if i > 0 {
		if e := evolves(x.admitted[i-1].parquet, s.parquet); e != nil {
			err = fmt.Errorf("json schema id %d is incompatible with id %d: %w", s.id, x.admitted[i-1].id, e)
		}
	}
	if err == nil && i < len(x.admitted) {
		if e := evolves(s.parquet, x.admitted[i].parquet); e != nil {
			err = fmt.Errorf("json schema id %d is incompatible with id %d: %w", s.id, x.admitted[i].id, e)
		}
	}
	x.verdicts[s.id] = err
	if err != nil {
		x.log.Warn("incompatible schema: its records are rejected", "schema_id", s.id, "error", err)
		return err
	}
	x.admitted = append(x.admitted, nil)
	copy(x.admitted[i+1:], x.admitted[i:])
	x.admitted[i] = s
	if s.id != 0 {
		x.log.Info("json schema", "schema_id", s.id)
	}
	return nil
}

// evolves reports, naming the first field that breaks it, whether a
// table of schema old can take the rows of schema new: every field of
// old is in new with the same type (a required one may become optional),
// and every field new adds is optional.
func evolves(old, new *schema.Schema) error {
	return evolvesFields(old.Fields(), new.Fields())
}

func evolvesFields(old, new []*schema.Node) error {
	byName := map[string]*schema.Node{}
	for _, n := range new {
		byName[n.Name] = n
	}
	for _, o := range old {
		n := byName[o.Name]
		switch {
		case n == nil:
			return fmt.Errorf("field %s removed", o.PathString())
		case o.IsLeaf() != n.IsLeaf() || o.Logical != n.Logical ||
			o.IsLeaf() && (o.Physical != n.Physical || o.Length != n.Length):
			return fmt.Errorf("field %s changed from %s to %s", o.PathString(), typeText(o), typeText(n))
		case o.Repetition != n.Repetition && !(o.Repetition == schema.Required && n.Repetition == schema.Optional):
			return fmt.Errorf("field %s changed from %s to %s", o.PathString(), o.Repetition, n.Repetition)
		}
		if !o.IsLeaf() {
			if err := evolvesFields(o.Fields, n.Fields); err != nil {
				return err
			}
		}
		delete(byName, o.Name)
	}
	for _, n := range new {
		if _, added := byName[n.Name]; added && n.Repetition == schema.Required {
			return fmt.Errorf("field %s added as required", n.PathString())
		}
	}
	return nil
}

// typeText names a field's type in errors: "INT64", "BYTE_ARRAY (STRING)",
// "group (LIST)".
func typeText(n *schema.Node) string {
	t := "group"
	if n.IsLeaf() {
		t = n.TypeName()
	}
	if l := n.Logical.String(); l != "" {
		t += " (" + l + ")"
	}
	return t
}

// parquet is the files' schema for records of s: its mapping, or with a
// table, the mapping with the table's field ids.
func (x *jsonSchemaFormat) parquet(s *jsSchema) *schema.Schema {
	if f := x.fitted[s]; f != nil {
		return f
	}
	return s.parquet
}

// fits returns fb's builder when fb's file has d's schema.
func (x *jsonSchemaFormat) fits(fb *fileBuffers, d decoded) *rowgroup.Builder {
	if fb.schema == x.parquet(d.js) {
		return fb.b
	}
	x.log.Info("schema changed: finishing the file", "record_schema_id", d.js.id)
	return nil
}

// buffers takes idle buffers of d's schema, or makes them.
func (x *jsonSchemaFormat) buffers(d decoded, spare *[]*fileBuffers) (*fileBuffers, error) {
	sp := *spare
	for i := len(sp) - 1; i >= 0; i-- {
		if sp[i].schema == x.parquet(d.js) {
			fb := sp[i]
			*spare = append(sp[:i], sp[i+1:]...)
			return fb, nil
		}
	}
	if n := len(sp); n >= maxAvroSpares {
		*spare = append(sp[:0], sp[n-maxAvroSpares+1:]...)
	}
	fb, err := newFileBuffers(x.f, x.parquet(d.js))
	if err != nil {
		return nil, err
	}
	fb.keyValues = d.js.footer
	return fb, nil
}

// jsRegistry reports whether the format is json_schema with a registry:
// the files' schema, and a table partition field's column, follow each
// record's schema.
func (f *format) jsRegistry() bool { return f.js != nil && f.js.registry != nil }
