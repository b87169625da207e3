package connector

import (
	"encoding/json"

	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// jsonTimestampUnitsKey is the footer entry of a table's file of
// format.schema_file whose millisecond timestamps it holds in
// microseconds: a JSON object from each such column's path to the unit
// of the schema file, "MILLIS", so that replay renders them as the
// schema file's columns (connector/source reads it).
const jsonTimestampUnitsKey = "pqsink.json.timestamp_units"

// widenJSONMillis makes the TIMESTAMP(MILLIS) columns of a table's
// schema file TIMESTAMP(MICROS) in its files (schema.WidenMillis):
// Iceberg's timestamps are microseconds in Parquet, and engines misread
// or refuse a millisecond column of a table. The shredder reads their
// JSON in milliseconds and writes microseconds; the files say which
// columns those are.
func (f *format) widenJSONMillis() error {
	units := map[string]schema.TimeUnit{}
	names := map[string]string{}
	for _, l := range f.message.Leaves() {
		if l.Logical.Kind == schema.Timestamp && l.Logical.Unit == schema.Millis {
			units[l.PathString()] = schema.Millis
			names[l.PathString()] = schema.Millis.String()
		}
	}
	if len(units) == 0 {
		return nil
	}
	wide, _, err := schema.WidenMillis(f.message)
	if err != nil {
		return err
	}
	footer, err := json.Marshal(names)
	if err != nil {
		return err
	}
	f.message = wide
	f.jsonOpts = append(f.jsonOpts, rowgroup.JSONTimestampUnits(units))
	f.jsonUnits = [][2]string{{jsonTimestampUnitsKey, string(footer)}}
	return nil
}
