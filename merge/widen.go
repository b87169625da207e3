package merge

import (
	"fmt"
	"math"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// WidenMillis makes every INT64 TIMESTAMP(MILLIS) column of the output
// TIMESTAMP(MICROS) (schema.WidenMillis), the unit of Iceberg's
// timestamps in Parquet: the inputs may then hold such a column in
// either unit, the others alike, and the merge writes the millisecond
// inputs' values times 1000 as it copies them (a table's files that an
// older pqsink wrote in milliseconds, merged with its newer files). A
// value whose microseconds do not fit 64 bits fails the merge.
// Defaults to off: the inputs' units must agree.
func WidenMillis() Option {
	return func(o *options) error {
		o.widen = true
		return nil
	}
}

// millisColumns returns, for an input of schema in merged into out, the
// leaves whose values the merge multiplies by 1000 (an INT64
// TIMESTAMP(MILLIS) input leaf whose output leaf is TIMESTAMP(MICROS)),
// by leaf index, or nil when there are none.
func millisColumns(in, out *schema.Schema) []bool {
	var cols []bool
	li, lo := in.Leaves(), out.Leaves()
	for c := range min(len(li), len(lo)) {
		a, b := li[c], lo[c]
		if a.Physical == meta.TypeInt64 && b.Physical == meta.TypeInt64 &&
			a.Logical.Kind == schema.Timestamp && b.Logical.Kind == schema.Timestamp &&
			a.Logical.Unit == schema.Millis && b.Logical.Unit == schema.Micros {
			if cols == nil {
				cols = make([]bool, len(lo))
			}
			cols[c] = true
		}
	}
	return cols
}

// widened is s with its millisecond timestamps in microseconds.
func widened(s *schema.Schema) (*schema.Schema, error) {
	w, _, err := schema.WidenMillis(s)
	if err != nil {
		return nil, fmt.Errorf("merge: widening the millisecond timestamps of the schema: %w", err)
	}
	return w, nil
}

// toMicros appends to dst the milliseconds of src in microseconds, and
// refuses a value whose microseconds do not fit 64 bits (beyond about
// 292,000 years from 1970, which no real timestamp is).
func toMicros(dst, src []int64) ([]int64, error) {
	const lim = math.MaxInt64 / 1000
	for _, v := range src {
		if v > lim || v < -lim {
			return dst, fmt.Errorf("millisecond timestamp %d: its microseconds do not fit 64 bits", v)
		}
		dst = append(dst, v*1000)
	}
	return dst, nil
}
