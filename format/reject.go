package format

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/rowgroup"
)

// Reasons a record is rejected, as counted and as the pqsink.reason
// header of its dead letter says.
const (
	RejectDecode   = "decode"    // not valid JSON (or Avro, ...)
	RejectSchema   = "schema"    // valid, but does not fit the files' schema
	RejectTooLarge = "too_large" // larger than max_record_bytes
	RejectPath     = "path"      // its path cannot be rendered (a path field is an object, a bad time_field)
	RejectEnvelope = "envelope"  // its envelope cannot be stored: a header key that is not UTF-8
	RejectKey      = "key"       // an upsert table's row key cannot be read from it (a key field missing, null, of another type; a Kafka key that does not decode)
	RejectChange   = "change"    // a change event that cannot be applied (an unknown op, a truncate, no after)
)

// Rejection is a record that cannot be written, and why.
type Rejection struct {
	Reason string
	Err    error
}

func (r *Rejection) Error() string { return r.Err.Error() }
func (r *Rejection) Unwrap() error { return r.Err }

// Classify names the reason of a payload error of the JSON and Variant
// shredders.
func Classify(err error) string {
	var syntax *jsonscan.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return RejectDecode
	case errors.Is(err, rowgroup.ErrEnvelopeText):
		return RejectEnvelope
	}
	return RejectSchema
}

// DecodeReason is Reason for a binary format: decode for a payload its
// builder refused (bytes its schema does not read), unless the envelope
// did.
func DecodeReason(err error) string {
	if r := Classify(err); r == RejectEnvelope {
		return r
	}
	return RejectDecode
}

// ErrRestart asks the partition to drop what it holds and consume again
// from its committed offset.
var ErrRestart = errors.New("restart from the committed offset")

// Pauses before a partition consumes again from its committed offset after
// what a format depends on could not be reached.
const (
	// RegistryPause follows a Schema Registry whose own retries failed.
	RegistryPause = 5 * time.Second
	// CatalogPause follows a table catalog that could not fit a schema.
	CatalogPause = 5 * time.Second
)

// Wait waits d, and reports false when ctx ends first.
func Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RegistryUnreachable logs err, a failure to reach a Schema Registry,
// waits RegistryPause and returns ErrRestart: the record is read again,
// never rejected for it. It returns ctx's error when ctx is done first.
// attrs say which schema and record (schema_id, offset).
func RegistryUnreachable(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	log.Error("schema registry unreachable; consuming again from the committed offset after a pause",
		append(attrs, "pause", RegistryPause, "error", err)...)
	if !Wait(ctx, RegistryPause) {
		return ctx.Err()
	}
	return ErrRestart
}

// CatalogUnreachable logs err, a failure to reach the table's catalog for
// a schema, waits CatalogPause and returns ErrRestart: the partition
// consumes again from its committed offset, and the schema is fitted again
// when its record is read again. It returns ctx's error when ctx is done
// first. attrs say which schema and record (schema_id, offset).
func CatalogUnreachable(ctx context.Context, log *slog.Logger, err error, attrs ...any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	log.Error("table catalog unreachable; consuming again from the committed offset after a pause",
		append(attrs, "pause", CatalogPause, "error", err)...)
	if !Wait(ctx, CatalogPause) {
		return ctx.Err()
	}
	return ErrRestart
}
