package convert

import (
	"context"
	"errors"
	"io"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema/jsonschema"
	"github.com/pqsink/pqsink/writer"
)

// RunJSONSchema converts JSON Lines whose values a JSON Schema describes
// into one Parquet file of s's Parquet schema (jsonschema.Schema.Parquet),
// with s's text under the jsonschema.MetadataKey key-value metadata. Each
// line is validated against s first: a line that fails it is bad
// (the error wraps jsonschema.ErrInvalid) and follows opts.Errors as in
// Run; a valid one is shredded by the JSON shredder into s's columns.
// opts.Schema must be nil; opts.JSON applies.
func RunJSONSchema(ctx context.Context, in io.Reader, out io.Writer, s *jsonschema.Schema, opts Options) (Stats, error) {
	if opts.Schema != nil {
		return Stats{}, errors.New("convert: the JSON Schema decides the Parquet schema")
	}
	ps, err := s.Parquet()
	if err != nil {
		return Stats{}, err
	}
	r := newRun(&opts)
	wopts := append([]writer.Option{writer.KeyValue(jsonschema.MetadataKey, string(s.Text()))}, opts.Writer...)
	jsonOpts := append([]rowgroup.JSONOption{rowgroup.EnvelopeFromJSON()}, opts.JSON...)
	err = r.open(out, ps, wopts, func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewJSONShredder(g, jsonOpts...)
	})
	if err != nil {
		return r.st, err
	}
	src := &jsonSchemaSource{lineSource: newLineSource(in, opts.MaxRecordBytes, &r.st), s: s}
	if err := r.convert(ctx, src); err != nil {
		return r.st, err
	}
	return r.finish()
}

// jsonSchemaSource reads JSON Lines and validates each against a JSON
// Schema; for a schema whose root is one field, each line becomes that
// field's value.
type jsonSchemaSource struct {
	*lineSource
	s       *jsonschema.Schema
	wrapped []byte
}

func (j *jsonSchemaSource) next() ([]byte, error) {
	line, err := j.lineSource.next()
	if err != nil || line == nil {
		return nil, err
	}
	if err := j.s.Validate(line); err != nil {
		return nil, j.bad(err)
	}
	if j.s.Wrapped() {
		j.wrapped = jsonschema.AppendWrapped(j.wrapped[:0], line)
		return j.wrapped, nil
	}
	return line, nil
}
