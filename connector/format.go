package connector

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
	"github.com/pqsink/pqsink/variant"
)

// format is how record values become rows: the Parquet schema of the files
// and the payload filler of package rowgroup, the same one convert uses.
type format struct {
	kind     string // json | variant | avro
	envelope bool

	// json
	message  *schema.Schema
	jsonOpts []rowgroup.JSONOption

	// variant
	column string
	shape  *variant.Shape // nil: inferred from each partition's first records
	sample int

	// avro: writer schemas by the id in each record's header; the files'
	// schema follows the records (see avro.go)
	registry *avro.Registry
	backward bool // format.schema_compatibility: backward
}

func newFormat(cfg *config.Config) (*format, error) {
	f := &format{kind: cfg.Format.Type, envelope: cfg.Envelope}
	switch f.kind {
	case "json":
		path := cfg.Format.SchemaFile
		if !filepath.IsAbs(path) && cfg.Dir != "" {
			path = filepath.Join(cfg.Dir, path)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("format.schema_file: %w", err)
		}
		if f.message, err = schema.Parse(string(text)); err != nil {
			return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
		}
		if f.envelope && f.message.Lookup(rowgroup.EnvelopeField) != nil {
			return nil, fmt.Errorf("format.schema_file %s: field %s is the Kafka envelope's; rename it or set envelope: false", path, rowgroup.EnvelopeField)
		}
		if cfg.Format.IgnoreUnknownFields {
			f.jsonOpts = append(f.jsonOpts, rowgroup.IgnoreUnknownFields())
		}
	case "variant":
		f.column, f.sample = cfg.Format.Column, cfg.Format.ShredSample
		switch cfg.Format.Shred {
		case "auto":
		case "none":
			f.shape = &variant.Shape{}
		default:
			path := cfg.Format.Shred
			if !filepath.IsAbs(path) && cfg.Dir != "" {
				path = filepath.Join(cfg.Dir, path)
			}
			text, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("format.shred: want auto, none or a shape file: %w", err)
			}
			shape, err := rowgroup.ParseVariantShape(string(text))
			if err != nil {
				return nil, fmt.Errorf("format.shred %s: %w", path, err)
			}
			f.shape = &shape
		}
	case "avro":
		if cfg.Path != "" && strings.Contains(cfg.Path, "{field:") || cfg.TimeField != "" {
			return nil, fmt.Errorf("format.type avro: {field:...} in path and time_field are not supported yet")
		}
		reg, err := schemaregistry.New(cfg.Format.Registry)
		if err != nil {
			return nil, err
		}
		f.registry, f.backward = reg, cfg.Format.SchemaCompatibility == "backward"
	default:
		return nil, fmt.Errorf("format.type: %q is not one of json, variant, avro", f.kind)
	}
	return f, nil
}

// fixedSchema is the files' schema when it does not depend on the data:
// nil for a variant format whose shredding is inferred, and for avro.
func (f *format) fixedSchema() (*schema.Schema, error) {
	switch {
	case f.kind == "json":
		return f.withEnvelope(f.message.Name(), f.message.Fields()...)
	case f.shape != nil:
		return f.variantSchema(*f.shape)
	}
	return nil, nil
}

// variantSchema is the schema of a variant format shredded by shape.
func (f *format) variantSchema(shape variant.Shape) (*schema.Schema, error) {
	node, err := rowgroup.VariantNode(f.column, schema.Required, shape)
	if err != nil {
		return nil, err
	}
	return f.withEnvelope("schema", node)
}

func (f *format) withEnvelope(name string, fields ...*schema.Node) (*schema.Schema, error) {
	if f.envelope {
		fields = append(fields[:len(fields):len(fields)], rowgroup.EnvelopeNode())
	}
	s, err := schema.New(name, fields...)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return s, nil
}

// newPayload returns the filler of g's payload columns.
func (f *format) newPayload(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
	if f.kind == "json" {
		return rowgroup.NewJSONShredder(g, f.jsonOpts...)
	}
	return rowgroup.NewVariantShredder(g)
}
