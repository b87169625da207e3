package connector

import (
	"encoding/json"
	"log/slog"
	"slices"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// jsonTimestampUnitsKey is the footer entry of a table's file of
// format.schema_file whose millisecond (or, with
// table.timestamp_precision micros, nanosecond) timestamps and
// millisecond times of day it holds in microseconds: a JSON object from
// each such column's path to the unit of the schema file, "MILLIS" or
// "NANOS", so that replay renders them as the schema file's columns
// (connector/source reads it).
const jsonTimestampUnitsKey = "pqsink.json.timestamp_units"

// retimeJSON makes the TIMESTAMP(MILLIS) columns of a table's schema
// file TIMESTAMP(MICROS) in its files (schema.WidenMillis): Iceberg's
// timestamps are microseconds in Parquet, and engines misread or refuse
// a millisecond column of a table. Its TIME(MILLIS) columns, which
// Iceberg's time (microseconds) cannot take, become TIME(MICROS)
// (schema.WidenTimeMillis). With nanos
// (table.timestamp_precision micros) its TIMESTAMP(NANOS) columns too
// (schema.NarrowNanos): Iceberg's nanosecond types are format version
// 3's. The shredder reads their JSON in the schema file's unit and
// writes microseconds; the files say which columns those are.
func (f *format) retimeJSON(nanos bool) error {
	units := map[string]schema.TimeUnit{}
	names := map[string]string{}
	for _, l := range f.message.Leaves() {
		ts := l.Logical.Kind == schema.Timestamp && (l.Logical.Unit == schema.Millis || nanos && l.Logical.Unit == schema.Nanos)
		tm := l.Logical.Kind == schema.Time && l.Logical.Unit == schema.Millis
		if ts || tm {
			units[l.PathString()] = l.Logical.Unit
			names[l.PathString()] = l.Logical.Unit.String()
		}
	}
	if len(units) == 0 {
		return nil
	}
	s, _, err := schema.WidenMillis(f.message)
	if err != nil {
		return err
	}
	if s, _, err = schema.WidenTimeMillis(s); err != nil {
		return err
	}
	if nanos {
		if s, _, err = schema.NarrowNanos(s); err != nil {
			return err
		}
	}
	footer, err := json.Marshal(names)
	if err != nil {
		return err
	}
	f.message = s
	f.jsonOpts = append(f.jsonOpts, rowgroup.JSONTimestampUnits(units))
	f.jsonUnits = [][2]string{{jsonTimestampUnitsKey, string(footer)}}
	return nil
}

// countJSONTruncated is countTruncated for format.type json: the
// shredders count into c the values of the schema file's nanosecond
// columns whose digits below the microsecond they cut, and the sink says
// at startup which columns those are.
func (f *format) countJSONTruncated(log *slog.Logger) {
	var fields []string
	if len(f.jsonUnits) > 0 {
		var names map[string]string
		_ = json.Unmarshal([]byte(f.jsonUnits[0][1]), &names)
		for p, u := range names {
			if u == schema.Nanos.String() {
				fields = append(fields, p)
			}
		}
	}
	slices.Sort(fields)
	f.jsonOpts = append(f.jsonOpts, rowgroup.JSONCountTruncated(f.truncated))
	log.Info("table.timestamp_precision is micros: format.schema_file's TIMESTAMP(NANOS) columns are written as TIMESTAMP(MICROS), "+
		"their digits below the microsecond cut and counted", "metric", "pqsink_table_timestamps_truncated_total", "fields", fields)
}
