package avrorow

import (
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/schema/avro"
)

// MicrosTimes makes NewLookup read time-millis values as microseconds, as
// the columns of schema.WidenTimeMillis hold them (a table's files, whose
// Iceberg time is an INT64 TIME(MICROS)): its leaves are INT64
// TIME(MICROS) and its values the int times 1000. Defaults to
// milliseconds, the INT32 TIME(MILLIS) of the writer schema's Parquet
// schema.
func MicrosTimes() Option {
	return func(o *options) error {
		o.times = true
		return nil
	}
}

// timeMillisInMicros reports whether an int read as a time-millis (the
// reader's type, which the column was made from, or the writer's) goes
// into an INT64 TIME(MICROS) column: one that schema.WidenTimeMillis made
// for a table, which takes the value times 1000.
func timeMillisInMicros(res *avro.Resolution, n *schema.Node) bool {
	t := res.Reader
	if t == nil {
		t = res.Writer
	}
	return avro.TimeMillisInMicros(t, n)
}

// timeMillisMicros reads a time-millis int into op's microsecond column:
// an int32 times 1000 always fits an int64, so no value is refused for
// its range (as in an INT32 TIME(MILLIS) column, a value outside the day
// is kept as it is).
func (r *avroReader) timeMillisMicros(op *avroOp, rep uint8) error {
	v, err := r.int32(op)
	if err != nil {
		return err
	}
	op.col.AppendInt64(rep, int64(v)*1000)
	return nil
}
