package jsonschemafmt

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

// Replay is the format's replay side (format.ReplayDriver): the records
// of a file whose footer holds a JSON Schema (jsonschema.MetadataKey, and
// no Avro schema) are rendered as compact JSON in the form the schema
// validates (numbers as numbers, formats as their strings), in
// Confluent's wire format when they came in it (jsonschema.IDKey), with
// the schema registered under the replay's subject in the target's
// registry.
func Replay(_ *config.Config, env format.ReplayEnv) format.Replayer {
	return &replayer{env: env, schemas: map[string]*compiled{}}
}

// replayer is the format's replay side for one replay.
type replayer struct {
	env format.ReplayEnv
	// mu guards schemas: workers share them, and one registers each.
	mu      sync.Mutex
	schemas map[string]*compiled
}

func (r *replayer) Label() string { return "JSON Schema" }

func (r *replayer) Claims(kv []meta.KeyValue) string {
	js := false
	for _, e := range kv {
		if e.Value == nil {
			continue
		}
		switch e.Key {
		case archive.AvroSchemaKey:
			if *e.Value != "" {
				return "" // Avro's records, whose schema the sink kept beside
			}
		case jsonschema.MetadataKey:
			js = true
		}
	}
	if !js {
		return ""
	}
	return jsonschema.MetadataKey
}

// compiled is a footer's JSON Schema, compiled, and its id in the target
// registry.
type compiled struct {
	js   *jsonschema.Schema
	wire bool
	id   uint32 // the target registry's id of the schema, when wire
}

// encoder renders the records of one file.
type encoder struct {
	compiled *compiled
	payload  []*schema.Node
}

// textRegistrar registers schemas of any type: schema/avro's Registry.
type textRegistrar interface {
	RegisterSchema(ctx context.Context, subject string, s *schemaregistry.Schema) (uint32, error)
}

// Encoder returns the renderer of a file whose footer is f.KV, compiling
// the schema (with the references the footer keeps) and, for the wire
// format, registering it, once per replay.
func (r *replayer) Encoder(ctx context.Context, f format.ReplayFile) (format.RecordEncoder, error) {
	var text, refs, id string
	for _, e := range f.KV {
		if e.Value == nil {
			continue
		}
		switch e.Key {
		case jsonschema.MetadataKey:
			text = *e.Value
		case jsonschema.ReferencesKey:
			refs = *e.Value
		case jsonschema.IDKey:
			id = *e.Value
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cacheKey := text + "\x00" + refs + "\x00" + id
	if v, ok := r.schemas[cacheKey]; ok {
		return &encoder{compiled: v, payload: f.Payload}, nil
	}
	var fileRefs []jsonschema.FileReference
	if refs != "" {
		if err := json.Unmarshal([]byte(refs), &fileRefs); err != nil {
			return nil, fmt.Errorf("footer %s: %w", jsonschema.ReferencesKey, err)
		}
	}
	var opts []jsonschema.Option
	for _, ref := range fileRefs {
		opts = append(opts, jsonschema.Reference(ref.Name, []byte(ref.Schema)))
	}
	js, err := jsonschema.Compile([]byte(text), opts...)
	if err != nil {
		return nil, fmt.Errorf("footer %s: %w", jsonschema.MetadataKey, err)
	}
	v := &compiled{js: js, wire: id != ""}
	if v.wire {
		reg, ok := r.env.Registry.(textRegistrar)
		if !ok || r.env.Registry == nil {
			return nil, fmt.Errorf("the file came from a Schema Registry's JSON Schema wire format (schema id %s): set format.registry.url in the config to register its schema", id)
		}
		st := &schemaregistry.Schema{Type: "JSON", Text: text}
		for _, ref := range fileRefs {
			if ref.Subject == "" {
				return nil, fmt.Errorf("footer %s: reference %s names no subject to register the schema with", jsonschema.ReferencesKey, ref.Name)
			}
			st.References = append(st.References, schemaregistry.Reference{Name: ref.Name, Subject: ref.Subject, Version: ref.Version})
		}
		if v.id, err = reg.RegisterSchema(ctx, r.env.Subject, st); err != nil {
			return nil, fmt.Errorf("registering the JSON Schema under subject %s: %w", r.env.Subject, err)
		}
		r.env.Log.Info("json schema registered", "subject", r.env.Subject, "id", v.id)
	}
	r.schemas[cacheKey] = v
	return &encoder{compiled: v, payload: f.Payload}, nil
}

// AppendRecord appends the record rec (a top-level row) of the file's
// payload fields.
func (e *encoder) AppendRecord(dst []byte, rec reader.Value) ([]byte, error) {
	v := e.compiled
	if v.wire {
		dst = schemaregistry.AppendWire(dst, v.id)
	}
	if v.js.Wrapped() {
		f, _ := rec.Field(jsonschema.ValueField)
		return v.value(dst, f)
	}
	return v.members(dst, rec, e.payload)
}

// members appends a group as an object of its fields in schema order; a
// null field is left out, unless the schema requires the property and
// admits null (jsonschema.Schema.KeepsNull).
func (v *compiled) members(dst []byte, g reader.Value, fields []*schema.Node) ([]byte, error) {
	dst = append(dst, '{')
	comma := false
	var err error
	for _, n := range fields {
		f, _ := g.Field(n.Name)
		if f.IsNull() && !v.js.KeepsNull(n.PathString()) {
			continue
		}
		if comma {
			dst = append(dst, ',')
		}
		comma = true
		dst = append(jsontext.AppendString(dst, n.Name), ':')
		if dst, err = v.value(dst, f); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// value appends one value as the JSON its schema validates.
func (v *compiled) value(dst []byte, x reader.Value) ([]byte, error) {
	n, l := x.Node(), x.Logical()
	switch x.Kind() {
	case reader.KindNull:
		return append(dst, "null"...), nil
	case reader.KindBool:
		return strconv.AppendBool(dst, x.Bool()), nil
	case reader.KindGroup:
		return v.members(dst, x, n.Fields)
	case reader.KindList:
		dst = append(dst, '[')
		var err error
		for i, e := range x.List() {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = v.value(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case reader.KindVariant:
		return x.AppendJSON(dst), nil
	case reader.KindDouble:
		return jsontext.AppendFloat(dst, x.Double(), 64), nil
	}
	switch l.Kind {
	case schema.Decimal:
		u, scale, ok := x.Decimal()
		if !ok {
			return dst, fmt.Errorf("field %s: a DECIMAL beyond its precision", n.PathString())
		}
		return appendDecimalNumber(dst, u, scale), nil
	case schema.Timestamp:
		t, _ := x.Time()
		return appendQuoted(dst, t.Format(time.RFC3339Nano)), nil
	case schema.Date:
		t, _ := x.Time()
		return appendQuoted(dst, t.Format(time.DateOnly)), nil
	case schema.Time:
		d, _ := x.TimeOfDay()
		t := time.Unix(0, int64(d)).UTC()
		return appendQuoted(dst, t.Format("15:04:05.999999999Z07:00")), nil
	case schema.UUID:
		u, _ := x.UUID()
		dst = append(dst, '"')
		for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
			if i > 0 {
				dst = append(dst, '-')
			}
			dst = hex.AppendEncode(dst, u[part[0]:part[1]])
		}
		return append(dst, '"'), nil
	case schema.String, schema.Enum:
		return jsontext.AppendStringBytes(dst, x.Bytes()), nil
	}
	if x.Kind() == reader.KindInt64 {
		return strconv.AppendInt(dst, x.Int64(), 10), nil
	}
	return dst, fmt.Errorf("field %s: a %s value that no JSON Schema mapping writes", n.PathString(), x.Kind())
}

// appendDecimalNumber appends unscaled × 10^-scale as a JSON number with
// no trailing zeros after the point ("12.3", "12", "-0.05").
func appendDecimalNumber(dst []byte, unscaled *big.Int, scale int32) []byte {
	s := unscaled.String()
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for int32(len(s)) <= scale {
		s = "0" + s
	}
	whole, frac := s[:int32(len(s))-scale], strings.TrimRight(s[int32(len(s))-scale:], "0")
	if neg && (strings.Trim(whole, "0") != "" || frac != "") {
		dst = append(dst, '-')
	}
	dst = append(dst, whole...)
	if frac != "" {
		dst = append(append(dst, '.'), frac...)
	}
	return dst
}

func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
