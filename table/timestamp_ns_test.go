package table

import (
	"errors"
	"strings"
	"testing"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// TestNanosNeedVersion3: a TIMESTAMP(NANOS) column, alone or in a list,
// has no type in a format version 2 table, and the error names the field,
// the type and the way out; version 3 takes it as timestamp(tz)_ns, and
// version 2 takes the TIMESTAMP(MICROS) of table.timestamp_precision:
// micros as timestamptz.
func TestNanosNeedVersion3(t *testing.T) {
	ts := func(name string, unit schema.TimeUnit, utc bool) *schema.Node {
		return schema.Leaf(name, schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: unit, UTC: utc})
	}
	list := func(el *schema.Node) *schema.Node {
		return schema.Group("l", schema.Required, schema.Logical{Kind: schema.List}, schema.Group("list", schema.Repeated, schema.Logical{}, el))
	}
	for _, tc := range []struct {
		name    string
		version int
		field   *schema.Node
		want    string // in the Iceberg schema's text, or the error's
		err     bool
	}{
		{"tz nanos v2", 2, ts("ts", schema.Nanos, true), "field ts: TIMESTAMP(NANOS) is Iceberg's timestamptz_ns, which needs table.format_version 3 (table.timestamp_precision: micros", true},
		{"local nanos v2", 2, ts("ts", schema.Nanos, false), "field ts: TIMESTAMP(NANOS) is Iceberg's timestamp_ns, which needs table.format_version 3", true},
		{"nanos in a list v2", 2, list(ts("element", schema.Nanos, true)), "field l.list.element: TIMESTAMP(NANOS)", true},
		{"tz nanos v3", 3, ts("ts", schema.Nanos, true), "timestamptz_ns", false},
		{"tz micros v2", 2, ts("ts", schema.Micros, true), "timestamptz", false},
		{"micros in a list v2", 2, list(ts("element", schema.Micros, true)), "list<timestamptz>", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.New("m", tc.field)
			if err != nil {
				t.Fatal(err)
			}
			is, err := icebergSchema(s, tc.version)
			if tc.err {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got %v, want an error with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := is.String(); !strings.Contains(got, tc.want) || (tc.version == 2 && strings.Contains(got, "_ns")) {
				t.Errorf("got %s, want %q in it", got, tc.want)
			}
		})
	}
}

// TestTimestampUnitSwitchRefused: files whose Timestamps are in the other
// unit than the table's columns (table.timestamp_precision changed on an
// existing table) do not fit it, either way, naming the field.
func TestTimestampUnitSwitchRefused(t *testing.T) {
	mk := func(unit schema.TimeUnit) *schema.Schema {
		s, err := schema.New("m", schema.Leaf("ts", schema.Optional, meta.TypeInt64, schema.Logical{Kind: schema.Timestamp, Unit: unit, UTC: true}))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range []struct {
		name        string
		version     int
		table, file schema.TimeUnit
		want        string
	}{
		{"micros files, nanos table", 3, schema.Nanos, schema.Micros, "field ts is timestamptz_ns in the table, the records need timestamptz"},
		{"nanos files, micros table", 2, schema.Micros, schema.Nanos, "field ts is timestamptz in the table, the records need timestamptz_ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, err := icebergSchema(mk(tc.table), tc.version)
			if err != nil {
				t.Fatal(err)
			}
			_, err = withFieldIDs(mk(tc.file), ts, tc.version)
			if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want ErrIncompatible with %q", err, tc.want)
			}
		})
	}
}
