package source

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/internal/jsontext"
	"github.com/pqsink/pqsink/internal/schemaregistry"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/jsonschema"
)

// jsonSchemaValue renders the records of files whose values were JSON of
// a JSON Schema (the footer's json.schema): as compact JSON in the form
// the schema validates (numbers as numbers, formats as their strings),
// in Confluent's wire format when they came in it (json.schema.id), with
// the schema registered under the target's subject.
type jsonSchemaValue struct {
	js   *jsonschema.Schema
	wire bool
	id   uint32 // the target registry's id of the schema, when wire
}

// textRegistrar registers schemas of any type: internal/schemaregistry's Client.
type textRegistrar interface {
	RegisterSchema(ctx context.Context, subject string, s *schemaregistry.Schema) (uint32, error)
}

// jsonSchemaValue returns the renderer of the files whose footer is kv,
// compiling the schema (with the references the footer keeps) and, for
// the wire format, registering it, once per replay.
func (r *Replayer) jsonSchemaValue(ctx context.Context, kv []meta.KeyValue) (*jsonSchemaValue, error) {
	var text, refs, id string
	for _, e := range kv {
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
	r.avroMu.Lock() // workers share the schemas; one registers each
	defer r.avroMu.Unlock()
	cacheKey := text + "\x00" + refs + "\x00" + id
	if v, ok := r.jsSchemas[cacheKey]; ok {
		return v, nil
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
	v := &jsonSchemaValue{js: js, wire: id != ""}
	if v.wire {
		reg, ok := r.registry.(textRegistrar)
		if !ok || r.registry == nil {
			return nil, fmt.Errorf("the file came from a Schema Registry's JSON Schema wire format (schema id %s): set format.registry.url in the config to register its schema", id)
		}
		st := &schemaregistry.Schema{Type: "JSON", Text: text}
		for _, ref := range fileRefs {
			if ref.Subject == "" {
				return nil, fmt.Errorf("footer %s: reference %s names no subject to register the schema with", jsonschema.ReferencesKey, ref.Name)
			}
			st.References = append(st.References, schemaregistry.Reference{Name: ref.Name, Subject: ref.Subject, Version: ref.Version})
		}
		if v.id, err = reg.RegisterSchema(ctx, r.opts.Subject, st); err != nil {
			return nil, fmt.Errorf("registering the JSON Schema under subject %s: %w", r.opts.Subject, err)
		}
		r.opts.Log.Info("json schema registered", "subject", r.opts.Subject, "id", v.id)
	}
	if r.jsSchemas == nil {
		r.jsSchemas = map[string]*jsonSchemaValue{}
	}
	r.jsSchemas[cacheKey] = v
	return v, nil
}

// append appends the record rec (a top-level row) of the payload fields.
func (v *jsonSchemaValue) append(dst []byte, rec reader.Value, payload []*schema.Node) ([]byte, error) {
	if v.wire {
		dst = schemaregistry.AppendWire(dst, v.id)
	}
	if v.js.Wrapped() {
		f, _ := rec.Field(jsonschema.ValueField)
		return v.value(dst, f)
	}
	return v.members(dst, rec, payload)
}

// members appends a group as an object of its fields in schema order; a
// null field is left out, unless the schema requires the property and
// admits null (jsonschema.Schema.KeepsNull).
func (v *jsonSchemaValue) members(dst []byte, g reader.Value, fields []*schema.Node) ([]byte, error) {
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
func (v *jsonSchemaValue) value(dst []byte, x reader.Value) ([]byte, error) {
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
