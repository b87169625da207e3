package avrofmt

import (
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// nanosMultiplier is what a column's values are multiplied by to give
// the Avro long of type t: 1000 for a nanosecond timestamp that a table's
// file holds in microseconds (schema.NarrowNanos, with
// table.timestamp_precision micros), whose digits below the microsecond
// the sink cut, and 1 otherwise.
func nanosMultiplier(t *avro.Type, n *schema.Node) int64 {
	if avro.NanosInMicros(t, n) {
		return 1000
	}
	return 1
}
