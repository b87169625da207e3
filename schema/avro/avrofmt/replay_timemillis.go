package avrofmt

import (
	"fmt"
	"math"
)

// timeMillisBack returns the Avro int of a time-millis that a table's
// file holds in microseconds (an INT64 TIME(MICROS) of
// schema.WidenTimeMillis, whose values the sink multiplied by 1000): us
// divided by 1000. A value that no int of milliseconds gives (one that
// another engine wrote into the table) is an error rather than a wrapped
// int.
func timeMillisBack(us int64, path string) (int64, error) {
	ms := us / 1000
	if ms < math.MinInt32 || ms > math.MaxInt32 {
		return 0, fmt.Errorf("avro field %s: a time of %d microseconds is beyond an int of milliseconds", fieldPath(path), us)
	}
	return ms, nil
}
