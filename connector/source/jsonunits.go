package source

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/schema"
)

// jsonUnits reads the archive.JSONTimestampUnitsKey entry of a file of schema
// sch: the leaf columns whose microseconds render as the schema file's
// TIMESTAMP(MILLIS) or TIMESTAMP(NANOS) columns, and that unit. It
// returns nil when the file has none.
func jsonUnits(kv []meta.KeyValue, sch *schema.Schema) (map[int]schema.TimeUnit, error) {
	var text string
	for _, e := range kv {
		if e.Key == archive.JSONTimestampUnitsKey && e.Value != nil {
			text = *e.Value
		}
	}
	if text == "" {
		return nil, nil
	}
	var units map[string]string
	if err := json.Unmarshal([]byte(text), &units); err != nil {
		return nil, fmt.Errorf("footer entry %s: %w", archive.JSONTimestampUnitsKey, err)
	}
	cols := map[int]schema.TimeUnit{}
	for path, u := range units {
		l := sch.Leaf(path)
		unit := schema.Millis
		if u == schema.Nanos.String() {
			unit = schema.Nanos
		}
		switch {
		case u != schema.Millis.String() && u != schema.Nanos.String():
			return nil, fmt.Errorf("footer entry %s: column %s in %s: only MILLIS and NANOS are known", archive.JSONTimestampUnitsKey, path, u)
		case l == nil || l.Physical != meta.TypeInt64 || l.Logical.Unit != schema.Micros ||
			l.Logical.Kind != schema.Timestamp && (l.Logical.Kind != schema.Time || unit != schema.Millis):
			return nil, fmt.Errorf("footer entry %s: %s is not an INT64 TIMESTAMP(MICROS) or TIME(MICROS) column of the file", archive.JSONTimestampUnitsKey, path)
		}
		cols[l.Column] = unit
	}
	return cols, nil
}

// appendInUnit renders x, a value of leaf n's microsecond column that
// holds the schema file's unit u (jsonUnits), as a column of that unit
// does, as the files without a table hold them: for MILLIS, the sink's
// value divided by 1000; for NANOS, the floored value times 1000, its
// digits below the microsecond zeros.
func appendInUnit(dst []byte, x int64, n *schema.Node, u schema.TimeUnit) []byte {
	if n.Logical.Kind == schema.Time {
		// As reader renders a TIME(MILLIS): the time of day, modulo a
		// day should a value be out of range.
		at := time.Unix(0, 0).UTC().Add(time.Duration(floorDiv(x, 1000)) * time.Millisecond)
		dst = append(dst, '"')
		dst = at.AppendFormat(dst, "15:04:05.000")
		return append(dst, '"')
	}
	layout := "2006-01-02T15:04:05.000"
	at := time.UnixMilli(floorDiv(x, 1000)).UTC()
	if u == schema.Nanos {
		layout = "2006-01-02T15:04:05.000000000"
		at = time.Unix(0, schema.NanosBack(x, 1000)).UTC()
	}
	if n.Logical.UTC {
		layout += "Z"
	}
	dst = append(dst, '"')
	dst = at.AppendFormat(dst, layout)
	return append(dst, '"')
}

// floorDiv is x/d rounded down.
func floorDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 && x < 0 {
		q--
	}
	return q
}
