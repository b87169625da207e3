package schemaregistry

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
)

// Schema is a schema as the registry holds it, of any schema type: its
// text, not parsed, and the references to the other schemas it uses.
type Schema struct {
	// ID is the schema's id; Subject and Version are set by a lookup by
	// subject version.
	ID      uint32
	Subject string
	Version int
	// Type is the registry's schemaType: AVRO (also when the answer names
	// none), PROTOBUF or JSON.
	Type       string
	Text       string
	References []Reference
}

// Reference is a reference of a schema to another: the name the schema
// uses for it ($ref of a JSON Schema, an import of a .proto), and the
// subject version that holds it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// schemaAnswer is the body of GET /schemas/ids/{id} and of GET
// /subjects/{subject}/versions/{version}.
type schemaAnswer struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         uint32      `json:"id"`
	SchemaType string      `json:"schemaType"`
	Schema     string      `json:"schema"`
	References []Reference `json:"references"`
}

func (a *schemaAnswer) schema() *Schema {
	s := &Schema{ID: a.ID, Subject: a.Subject, Version: a.Version, Type: a.SchemaType, Text: a.Schema, References: a.References}
	if s.Type == "" {
		s.Type = "AVRO"
	}
	return s
}

// IDPath is the path of the lookup of schema id: GET IDPath(id) is how
// errors name the call.
func IDPath(id uint32) string { return "/schemas/ids/" + strconv.FormatUint(uint64(id), 10) }

// VersionPath is the path of the lookup of a subject's version, a number
// or "latest".
func VersionPath(subject, version string) string {
	return "/subjects/" + url.PathEscape(subject) + "/versions/" + url.PathEscape(version)
}

// SchemaByID returns the schema registered under id as it is (GET
// /schemas/ids/{id}), with its references. A 404 wraps ErrNotFound.
func (r *Client) SchemaByID(ctx context.Context, id uint32) (*Schema, error) {
	var a schemaAnswer
	if err := r.get(ctx, IDPath(id), &a); err != nil {
		return nil, err
	}
	a.ID = id
	return a.schema(), nil
}

// SchemaByVersion returns a version of a subject, a number or "latest",
// as it is (GET /subjects/{subject}/versions/{version}): what a reference
// names.
func (r *Client) SchemaByVersion(ctx context.Context, subject, version string) (*Schema, error) {
	var a schemaAnswer
	if err := r.get(ctx, VersionPath(subject, version), &a); err != nil {
		return nil, err
	}
	return a.schema(), nil
}

// Subjects returns the registered subjects (GET /subjects).
func (r *Client) Subjects(ctx context.Context) ([]string, error) {
	var out []string
	return out, r.get(ctx, "/subjects", &out)
}

// Versions returns the versions of a subject (GET /subjects/{subject}/versions).
func (r *Client) Versions(ctx context.Context, subject string) ([]int, error) {
	var out []int
	return out, r.get(ctx, "/subjects/"+url.PathEscape(subject)+"/versions", &out)
}

// Register registers schema, an Avro schema's text (the registry's
// default type), under subject (POST /subjects/{subject}/versions) and
// returns its id; a schema the subject already has keeps its id, so a
// call that failed half-way is retried like the others.
func (r *Client) Register(ctx context.Context, subject, schema string) (uint32, error) {
	return r.RegisterSchema(ctx, subject, &Schema{Type: "AVRO", Text: schema})
}

// RegisterSchema registers s, of any type, with its references under
// subject (POST /subjects/{subject}/versions) and returns its id; a
// schema the subject already has keeps its id. Only s's Type, Text and
// References are sent.
func (r *Client) RegisterSchema(ctx context.Context, subject string, s *Schema) (uint32, error) {
	req := struct {
		SchemaType string      `json:"schemaType,omitempty"`
		Schema     string      `json:"schema"`
		References []Reference `json:"references,omitempty"`
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
// answer) without changing its text: for the formats that find a schema
// of the registry unusable.
func Unusable(err error) error { return unusable{err} }
