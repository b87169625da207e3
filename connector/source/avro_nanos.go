package source

import (
	"math"

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

// nanosBack returns us·mul, the nanoseconds of a floored microsecond
// value; the few microseconds below int64's nanoseconds (a value within
// 808 nanoseconds of its least, floored) give its least, the value cut
// to a microsecond being all that is known of it.
func nanosBack(us, mul int64) int64 {
	if mul == 1 {
		return us
	}
	if us < math.MinInt64/mul {
		return math.MinInt64
	}
	if us > math.MaxInt64/mul {
		return math.MaxInt64
	}
	return us * mul
}
