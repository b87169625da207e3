package connector

import "github.com/pqsink/pqsink/format"

// Reasons a record is rejected, as counted and as the pqsink.reason
// header of its dead letter says (format.RejectDecode...).
const (
	rejectDecode   = format.RejectDecode
	rejectSchema   = format.RejectSchema
	rejectTooLarge = format.RejectTooLarge
	rejectPath     = format.RejectPath
	rejectEnvelope = format.RejectEnvelope
	rejectKey      = format.RejectKey    // an upsert table's row key cannot be read
	rejectChange   = format.RejectChange // a change event that cannot be applied
)

// rejection is a record that cannot be written, and why.
type rejection = format.Rejection

// classify names the reason of a payload error.
func classify(err error) string { return format.Classify(err) }
