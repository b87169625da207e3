package avro

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
)

// SchemaText is a schema as the registry holds it, of any type (AVRO,
// JSON, PROTOBUF): its text and the references to the other schemas it
// uses, not parsed.
type SchemaText struct {
	// Type is the registry's schemaType: AVRO when the answer names none.
	Type       string
	Text       string
	References []SchemaReference
}

// SchemaReference is a reference of a schema to another: the name the
// schema uses for it ($ref of a JSON Schema, an import of a .proto),
// and the subject version that holds it.
type SchemaReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// textAnswer is the body of the schema lookups, read for SchemaText.
type textAnswer struct {
	SchemaType string            `json:"schemaType"`
	Schema     string            `json:"schema"`
	References []SchemaReference `json:"references"`
}

func (a *textAnswer) text() *SchemaText {
	t := &SchemaText{Type: a.SchemaType, Text: a.Schema, References: a.References}
	if t.Type == "" {
		t.Type = "AVRO"
	}
	return t
}

// SchemaTextByID returns the schema registered under id as it is (GET
// /schemas/ids/{id}), with its references; it is not cached here (the
// caller keeps what it compiles from it).
func (r *Registry) SchemaTextByID(ctx context.Context, id uint32) (*SchemaText, error) {
	var a textAnswer
	if err := r.get(ctx, "/schemas/ids/"+strconv.FormatUint(uint64(id), 10), &a); err != nil {
		return nil, err
	}
	return a.text(), nil
}

// SchemaTextByVersion returns a version of a subject as it is (GET
// /subjects/{subject}/versions/{version}): what a reference names.
func (r *Registry) SchemaTextByVersion(ctx context.Context, subject string, version int) (*SchemaText, error) {
	var a textAnswer
	path := "/subjects/" + url.PathEscape(subject) + "/versions/" + strconv.Itoa(version)
	if err := r.get(ctx, path, &a); err != nil {
		return nil, err
	}
	return a.text(), nil
}

// RegisterText registers a schema of any type with its references under
// subject (POST /subjects/{subject}/versions) and returns its id; a schema
// the subject already has keeps its id.
func (r *Registry) RegisterText(ctx context.Context, subject string, s *SchemaText) (uint32, error) {
	req := struct {
		SchemaType string            `json:"schemaType,omitempty"`
		Schema     string            `json:"schema"`
		References []SchemaReference `json:"references,omitempty"`
	}{Schema: s.Text, References: s.References}
	if s.Type != "AVRO" {
		req.SchemaType = s.Type
	}
	body, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("schema registry: %w", err)
	}
	path := "/subjects/" + url.PathEscape(subject) + "/versions"
	var a struct {
		ID *int64 `json:"id"`
	}
	if err := r.do(ctx, http.MethodPost, path, body, &a); err != nil {
		return 0, err
	}
	if a.ID == nil || *a.ID < 0 || *a.ID > math.MaxUint32 {
		return 0, fmt.Errorf("schema registry: POST %s: an answer without a schema id", path)
	}
	return uint32(*a.ID), nil
}

// Unusable marks err as ErrUnusable (final: asking again gives the same
// answer) without changing its text: for callers that find a schema of
// SchemaTextByID unusable.
func Unusable(err error) error { return unusable{err} }
