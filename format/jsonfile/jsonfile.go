// Package jsonfile is the JSON format with a schema file (format.type:
// json): each record value is a JSON object, shredded by the JSON
// shredder into the columns of format.schema_file.
package jsonfile

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/format"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
)

// Name is the format's format.type.
const Name = "json"

// TimestampUnitsKey is the footer entry of a table's file of
// format.schema_file whose millisecond (or, with
// table.timestamp_precision micros, nanosecond) timestamps and
// millisecond times of day it holds in microseconds: a JSON object from
// each such column's path to the unit of the schema file, "MILLIS" or
// "NANOS", so that replay renders them as the schema file's columns.
// It is declared once, in archive, since compaction carries it.
const TimestampUnitsKey = archive.JSONTimestampUnitsKey

// jsonFile is the format opened for a sink.
type jsonFile struct {
	envelope bool
	timeUnit schema.TimeUnit
	message  *schema.Schema
	opts     []rowgroup.JSONOption
	// units is the footer entry of a table's files whose millisecond
	// columns are in microseconds; nil otherwise.
	units [][2]string
}

// Open is the format's format.Driver.
func Open(cfg *config.Config, env format.Env) (format.Format, error) {
	f := &jsonFile{envelope: cfg.Envelope, timeUnit: format.TimeUnit(cfg.Table != nil)}
	path := format.Resolve(cfg.Dir, cfg.Format.SchemaFile)
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("format.schema_file: %w", err)
	}
	if f.message, err = schema.Parse(string(text)); err != nil {
		return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
	}
	if f.envelope && f.message.Lookup(rowgroup.EnvelopeField) != nil {
		return nil, fmt.Errorf("format.schema_file %s: field %s is the Kafka envelope's; rename it or set envelope: false", path, rowgroup.EnvelopeField)
	}
	if cfg.Format.IgnoreUnknownFields {
		f.opts = append(f.opts, rowgroup.IgnoreUnknownFields())
	}
	if cfg.Format.LossyNumbers {
		f.opts = append(f.opts, rowgroup.LossyNumbers())
	}
	if cfg.Table != nil {
		if err := f.retime(cfg.Table.TimestampMicros); err != nil {
			return nil, fmt.Errorf("format.schema_file %s: %w", path, err)
		}
		if cfg.Table.TimestampMicros {
			f.countTruncated(env)
		}
	}
	return f, nil
}

func (f *jsonFile) FixedSchema() (*schema.Schema, error) {
	return format.WithEnvelope(f.envelope, f.timeUnit, f.message.Name(), f.message.Fields()...)
}

func (f *jsonFile) TableSchema() (*schema.Schema, error) { return nil, nil }
func (f *jsonFile) SchemaPerRecord() bool                { return false }
func (f *jsonFile) Binary() bool                         { return false }
func (f *jsonFile) Fixed() *format.Schema                { return nil }
func (f *jsonFile) TextOptions() []rowgroup.JSONOption   { return f.opts }

func (f *jsonFile) NewDecoder(p format.Partition) format.Decoder {
	return &format.Fixed{Schema: p.Schema, KeyValues: f.units, NewPayload: func(g *rowgroup.RowGroup) (rowgroup.Payload, error) {
		return rowgroup.NewJSONShredder(g, f.opts...)
	}}
}

// retime makes the TIMESTAMP(MILLIS) columns of a table's schema file
// TIMESTAMP(MICROS) in its files (schema.WidenMillis): Iceberg's
// timestamps are microseconds in Parquet, and engines misread or refuse
// a millisecond column of a table. Its TIME(MILLIS) columns, which
// Iceberg's time (microseconds) cannot take, become TIME(MICROS)
// (schema.WidenTimeMillis). With nanos (table.timestamp_precision micros)
// its TIMESTAMP(NANOS) columns too (schema.NarrowNanos): Iceberg's
// nanosecond types are format version 3's. The shredder reads their JSON
// in the schema file's unit and writes microseconds; the files say which
// columns those are (TimestampUnitsKey).
func (f *jsonFile) retime(nanos bool) error {
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
	f.opts = append(f.opts, rowgroup.JSONTimestampUnits(units))
	f.units = [][2]string{{TimestampUnitsKey, string(footer)}}
	return nil
}

// countTruncated makes the shredders count the values of the schema
// file's nanosecond columns whose digits below the microsecond they cut,
// and says at startup which columns those are.
func (f *jsonFile) countTruncated(env format.Env) {
	var fields []string
	if len(f.units) > 0 {
		var names map[string]string
		_ = json.Unmarshal([]byte(f.units[0][1]), &names)
		for p, u := range names {
			if u == schema.Nanos.String() {
				fields = append(fields, p)
			}
		}
	}
	slices.Sort(fields)
	f.opts = append(f.opts, rowgroup.JSONCountTruncated(env.Truncated))
	env.Log.Info("table.timestamp_precision is micros: format.schema_file's TIMESTAMP(NANOS) columns are written as TIMESTAMP(MICROS), "+
		"their digits below the microsecond cut and counted", "metric", "pqsink_table_timestamps_truncated_total", "fields", fields)
}
