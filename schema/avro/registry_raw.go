package avro

import (
	"context"
	"net/url"
	"strconv"
)

// RawSchema is a schema as the registry holds it, of any schema type:
// its text, uninterpreted, and the references it imports. The sink reads
// Protobuf schemas this way (schema/protobuf compiles them).
type RawSchema struct {
	ID      uint32
	Subject string // for a lookup by subject
	Version int    // for a lookup by subject
	// Type is the registry's schemaType: AVRO (or empty), PROTOBUF, JSON.
	Type       string
	Schema     string
	References []Reference
}

// Reference is a schema that another imports: by the name the importer
// uses (a Protobuf import path), and where the registry holds it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

type rawAnswer struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         uint32      `json:"id"`
	SchemaType string      `json:"schemaType"`
	Schema     string      `json:"schema"`
	References []Reference `json:"references"`
}

func (a rawAnswer) raw() RawSchema {
	return RawSchema{ID: a.ID, Subject: a.Subject, Version: a.Version, Type: a.SchemaType, Schema: a.Schema, References: a.References}
}

// RawByID returns the schema registered under id (GET /schemas/ids/{id}),
// of any type, with the same retries and errors as SchemaByID (a 404
// wraps ErrNotFound). It is not cached: its callers cache what they make
// of it.
func (r *Registry) RawByID(ctx context.Context, id uint32) (RawSchema, error) {
	var a rawAnswer
	if err := r.get(ctx, "/schemas/ids/"+strconv.FormatUint(uint64(id), 10), &a); err != nil {
		return RawSchema{}, err
	}
	a.ID = id
	return a.raw(), nil
}

// RawBySubject returns a version of a subject, of any type (GET
// /subjects/{subject}/versions/{version}): how references are resolved.
// Not cached.
func (r *Registry) RawBySubject(ctx context.Context, subject string, version int) (RawSchema, error) {
	v := "latest"
	if version > 0 {
		v = strconv.Itoa(version)
	}
	var a rawAnswer
	if err := r.get(ctx, "/subjects/"+url.PathEscape(subject)+"/versions/"+v, &a); err != nil {
		return RawSchema{}, err
	}
	return a.raw(), nil
}
