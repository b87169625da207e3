// Package jsonschemafmt is the JSON Schema format of the sink
// (format.type: json_schema). With a registry, each record value is in
// Confluent's JSON Schema wire format: magic byte 0, the 4-byte id of its
// schema in the registry, then the JSON text; with a schema_file, each
// value is plain JSON of that one schema. A value is validated against its
// schema (reason schema when it fails), then shredded by the JSON shredder
// into the columns of the schema's Parquet mapping (package
// schema/jsonschema). Each file has one schema: a record of another schema
// id finishes its path's file (rotation reason schema). A new schema id
// must evolve the partition's schemas compatibly (fields only added, and
// optional; a required field may become optional); records of one that
// does not are rejected with reason schema, naming the field, and follow
// the errors policy (fail stops the partition).
package jsonschemafmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"sync"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/internal/schemaregistry/registryconfig"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/jsonschema"
	"github.com/pqsink/pqsink/table"
)

// Name is the format's format.type.
const Name = "json_schema"

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

// jsFormat is the format opened for a sink, shared by its partitions:
// the schema_file's schema, or the registry's schemas by id, compiled once
// and kept up to format.registry.cache_size of them.
type jsFormat struct {
	envelope bool
	timeUnit schema.TimeUnit
	opts     []rowgroup.JSONOption
	registry *schemaregistry.Client
	file     *jsSchema
	// debezium: the registry's schemas are Debezium envelopes, and the
	// files' those of their rows, after's, with the change column
	// (keyed.go).
	debezium bool

	mu    sync.Mutex
	byID  map[uint32]*jsSchema
	order []uint32 // ids in byID, oldest first
	max   int
}

// Open is the format's format.Driver.
func Open(cfg *config.Config, _ format.Env) (format.Format, error) {
	k := &jsFormat{envelope: cfg.Envelope, timeUnit: format.TimeUnit(cfg.Table != nil), byID: map[uint32]*jsSchema{}, max: 1000}
	if cfg.Format.LossyNumbers {
		k.opts = append(k.opts, rowgroup.LossyNumbers())
	}
	if cfg.Format.Registry != nil && cfg.Format.Registry.URL != "" {
		reg, err := registryconfig.New(cfg.Format.Registry)
		if err != nil {
			return nil, err
		}
		k.registry = reg
		if cfg.Format.Registry.CacheSize > 0 {
			k.max = cfg.Format.Registry.CacheSize
		}
		return k, nil
	}
	path := format.Resolve(cfg.Dir, cfg.Format.SchemaFile)
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("format.schema_file: %w", err)
	}
	js, err := jsonschema.Compile(text, jsonschema.Base(path), jsonschema.LocalFiles())
	if err != nil {
		return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
	}
	s := k.jsSchema(0, js, js.Loaded(), false)
	if s.err != nil {
		return nil, fmt.Errorf("format.schema_file %s: %w", path, s.err)
	}
	k.file = s
	return k, nil
}

// FixedSchema is the schema_file's mapping, without a registry.
func (k *jsFormat) FixedSchema() (*schema.Schema, error) {
	if k.file != nil {
		return k.file.parquet, nil
	}
	return nil, nil
}

func (k *jsFormat) TableSchema() (*schema.Schema, error) { return nil, nil }
func (k *jsFormat) SchemaPerRecord() bool                { return k.registry != nil }
func (k *jsFormat) Binary() bool                         { return false }
func (k *jsFormat) Fixed() *format.Schema                { return nil }
func (k *jsFormat) TextOptions() []rowgroup.JSONOption   { return k.opts }

// NewDecoder returns a partition's side of the format. p.Schema is the
// files' schema the partition writes, when it is known at startup (a
// schema_file): the sink's, or the table's, which carries the table's
// field ids instead of the mapping's.
func (k *jsFormat) NewDecoder(p format.Partition) format.Decoder {
	x := &decoder{k: k, p: p, log: p.Log, verdicts: map[uint32]error{}, file: k.file, fitted: map[*jsSchema]*format.Schema{}}
	if x.file != nil && p.Schema != nil && p.Schema != x.file.parquet {
		c := *x.file
		c.parquet = p.Schema
		x.file = &c
	}
	if x.file != nil {
		x.fileShared = &format.Schema{Name: "format.schema_file", Parquet: x.file.parquet, Own: x.file}
	}
	return x
}

// jsSchema makes the sink's record of a compiled schema: its Parquet
// schema with the envelope, and the footer entries of its files.
func (f *jsFormat) jsSchema(id uint32, js *jsonschema.Schema, refs []jsonschema.FileReference, wire bool) *jsSchema {
	s := &jsSchema{id: id, js: js, footer: [][2]string{{jsonschema.MetadataKey, string(js.Text())}}}
	if len(refs) > 0 {
		b, _ := json.Marshal(refs)
		s.footer = append(s.footer, [2]string{jsonschema.ReferencesKey, string(b)})
	}
	if wire {
		s.footer = append(s.footer, [2]string{jsonschema.IDKey, strconv.FormatUint(uint64(id), 10)})
	}
	var extra []*schema.Node
	rows := js
	if f.debezium {
		row, err := js.Property("after")
		if err != nil {
			s.err = fmt.Errorf("not a Debezium envelope: %w", err)
			return s
		}
		for _, n := range row.Fields() {
			if n.Name == format.CDCField {
				s.err = fmt.Errorf("debezium: the rows have a property %s, the change events' column", format.CDCField)
				return s
			}
		}
		rows = row
		extra = append(extra, format.CDCNode(f.timeUnit))
	}
	if f.envelope {
		if !rows.Wrapped() {
			for _, n := range rows.Fields() {
				if n.Name == rowgroup.EnvelopeField {
					s.err = fmt.Errorf("json schema: property %s is the Kafka envelope's; rename it or set envelope: false", rowgroup.EnvelopeField)
					return s
				}
			}
		}
		extra = append(extra, rowgroup.EnvelopeNodeIn(f.timeUnit))
	}
	s.parquet, s.err = rows.Parquet(extra...)
	return s
}

// lookup returns the schema of id: from the cache, or fetched from the
// registry with its references and compiled. A schema the registry gives
// but that cannot be used (not JSON, not valid, not mappable) comes back
// with its err set; an error is the registry's (not found, unreachable).
func (k *jsFormat) lookup(ctx context.Context, id uint32) (*jsSchema, error) {
	k.mu.Lock()
	s := k.byID[id]
	k.mu.Unlock()
	if s != nil {
		return s, nil
	}
	t, err := k.registry.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	s, err = k.compile(ctx, id, t)
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
func (k *jsFormat) compile(ctx context.Context, id uint32, t *schemaregistry.Schema) (*jsSchema, error) {
	if t.Type != "JSON" {
		return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: the registry holds a %s schema under it, not JSON", id, t.Type)}, nil
	}
	opts := []jsonschema.Option{}
	var refs []jsonschema.FileReference
	seen := map[string]bool{}
	queue := append([]schemaregistry.Reference(nil), t.References...)
	for len(queue) > 0 {
		ref := queue[0]
		queue = queue[1:]
		if seen[ref.Name] {
			continue
		}
		if seen[ref.Name] = true; len(seen) > maxSchemaReferences {
			return &jsSchema{id: id, err: fmt.Errorf("json schema id %d: more than %d references", id, maxSchemaReferences)}, nil
		}
		rt, err := k.registry.SchemaByVersion(ctx, ref.Subject, strconv.Itoa(ref.Version))
		if errors.Is(err, schemaregistry.ErrNotFound) {
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
	s := k.jsSchema(id, js, refs, true)
	if s.err != nil {
		s.err = fmt.Errorf("json schema id %d: %w", id, s.err)
	}
	return s, nil
}

// decoder is a partition's side of the JSON Schema format: the schemas
// its records were written with, and whether each evolves the others
// compatibly.
type decoder struct {
	k          *jsFormat
	p          format.Partition
	log        *slog.Logger
	file       *jsSchema      // the schema_file's, with the partition's Parquet schema
	fileShared *format.Schema // file, as the sink sees it

	verdicts map[uint32]error // nil: the schema's records are admitted
	admitted []*jsSchema      // ascending ids
	wrapped  []byte

	// With a registry: each schema as the sink sees it, fitted to the
	// table (p.Fit) and compiled (p.Compile).
	fitted map[*jsSchema]*format.Schema
}

func (x *decoder) Sampling() bool              { return false }
func (x *decoder) Sample([]byte) bool          { return true }
func (x *decoder) Learn(context.Context) error { return nil }
func (x *decoder) Reason(err error) string     { return format.Classify(err) }

// Decode finds the value's schema, checks that it evolves the partition's
// others, and validates the value against it. As for Avro, a value not in
// the wire format or of an id the registry does not know is a rejection
// (decode), and a registry that cannot be reached an error (ErrRestart
// after a pause): the record is read again, never rejected for it.
func (x *decoder) Decode(ctx context.Context, value []byte, offset int64) (format.Decoded, *format.Rejection, error) {
	k := x.k
	s, body, shared := x.file, value, x.fileShared
	if k.registry != nil {
		id, rest, err := schemaregistry.SplitWire(value)
		if err != nil {
			return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("json schema wire format: %w", err)}, nil
		}
		body = rest
		s, err = k.lookup(ctx, id)
		switch {
		case err == nil:
		case errors.Is(err, schemaregistry.ErrNotFound):
			return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: fmt.Errorf("json schema id %d: %w", id, err)}, nil
		case ctx.Err() != nil:
			return format.Decoded{}, nil, ctx.Err()
		default:
			return format.Decoded{}, nil, format.RegistryUnreachable(ctx, x.log, err, "schema_id", id, "offset", offset)
		}
	}
	if s.err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: s.err}, nil
	}
	if err := x.admit(s); err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: err}, nil
	}
	if k.registry != nil {
		if shared = x.fitted[s]; shared == nil {
			shared = &format.Schema{Name: fmt.Sprintf("json schema id %d", s.id), Parquet: s.parquet, Own: s}
			if x.p.Fit != nil {
				fitted, err := x.p.Fit(ctx, s.parquet)
				switch {
				case errors.Is(err, table.ErrIncompatible):
					err = fmt.Errorf("json schema id %d: %w", s.id, err)
					x.verdicts[s.id] = err
					return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: err}, nil
				case err != nil:
					return format.Decoded{}, nil, format.CatalogUnreachable(ctx, x.log, err, "schema_id", s.id, "offset", offset)
				}
				shared.Parquet = fitted
			}
			if x.p.Compile != nil {
				schemaErr, err := x.p.Compile(ctx, shared)
				switch {
				case err != nil:
					return format.Decoded{}, nil, format.CatalogUnreachable(ctx, x.log, err, "schema_id", s.id, "offset", offset)
				case schemaErr != nil:
					schemaErr = fmt.Errorf("json schema id %d: %w", s.id, schemaErr)
					x.verdicts[s.id] = schemaErr
					return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: schemaErr}, nil
				}
			}
			x.fitted[s] = shared
		}
	}
	if err := s.js.Validate(body); errors.Is(err, jsonschema.ErrNotJSON) {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectDecode, Err: err}, nil
	} else if err != nil {
		return format.Decoded{}, &format.Rejection{Reason: format.RejectSchema, Err: err}, nil
	}
	text := body
	if s.js.Wrapped() && !k.debezium {
		x.wrapped = jsonschema.AppendWrapped(x.wrapped[:0], body)
		body = x.wrapped
	}
	return format.Decoded{Payload: body, Schema: shared, Text: text}, nil, nil
}

// admit decides, once per schema id, whether records of s can be
// written beside the partition's admitted schemas: s must evolve the
// admitted schema of the next lower id, and the one of the next higher id
// must evolve s.
func (x *decoder) admit(s *jsSchema) error {
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

// Fits returns fb's builder when fb's file has d's schema.
func (x *decoder) Fits(fb *format.Buffers, d format.Decoded) *rowgroup.Builder {
	if fb.Schema == d.Schema.Parquet {
		return fb.Builder
	}
	x.log.Info("schema changed: finishing the file", "record_schema_id", d.Schema.Own.(*jsSchema).id)
	return nil
}

// BuffersKey is the files' schema of d.
func (x *decoder) BuffersKey(d format.Decoded) any { return d.Schema.Parquet }

// NewBuffers makes buffers of d's schema.
func (x *decoder) NewBuffers(d format.Decoded) (*format.Buffers, error) {
	fb, err := format.NewBuffers(d.Schema.Parquet, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewJSONShredder(g, x.k.opts...)
	})
	if err != nil {
		return nil, err
	}
	fb.KeyValues = d.Schema.Own.(*jsSchema).footer
	return fb, nil
}
