package test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/decimal256"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqgo "github.com/parquet-go/parquet-go"

	"github.com/pqsink/pqsink/internal/testutil/duckdb"
	"github.com/pqsink/pqsink/meta"
)

// A reader turns a file into canonical rows (see canonValue), in file order.
// Each reader hands its own native values to a per-reader leaf converter;
// the tree around the leaves is walked with the test's schema model, which
// also checks that the reader's nesting has the shape the schema declares.
type reader struct {
	name string
	read func(s *fileSchema, path string) ([]map[string]any, error)
	// degrade, when set, maps an input value of a type the reader holds
	// with less precision to what the reader can give back.
	degrade func(t *leafType, canon string) string
}

// degradeRows applies a reader's degrade to every leaf of the rows.
func degradeRows(s *fileSchema, rows []map[string]any, fn func(*leafType, string) string) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{}
		for _, f := range s.fields {
			out[i][f.name] = mapLeaves(f, r[f.name], fn)
		}
	}
	return out
}

// mapLeaves rebuilds the canonical value v of field n with fn applied to
// its leaves.
func mapLeaves(n *node, v any, fn func(*leafType, string) string) any {
	if v == nil {
		return nil
	}
	if n.rep == "repeated" {
		var out []any
		for _, e := range v.([]any) {
			out = append(out, mapSingle(n, e, fn))
		}
		if out == nil {
			out = []any{}
		}
		return out
	}
	return mapSingle(n, v, fn)
}

func mapSingle(n *node, v any, fn func(*leafType, string) string) any {
	switch {
	case n.isLeaf():
		return fn(n.leaf, v.(string))
	case n.logical == "LIST":
		out := []any{}
		for _, e := range v.([]any) {
			out = append(out, mapLeaves(n.children[0].children[0], e, fn))
		}
		return out
	case n.logical == "MAP":
		kv := n.children[0]
		out := []any{}
		for _, e := range v.([]any) {
			m := e.(map[string]any)
			out = append(out, map[string]any{"key": mapLeaves(kv.children[0], m["key"], fn), "value": mapLeaves(kv.children[1], m["value"], fn)})
		}
		return out
	}
	out := map[string]any{}
	for _, c := range n.children {
		out[c.name] = mapLeaves(c, v.(map[string]any)[c.name], fn)
	}
	return out
}

// walk converts a reader's native tree for field n to canonical form. The
// reader has already turned its groups into map[string]any, its lists and
// repeated fields into []any, and its maps into []any of {"key","value"}
// maps; leaf converts the leaves.
func walk(n *node, v any, leaf func(*leafType, any) (string, error)) (any, error) {
	if n.rep == "repeated" {
		elems, ok := v.([]any)
		if v == nil {
			// A reader may report an empty repeated field as null.
			return []any{}, nil
		}
		if !ok {
			return nil, fmt.Errorf("repeated field %s: got %T, want a list", n.name, v)
		}
		out := []any{}
		for _, e := range elems {
			c, err := walkSingle(n, e, leaf)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}
	if v == nil {
		return nil, nil
	}
	return walkSingle(n, v, leaf)
}

func walkSingle(n *node, v any, leaf func(*leafType, any) (string, error)) (any, error) {
	switch {
	case n.isLeaf():
		if v == nil {
			return nil, fmt.Errorf("%s: null in a required leaf", n.name)
		}
		s, err := leaf(n.leaf, v)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", n.name, n.leaf.name, err)
		}
		return s, nil
	case n.logical == "LIST":
		elems, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("list %s: got %T", n.name, v)
		}
		elem := n.children[0].children[0]
		out := []any{}
		for _, e := range elems {
			c, err := walk(elem, e, leaf)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n.name, err)
			}
			out = append(out, c)
		}
		return out, nil
	case n.logical == "MAP":
		entries, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("map %s: got %T", n.name, v)
		}
		kv := n.children[0]
		out := []any{}
		for _, e := range entries {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("map %s: entry %T", n.name, e)
			}
			k, err := walk(kv.children[0], m["key"], leaf)
			if err != nil {
				return nil, fmt.Errorf("%s key: %w", n.name, err)
			}
			val, err := walk(kv.children[1], m["value"], leaf)
			if err != nil {
				return nil, fmt.Errorf("%s value: %w", n.name, err)
			}
			out = append(out, map[string]any{"key": k, "value": val})
		}
		return out, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("group %s: got %T", n.name, v)
	}
	out := map[string]any{}
	for _, c := range n.children {
		cv, err := walk(c, m[c.name], leaf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		out[c.name] = cv
	}
	return out, nil
}

func walkRow(s *fileSchema, row map[string]any, leaf func(*leafType, any) (string, error)) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range s.fields {
		v, err := walk(f, row[f.name], leaf)
		if err != nil {
			return nil, err
		}
		out[f.name] = v
	}
	return out, nil
}

// ---- DuckDB ----

// duckReader reads with DuckDB: SELECT * ordered by the row column. The
// server renders each DuckDB type to JSON as its package doc says.
func duckReader(db *duckdb.DB) reader {
	return reader{name: "duckdb", degrade: duckDegrade, read: func(s *fileSchema, path string) ([]map[string]any, error) {
		res, err := db.Run("SELECT * FROM read_parquet(" + duckdb.Quote(path) + `) ORDER BY "row"`)
		if err != nil {
			return nil, err
		}
		var out []map[string]any
		for _, r := range res.Rows {
			row := map[string]any{}
			for i, c := range res.Columns {
				row[c] = r[i]
			}
			c, err := walkRow(s, row, duckLeaf)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	}}
}

// duckDegrade cuts nanosecond instants to microseconds: DuckDB reads
// TIMESTAMP(NANOS, true) as TIMESTAMP WITH TIME ZONE and INT96 as
// TIMESTAMP, both in microseconds. For TIMESTAMP it divides the nanoseconds
// since the epoch truncating toward zero, so instants before 1970 go up to
// the next microsecond; for INT96 it divides the nanoseconds of the day,
// so every instant goes down.
func duckDegrade(t *leafType, canon string) string {
	if !(t.kind == "INT96" || t.kind == "TIMESTAMP" && t.time.unit == "NANOS" && t.time.utc) {
		return canon
	}
	ts, err := time.Parse("2006-01-02T15:04:05.999999999Z", canon)
	if err != nil {
		return "unparsable " + canon
	}
	if t.kind == "INT96" {
		return formatInstant(ts.Truncate(time.Microsecond), true)
	}
	ns := ts.UnixNano()
	return formatInstant(time.Unix(0, ns/1000*1000).UTC(), true)
}

// duckLeaf converts a DuckDB value. duckTypes lists the DuckDB type of
// each leaf type; where it differs from the Parquet one:
//   - UINT64 is UBIGINT, and BIGINT/UBIGINT/DECIMAL arrive as exact strings;
//   - FLOAT16 is read as FLOAT, ENUM as VARCHAR;
//   - TIME adjusted to UTC is TIME WITH TIME ZONE ("...+00"), and TIME
//     NANOS (local) is TIME_NS;
//   - TIMESTAMP adjusted to UTC is TIMESTAMP WITH TIME ZONE ("...+00") in
//     microseconds, whatever the unit: NANOS lose digits (duckDegrade);
//     local NANOS are TIMESTAMP_NS;
//   - INTERVAL is {months, days, micros};
//   - INT96 is TIMESTAMP, in microseconds (duckDegrade);
//   - FIXED_LEN_BYTE_ARRAY without annotation is BLOB; BSON is refused.
func duckLeaf(t *leafType, v any) (string, error) {
	switch t.kind {
	case "FLOAT16":
		f, err := duckdb.Float(v)
		return formatFloat(f, 32), err
	case "DECIMAL":
		s, ok := v.(string)
		r, ok2 := new(big.Rat).SetString(s)
		if !ok || !ok2 {
			return "", fmt.Errorf("decimal %T %v", v, v)
		}
		return r.FloatString(t.decimal.scale), nil
	case "DATE":
		return asString(v)
	case "TIME":
		s, err := asString(v)
		if err != nil {
			return "", err
		}
		if i := strings.LastIndexAny(s, "+-"); i > 0 {
			if s[i:] != "+00" {
				return "", fmt.Errorf("TIME WITH TIME ZONE %q not at +00", s)
			}
			s = s[:i]
		}
		c, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return "", err
		}
		return formatClock(int64(c.Hour()*3600+c.Minute()*60+c.Second())*1e9+int64(c.Nanosecond()), false), nil
	case "TIMESTAMP", "INT96":
		s, err := asString(v)
		if err != nil {
			return "", err
		}
		s = strings.TrimSuffix(s, "+00")
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			return "", err
		}
		return formatInstant(ts, t.kind == "INT96" || t.time.utc), nil
	case "INTERVAL":
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("interval %T", v)
		}
		var months, days, micros int64
		for k, p := range map[string]*int64{"months": &months, "days": &days, "micros": &micros} {
			if _, err := fmt.Sscan(fmt.Sprint(m[k]), p); err != nil {
				return "", fmt.Errorf("interval %s: %v", k, m[k])
			}
		}
		if micros%1000 != 0 {
			return "", fmt.Errorf("interval micros %d are not whole millis", micros)
		}
		return formatInterval(uint32(months), uint32(days), uint32(micros/1000)), nil
	case "UUID", "ENUM", "JSON":
		return asString(v)
	}
	switch t.physical {
	case meta.TypeBoolean:
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("bool %T", v)
		}
		return fmt.Sprint(b), nil
	case meta.TypeInt32, meta.TypeInt64:
		return fmt.Sprint(v), nil // json.Number or exact string
	case meta.TypeFloat:
		f, err := duckdb.Float(v)
		return formatFloat(f, 32), err
	case meta.TypeDouble:
		f, err := duckdb.Float(v)
		return formatFloat(f, 64), err
	}
	if t.name == "str" {
		return asString(v)
	}
	return asString(v) // BLOB: base64 already
}

func asString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("got %T %v, want a string", v, v)
	}
	return s, nil
}

// duckTypes is the DuckDB type of each leaf type (BSON: none, DuckDB
// refuses the file).
var duckTypes = map[string]string{
	"bool": "BOOLEAN", "i32": "INTEGER", "i64": "BIGINT", "i8": "TINYINT", "i16": "SMALLINT",
	"u8": "UTINYINT", "u16": "USMALLINT", "u32": "UINTEGER", "u64": "UBIGINT",
	"f32": "FLOAT", "f64": "DOUBLE", "f16": "FLOAT", "str": "VARCHAR", "enum": "VARCHAR",
	"json": "JSON", "bin": "BLOB", "fixed": "BLOB", "uuid": "UUID",
	"dec32": "DECIMAL(9,2)", "dec64": "DECIMAL(18,6)", "decfix": "DECIMAL(28,10)", "decbin": "DECIMAL(38,5)",
	"date": "DATE", "tms": "TIME WITH TIME ZONE", "tus": "TIME", "tusz": "TIME WITH TIME ZONE", "tns": "TIME_NS",
	"tsms": "TIMESTAMP WITH TIME ZONE", "tsmsl": "TIMESTAMP", "tsus": "TIMESTAMP WITH TIME ZONE",
	"tsusl": "TIMESTAMP", "tsns": "TIMESTAMP WITH TIME ZONE", "tsnsl": "TIMESTAMP_NS",
	"ival": "INTERVAL", "i96": "TIMESTAMP",
}

// ---- arrow-go ----

// arrowReader reads with arrow-go: the file reader, pqarrow to Arrow
// records, and the Arrow arrays walked per row.
var arrowReader = reader{name: "arrow-go", read: func(s *fileSchema, path string) (out []map[string]any, err error) {
	defer func() {
		// arrow-go panics on DELTA_BYTE_ARRAY over FIXED_LEN_BYTE_ARRAY.
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("arrow-go: panic: %v", p)
		}
	}()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, col := range rec.Columns() {
				row[rec.ColumnName(c)] = arrowValue(col, i)
			}
			cr, err := walkRow(s, row, arrowLeaf)
			if err != nil {
				return nil, err
			}
			out = append(out, cr)
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}}

// arrowLeafValue is a leaf with the Arrow type it came in.
type arrowLeafValue struct {
	v  any
	dt arrow.DataType
}

// arrowValue returns the native tree of element i of a.
func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := map[string]any{}
		for f := 0; f < a.NumField(); f++ {
			m[st.Field(f).Name] = arrowValue(a.Field(f), i)
		}
		return m
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, map[string]any{"key": arrowValue(a.Keys(), j), "value": arrowValue(a.Items(), j)})
		}
		return out
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		out := []any{}
		for j := int(start); j < int(end); j++ {
			out = append(out, arrowValue(a.ListValues(), j))
		}
		return out
	case array.ExtensionArray:
		return arrowLeafValue{arrowValue(a.Storage(), i).(arrowLeafValue).v, a.DataType()}
	case *array.Boolean:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Int8:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Int16:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Int32:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Int64:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Uint8:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Uint16:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Uint32:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Uint64:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Float16:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Float32:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Float64:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.String:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.LargeString:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Binary:
		return arrowLeafValue{bytes.Clone(a.Value(i)), a.DataType()}
	case *array.LargeBinary:
		return arrowLeafValue{bytes.Clone(a.Value(i)), a.DataType()}
	case *array.FixedSizeBinary:
		return arrowLeafValue{bytes.Clone(a.Value(i)), a.DataType()}
	case *array.Decimal128:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Decimal256:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Date32:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Time32:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Time64:
		return arrowLeafValue{a.Value(i), a.DataType()}
	case *array.Timestamp:
		return arrowLeafValue{a.Value(i), a.DataType()}
	}
	return arrowLeafValue{fmt.Sprintf("unsupported arrow array %T", a), a.DataType()}
}

// arrowLeaf converts an Arrow leaf. pqarrow maps Parquet types to Arrow
// ones: INTEGER to Int8..Uint64, DECIMAL to decimal128 (decimal256 past
// precision 38), FLOAT16 to float16, DATE to date32, TIME to time32[ms] or
// time64[us|ns], TIMESTAMP to timestamp[unit] with tz UTC when adjusted,
// INT96 to timestamp[ns], UUID to the arrow.uuid extension over
// fixed_size_binary(16), JSON to the arrow.json extension or string, BSON
// and binary to binary, and INTERVAL to fixed_size_binary(12): Arrow has no
// matching interval type.
func arrowLeaf(t *leafType, raw any) (string, error) {
	lv, ok := raw.(arrowLeafValue)
	if !ok {
		return "", fmt.Errorf("not a leaf: %T", raw)
	}
	switch v := lv.v.(type) {
	case bool:
		return fmt.Sprint(v), nil
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
		return fmt.Sprint(v), nil
	case float16.Num:
		// The bits, not v.Float32(): arrow-go's float16 package turns
		// subnormal halves into wrong float32s (it keeps the mantissa
		// bits under a zero exponent), a bug of that helper, not of the
		// Parquet reader.
		return formatFloat(halfToFloat(v.Uint16()), 32), nil
	case float32:
		return formatFloat(float64(v), 32), nil
	case float64:
		return formatFloat(v, 64), nil
	case string:
		if strings.HasPrefix(v, "unsupported") {
			return "", errors.New(v)
		}
		return v, nil
	case []byte:
		switch t.kind {
		case "UUID":
			return formatUUID(v), nil
		case "INTERVAL":
			return intervalBytes(v)
		case "FLOAT16":
			return float16Bytes(v)
		case "JSON":
			return string(v), nil
		}
		if t.name == "str" || t.name == "enum" {
			return string(v), nil
		}
		return base64.StdEncoding.EncodeToString(v), nil
	case decimal128.Num:
		return decimalString(v.BigInt(), lv.dt.(arrow.DecimalType).GetScale(), t)
	case decimal256.Num:
		return decimalString(v.BigInt(), lv.dt.(arrow.DecimalType).GetScale(), t)
	case arrow.Date32:
		return v.ToTime().Format(time.DateOnly), nil
	case arrow.Time32:
		return formatClock(int64(v)*unitNanos(lv.dt.(*arrow.Time32Type).Unit), false), nil
	case arrow.Time64:
		return formatClock(int64(v)*unitNanos(lv.dt.(*arrow.Time64Type).Unit), false), nil
	case arrow.Timestamp:
		tt := lv.dt.(*arrow.TimestampType)
		per := int64(1e9) / unitNanos(tt.Unit)
		utc := tt.TimeZone != ""
		if t.kind == "INT96" {
			utc = true // INT96 carries no adjustment; pqarrow reads it without a zone
		} else if utc != t.time.utc {
			return "", fmt.Errorf("timestamp zone %q for isAdjustedToUTC=%v", tt.TimeZone, t.time.utc)
		}
		return formatInstant(fromUnits(int64(v), per), utc), nil
	}
	return "", fmt.Errorf("arrow value %T (%s)", lv.v, lv.dt)
}

func unitNanos(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1e9
	case arrow.Millisecond:
		return 1e6
	case arrow.Microsecond:
		return 1e3
	}
	return 1
}

// decimalString renders unscaled × 10^-scale; the scale must be the
// declared one.
func decimalString(unscaled *big.Int, scale int32, t *leafType) (string, error) {
	if t.decimal == nil || int(scale) != t.decimal.scale {
		return "", fmt.Errorf("decimal scale %d for %s", scale, t.name)
	}
	r := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return r.FloatString(int(scale)), nil
}

// intervalBytes decodes the 12 bytes of INTERVAL: three little-endian
// uint32s, months, days, millis (LogicalTypes.md).
func intervalBytes(b []byte) (string, error) {
	if len(b) != 12 {
		return "", fmt.Errorf("interval of %d bytes", len(b))
	}
	return formatInterval(binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])), nil
}

// float16Bytes decodes a little-endian IEEE half.
func float16Bytes(b []byte) (string, error) {
	if len(b) != 2 {
		return "", fmt.Errorf("float16 of %d bytes", len(b))
	}
	return formatFloat(halfToFloat(binary.LittleEndian.Uint16(b)), 32), nil
}

// halfToFloat converts IEEE 754 binary16 bits, subnormals included.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, frac := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+frac, exp-25)
}

// ---- parquet-go ----

// pqgoReader reads with parquet-go: rows as parquet.Row (the leaf values of
// a record with their levels, in column order), assembled into records
// from the levels with the schema.
var pqgoReader = reader{name: "parquet-go", read: func(s *fileSchema, path string) ([]map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := pqgo.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	paths, _ := s.leafPaths()
	if cols := f.Schema().Columns(); len(cols) != len(paths) {
		return nil, fmt.Errorf("parquet-go sees %d columns, want %d", len(cols), len(paths))
	}
	var out []map[string]any
	buf := make([]pqgo.Row, 64)
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				cols := splitColumns(row, len(paths))
				rec := map[string]any{}
				c := 0
				for _, fld := range s.fields {
					k := leafCount(fld)
					v, err := assemble(fld, cols[c:c+k], 0, 0)
					if err != nil {
						rows.Close()
						return nil, fmt.Errorf("%s: %w", fld.name, err)
					}
					rec[fld.name] = v
					c += k
				}
				cr, err := walkRow(s, rec, pqgoLeaf)
				if err != nil {
					rows.Close()
					return nil, err
				}
				out = append(out, cr)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				rows.Close()
				return nil, err
			}
		}
		rows.Close()
	}
	return out, nil
}}

// splitColumns cuts a row into the values of each column.
func splitColumns(row pqgo.Row, n int) [][]pqgo.Value {
	cols := make([][]pqgo.Value, n)
	for _, v := range row {
		c := v.Column()
		cols[c] = append(cols[c], v.Clone())
	}
	return cols
}

func leafCount(n *node) int {
	if n.isLeaf() {
		return 1
	}
	k := 0
	for _, c := range n.children {
		k += leafCount(c)
	}
	return k
}

// assemble rebuilds the value of n from the values of its columns for one
// instance of its parent (Dremel record assembly): def and rep are the
// levels of the parent.
func assemble(n *node, cols [][]pqgo.Value, def, rep int) (any, error) {
	for i, c := range cols {
		if len(c) == 0 {
			return nil, fmt.Errorf("%s: column %d has no value", n.name, i)
		}
	}
	switch n.rep {
	case "optional":
		def++
		if cols[0][0].DefinitionLevel() < def {
			return nil, nil
		}
	case "repeated":
		def++
		rep++
		if cols[0][0].DefinitionLevel() < def {
			return []any{}, nil
		}
		// Element k of every column starts at its k-th value whose
		// repetition level is at most rep.
		var starts [][]int
		for _, c := range cols {
			var s []int
			for i, v := range c {
				if i == 0 || v.RepetitionLevel() <= rep {
					s = append(s, i)
				}
			}
			starts = append(starts, s)
		}
		out := []any{}
		for k := range starts[0] {
			elem := make([][]pqgo.Value, len(cols))
			for j, c := range cols {
				if len(starts[j]) != len(starts[0]) {
					return nil, fmt.Errorf("%s: columns disagree on the element count", n.name)
				}
				end := len(c)
				if k+1 < len(starts[j]) {
					end = starts[j][k+1]
				}
				elem[j] = c[starts[j][k]:end]
			}
			v, err := assembleSingle(n, elem, def, rep)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return assembleSingle(n, cols, def, rep)
}

func assembleSingle(n *node, cols [][]pqgo.Value, def, rep int) (any, error) {
	if n.isLeaf() {
		if len(cols[0]) != 1 {
			return nil, fmt.Errorf("%s: %d values for one leaf", n.name, len(cols[0]))
		}
		v := cols[0][0]
		if v.IsNull() || v.DefinitionLevel() != def {
			return nil, fmt.Errorf("%s: definition level %d, want %d", n.name, v.DefinitionLevel(), def)
		}
		return v, nil
	}
	fields := map[string]any{}
	c := 0
	for _, ch := range n.children {
		k := leafCount(ch)
		v, err := assemble(ch, cols[c:c+k], def, rep)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		fields[ch.name] = v
		c += k
	}
	switch n.logical {
	case "LIST": // the repeated group's elements, unwrapped
		var out []any
		for _, e := range fields["list"].([]any) {
			out = append(out, e.(map[string]any)["element"])
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	case "MAP": // key_value entries are {"key","value"} already
		return fields["key_value"], nil
	}
	return fields, nil
}

// pqgoLeaf converts a parquet-go value: parquet-go hands out the physical
// value, so the logical type is applied here, from the declared schema.
func pqgoLeaf(t *leafType, raw any) (string, error) {
	v, ok := raw.(pqgo.Value)
	if !ok {
		return "", fmt.Errorf("not a leaf: %T", raw)
	}
	switch v.Kind() {
	case pqgo.Boolean:
		return fmt.Sprint(v.Boolean()), nil
	case pqgo.Int32:
		return intLeaf(t, int64(v.Int32()), uint64(uint32(v.Int32())))
	case pqgo.Int64:
		return intLeaf(t, v.Int64(), v.Uint64())
	case pqgo.Int96:
		return int96Leaf(v.Int96())
	case pqgo.Float:
		return formatFloat(float64(v.Float()), 32), nil
	case pqgo.Double:
		return formatFloat(v.Double(), 64), nil
	}
	b := v.ByteArray()
	switch t.kind {
	case "UUID":
		return formatUUID(b), nil
	case "INTERVAL":
		return intervalBytes(b)
	case "FLOAT16":
		return float16Bytes(b)
	case "DECIMAL":
		return decimalString(signedBigEndian(b), int32(t.decimal.scale), t)
	case "JSON", "ENUM":
		return string(b), nil
	}
	if t.name == "str" {
		return string(b), nil
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// intLeaf applies the logical type to a 32- or 64-bit integer.
func intLeaf(t *leafType, signed int64, unsigned uint64) (string, error) {
	switch t.kind {
	case "DECIMAL":
		return decimalString(big.NewInt(signed), int32(t.decimal.scale), t)
	case "DATE":
		return epoch.AddDate(0, 0, int(signed)).Format(time.DateOnly), nil
	case "TIME":
		return formatClock(signed*(1e9/t.time.perSecond()), false), nil
	case "TIMESTAMP":
		return formatInstant(fromUnits(signed, t.time.perSecond()), t.time.utc), nil
	}
	if t.order == orderUnsigned {
		return fmt.Sprint(unsigned), nil
	}
	return fmt.Sprint(signed), nil
}

// int96Leaf decodes the Impala timestamp: nanoseconds of the day, then the
// Julian day.
func int96Leaf(v [3]uint32) (string, error) {
	nanos := int64(uint64(v[0]) | uint64(v[1])<<32)
	julian := int64(int32(v[2]))
	const julianUnixEpoch = 2440588
	t := time.Unix((julian-julianUnixEpoch)*86400, 0).UTC().Add(time.Duration(nanos))
	return formatInstant(t, true), nil
}

// signedBigEndian reads a two's complement big-endian integer.
func signedBigEndian(b []byte) *big.Int {
	v := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return v
}
