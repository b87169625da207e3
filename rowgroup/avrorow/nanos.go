package avrorow

import (
	"sync/atomic"

	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// CountTruncated makes a Decoder add to c, once per record it appends
// whole, the nanosecond timestamps (timestamp-nanos,
// local-timestamp-nanos) of the record whose digits below the
// microsecond it cut, writing them into a TIMESTAMP(MICROS) column
// (schema.NarrowNanos, a table's files with table.timestamp_precision
// micros). Defaults to counting none.
func CountTruncated(c *atomic.Int64) Option {
	return func(o *options) error {
		o.counter = c
		return nil
	}
}

// MicrosTimestamps makes NewLookup read nanosecond timestamps as
// microseconds, as the columns of schema.NarrowNanos hold them (a
// table's files with table.timestamp_precision micros): its leaves are
// TIMESTAMP(MICROS) and its values floored to the microsecond. Defaults
// to nanoseconds, as the writer schema's Parquet schema has them.
func MicrosTimestamps() Option {
	return func(o *options) error {
		o.micros = true
		return nil
	}
}

// nanosInMicros reports whether a long read as a timestamp in
// nanoseconds (the reader's type, which the column was made from, or the
// writer's) goes into a microsecond timestamp column: one that
// schema.NarrowNanos made for a table, which takes the value floored to
// the microsecond.
func nanosInMicros(res *avro.Resolution, n *schema.Node) bool {
	t := res.Reader
	if t == nil {
		t = res.Writer
	}
	return avro.NanosInMicros(t, n)
}

// nanosMicros reads a nanosecond timestamp long into op's microsecond
// column: floored, so that an instant before 1970 is not moved forward,
// and counted when digits were cut.
func (r *avroReader) nanosMicros(op *avroOp, rep uint8) error {
	v, ok := r.long()
	if !ok {
		return r.fail(op, r.longErr())
	}
	us, cut := schema.FloorMicros(v)
	if cut {
		r.cut++
	}
	op.col.AppendInt64(rep, us)
	return nil
}
