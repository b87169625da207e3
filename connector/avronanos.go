package connector

import (
	"github.com/pqsink/pqsink/rowgroup/avrorow"
	"github.com/pqsink/pqsink/schema"
)

// narrowNanos makes the nanosecond timestamps (timestamp-nanos,
// local-timestamp-nanos) of writer schema id's Parquet schema s
// microseconds, with table.timestamp_precision micros: Iceberg's
// nanosecond types are format version 3's, and most engines read
// version 2 only. The decoders floor the values and count the cut ones;
// the schema's log line names the fields.
func (a *avroFormat) narrowNanos(id uint32, s *schema.Schema) (*schema.Schema, error) {
	var fields []string
	for _, l := range s.Leaves() {
		if l.Logical.Kind == schema.Timestamp && l.Logical.Unit == schema.Nanos {
			fields = append(fields, l.PathString())
		}
	}
	if len(fields) == 0 {
		return s, nil
	}
	n, _, err := schema.NarrowNanos(s)
	if err != nil {
		return nil, err
	}
	a.log.Info("avro schema: nanosecond timestamps written in microseconds, the digits below cut and counted (table.timestamp_precision: micros)",
		"schema_id", id, "fields", fields, "metric", "pqsink_table_timestamps_truncated_total")
	return n, nil
}

// avroLookupOptions are the options of the format's avrorow lookups (a
// table's partition fields): their nanosecond timestamps and times of
// day in milliseconds as the files' columns hold them.
func (f *format) avroLookupOptions() []avrorow.Option {
	var opts []avrorow.Option
	if f.timeUnit == schema.Micros {
		opts = append(opts, avrorow.MicrosTimes())
	}
	if f.protoMicros {
		opts = append(opts, avrorow.MicrosTimestamps())
	}
	return opts
}
