package connector

import (
	"errors"

	"github.com/pqsink/pqsink/internal/jsonscan"
	"github.com/pqsink/pqsink/rowgroup"
)

// Reasons a record is rejected, as counted and as the pqsink.reason
// header of its dead letter says.
const (
	rejectDecode   = "decode"    // not valid JSON (or Avro, ...)
	rejectSchema   = "schema"    // valid, but does not fit the files' schema
	rejectTooLarge = "too_large" // larger than max_record_bytes
	rejectPath     = "path"      // its path cannot be rendered (a path field is an object, a bad time_field)
	rejectEnvelope = "envelope"  // its envelope cannot be stored: a header key that is not UTF-8
)

// rejection is a record that cannot be written, and why.
type rejection struct {
	reason string
	err    error
}

func (r *rejection) Error() string { return r.err.Error() }
func (r *rejection) Unwrap() error { return r.err }

// classify names the reason of a payload error.
func classify(err error) string {
	var syntax *jsonscan.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return rejectDecode
	case errors.Is(err, rowgroup.ErrEnvelopeText):
		return rejectEnvelope
	}
	return rejectSchema
}
