package source

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

// jsonTimestampUnitsKey is the footer entry of a table's file of a JSON
// schema file whose millisecond (or nanosecond) timestamps the file holds
// in microseconds (the sink's connector/jsonmillis.go): a JSON object
// from each such column's path to "MILLIS" or "NANOS".
const jsonTimestampUnitsKey = "pqsink.json.timestamp_units"

// jsonUnits reads the jsonTimestampUnitsKey entry of a file of schema
// sch: the leaf columns whose microseconds render as the schema file's
// TIMESTAMP(MILLIS) or TIMESTAMP(NANOS) columns, and that unit. It
// returns nil when the file has none.
func jsonUnits(kv []meta.KeyValue, sch *schema.Schema) (map[int]schema.TimeUnit, error) {
	var text string
	for _, e := range kv {
		if e.Key == jsonTimestampUnitsKey && e.Value != nil {
			text = *e.Value
		}
	}
	if text == "" {
		return nil, nil
	}
	var units map[string]string
	if err := json.Unmarshal([]byte(text), &units); err != nil {
		return nil, fmt.Errorf("footer entry %s: %w", jsonTimestampUnitsKey, err)
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
			return nil, fmt.Errorf("footer entry %s: column %s in %s: only MILLIS and NANOS are known", jsonTimestampUnitsKey, path, u)
		case l == nil || l.Physical != meta.TypeInt64 || l.Logical.Unit != schema.Micros ||
			l.Logical.Kind != schema.Timestamp && (l.Logical.Kind != schema.Time || unit != schema.Millis):
			return nil, fmt.Errorf("footer entry %s: %s is not an INT64 TIMESTAMP(MICROS) or TIME(MICROS) column of the file", jsonTimestampUnitsKey, path)
		}
		cols[l.Column] = unit
	}
	return cols, nil
}

// appendUnitsJSON is appendCompactJSON for a file with jsonUnits: the
// values of its columns, microseconds, render as a column of the schema
// file's unit does, as the files without a table hold them: for
// MILLIS, the sink's value divided by 1000; for NANOS, the floored value
// times 1000, its digits below the microsecond zeros.
func appendUnitsJSON(dst []byte, v reader.Value, units map[int]schema.TimeUnit) []byte {
	switch v.Kind() {
	case reader.KindInt64:
		if n := v.Node(); n != nil && units[n.Column] != 0 && n.Logical.Kind == schema.Time {
			// As reader renders a TIME(MILLIS): the time of day, modulo a
			// day should a value be out of range.
			at := time.Unix(0, 0).UTC().Add(time.Duration(floorDiv(v.Int64(), 1000)) * time.Millisecond)
			dst = append(dst, '"')
			dst = at.AppendFormat(dst, "15:04:05.000")
			return append(dst, '"')
		}
		if n := v.Node(); n != nil && units[n.Column] != 0 {
			layout := "2006-01-02T15:04:05.000"
			at := time.UnixMilli(floorDiv(v.Int64(), 1000)).UTC()
			if units[n.Column] == schema.Nanos {
				layout = "2006-01-02T15:04:05.000000000"
				at = time.Unix(0, nanosBack(v.Int64(), 1000)).UTC()
			}
			if n.Logical.UTC {
				layout += "Z"
			}
			dst = append(dst, '"')
			dst = at.AppendFormat(dst, layout)
			return append(dst, '"')
		}
	case reader.KindGroup:
		dst = append(dst, '{')
		comma := false
		for name, f := range v.Fields() {
			if f.IsNull() {
				continue
			}
			if comma {
				dst = append(dst, ',')
			}
			comma = true
			dst = appendKey(dst, name)
			dst = appendUnitsJSON(dst, f, units)
		}
		return append(dst, '}')
	case reader.KindList:
		dst = append(dst, '[')
		for i, e := range v.List() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendUnitsJSON(dst, e, units)
		}
		return append(dst, ']')
	case reader.KindMap:
		k, _ := v.Node().MapKeyValue()
		if k == nil {
			break
		}
		if lk := k.Logical.Kind; lk == schema.String || lk == schema.Enum || lk == schema.JSON {
			dst = append(dst, '{')
			i := 0
			for key, val := range v.Entries() {
				if i > 0 {
					dst = append(dst, ',')
				}
				i++
				dst = appendKey(dst, string(key.Bytes()))
				dst = appendUnitsJSON(dst, val, units)
			}
			return append(dst, '}')
		}
		// As reader.Value.AppendJSON renders a map of other keys.
		dst = append(dst, '[')
		i := 0
		for key, val := range v.Entries() {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = append(dst, `{"key":`...)
			dst = appendUnitsJSON(dst, key, units)
			dst = append(dst, `,"value":`...)
			dst = appendUnitsJSON(dst, val, units)
			dst = append(dst, '}')
		}
		return append(dst, ']')
	}
	return appendCompactJSON(dst, v)
}

// floorDiv is x/d rounded down.
func floorDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 && x < 0 {
		q--
	}
	return q
}
