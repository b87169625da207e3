// Package test holds pqsink's end-to-end and cross-reader tests. The
// writer_*_test.go files check that files written by pqsink are read back,
// value for value and with the metadata asked for, by three independent
// readers: DuckDB, apache/arrow-go and parquet-go/parquet-go.
package test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/pqsink/pqsink/meta"
)

// This file describes, once, every leaf type of the matrix: how it is
// declared in the message syntax, how random JSON input for it is made, and
// the canonical text of a value. Every reader's output and the input JSON
// are reduced to that canonical text before they are compared, so one
// function per type decides what "the same value" means:
//
//	boolean            true / false
//	integers           the logical value in decimal (unsigned ones unsigned)
//	float, double      shortest round-trip text at the type's width, and
//	                   NaN, +Inf, -Inf, -0 spelled out
//	FLOAT16            as float (every FLOAT16 is exact in a float32)
//	STRING, ENUM, JSON the text
//	binary, BSON,      standard padded base64
//	fixed, INTERVAL*
//	UUID               lower-case 8-4-4-4-12
//	DECIMAL(p,s)       exact, with exactly s fraction digits
//	DATE               YYYY-MM-DD
//	TIME               HH:MM:SS.nnnnnnnnn
//	TIMESTAMP, INT96   YYYY-MM-DDTHH:MM:SS.nnnnnnnnn, plus Z when the value
//	                   is an instant (adjusted to UTC, and INT96)
//	INTERVAL           <months>m<days>d<millis>ms
type leafType struct {
	name     string    // short name, used in column names
	physical meta.Type // physical type, for the encodings that apply
	decl     string    // declaration with %s for the field name, without repetition
	gen      func(*rand.Rand) any
	canon    func(json.RawMessage) (string, error)
	order    order           // how min/max statistics order its values
	fixedLen int             // FIXED_LEN_BYTE_ARRAY length
	decimal  *decimalType    // DECIMAL precision and scale
	time     *timeType       // TIME and TIMESTAMP unit and adjustment
	kind     string          // logical kind for reader-specific conversions
	bloomOK  bool            // values hash the same in every reader (for bloom probes)
	encs     []meta.Encoding // non-dictionary encodings that apply
}

// order is the sort order of statistics (parquet.thrift ColumnOrder).
type order uint8

const (
	orderNone     order = iota // no statistics: INTERVAL, INT96
	orderSigned                // signed integer, date, time, timestamp, decimal
	orderUnsigned              // unsigned integers
	orderFloat                 // float, double, FLOAT16: NaN excluded
	orderBytes                 // unsigned byte-wise: strings, binary, UUID
	orderBool                  // false < true
)

type decimalType struct{ precision, scale int }

type timeType struct {
	unit string // MILLIS, MICROS, NANOS
	utc  bool
}

func (t *timeType) perSecond() int64 {
	switch t.unit {
	case "MILLIS":
		return 1e3
	case "MICROS":
		return 1e6
	}
	return 1e9
}

// Encodings that apply to each physical type, besides dictionary.
var (
	encBool   = []meta.Encoding{meta.EncodingPlain, meta.EncodingRLE}
	encInt    = []meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaBinaryPacked, meta.EncodingByteStreamSplit}
	encFloat  = []meta.Encoding{meta.EncodingPlain, meta.EncodingByteStreamSplit}
	encBytes  = []meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaLengthByteArray, meta.EncodingDeltaByteArray}
	encFixed  = []meta.Encoding{meta.EncodingPlain, meta.EncodingDeltaByteArray, meta.EncodingByteStreamSplit}
	encInt96  = []meta.Encoding{meta.EncodingPlain}
	physTypes = map[string]meta.Type{
		"boolean": meta.TypeBoolean, "int32": meta.TypeInt32, "int64": meta.TypeInt64,
		"int96": meta.TypeInt96, "float": meta.TypeFloat, "double": meta.TypeDouble,
		"binary": meta.TypeByteArray, "fixed_len_byte_array": meta.TypeFixedLenByteArray,
	}
)

// leafTypes returns every leaf type of the matrix: every physical type and
// every logical type JSON can fill.
func leafTypes() []*leafType {
	ts := []*leafType{
		{name: "bool", decl: "boolean %s", gen: genBool, canon: canonBool, order: orderBool},
		{name: "i32", decl: "int32 %s", gen: genInt(-1<<31, 1<<31-1), canon: canonInt, order: orderSigned},
		{name: "i64", decl: "int64 %s", gen: genInt(math.MinInt64, math.MaxInt64), canon: canonInt, order: orderSigned},
		{name: "i8", decl: "int32 %s (INTEGER(8,true))", gen: genInt(-128, 127), canon: canonInt, order: orderSigned},
		{name: "i16", decl: "int32 %s (INTEGER(16,true))", gen: genInt(-1<<15, 1<<15-1), canon: canonInt, order: orderSigned},
		{name: "u8", decl: "int32 %s (INTEGER(8,false))", gen: genUint(255), canon: canonInt, order: orderUnsigned},
		{name: "u16", decl: "int32 %s (INTEGER(16,false))", gen: genUint(1<<16 - 1), canon: canonInt, order: orderUnsigned},
		{name: "u32", decl: "int32 %s (INTEGER(32,false))", gen: genUint(1<<32 - 1), canon: canonInt, order: orderUnsigned},
		{name: "u64", decl: "int64 %s (INTEGER(64,false))", gen: genUint(math.MaxUint64), canon: canonInt, order: orderUnsigned},
		{name: "f32", decl: "float %s", gen: genFloat(32), canon: canonFloat(32), order: orderFloat},
		{name: "f64", decl: "double %s", gen: genFloat(64), canon: canonFloat(64), order: orderFloat},
		{name: "f16", decl: "fixed_len_byte_array(2) %s (FLOAT16)", gen: genFloat16, canon: canonFloat(32), order: orderFloat, kind: "FLOAT16"},
		{name: "str", decl: "binary %s (STRING)", gen: genString, canon: canonString, order: orderBytes, bloomOK: true},
		{name: "enum", decl: "binary %s (ENUM)", gen: genEnum, canon: canonString, order: orderBytes, kind: "ENUM"},
		{name: "json", decl: "binary %s (JSON)", gen: genJSON, canon: canonJSON, order: orderBytes, kind: "JSON"},
		{name: "bson", decl: "binary %s (BSON)", gen: genBytes(0, 40), canon: canonBase64, order: orderBytes, kind: "BSON"},
		{name: "bin", decl: "binary %s", gen: genBytes(0, 90), canon: canonBase64, order: orderBytes},
		{name: "fixed", decl: "fixed_len_byte_array(5) %s", gen: genBytes(5, 5), canon: canonBase64, order: orderBytes, fixedLen: 5},
		{name: "uuid", decl: "fixed_len_byte_array(16) %s (UUID)", gen: genUUID, canon: canonUUID, order: orderBytes, kind: "UUID"},
		{name: "dec32", decl: "int32 %s (DECIMAL(9,2))", decimal: &decimalType{9, 2}},
		{name: "dec64", decl: "int64 %s (DECIMAL(18,6))", decimal: &decimalType{18, 6}},
		{name: "decfix", decl: "fixed_len_byte_array(12) %s (DECIMAL(28,10))", decimal: &decimalType{28, 10}, fixedLen: 12},
		{name: "decbin", decl: "binary %s (DECIMAL(38,5))", decimal: &decimalType{38, 5}},
		{name: "date", decl: "int32 %s (DATE)", gen: genDate, canon: canonDate, order: orderSigned, kind: "DATE"},
		{name: "tms", decl: "int32 %s (TIME(MILLIS,true))", time: &timeType{"MILLIS", true}},
		{name: "tus", decl: "int64 %s (TIME(MICROS,false))", time: &timeType{"MICROS", false}},
		{name: "tusz", decl: "int64 %s (TIME(MICROS,true))", time: &timeType{"MICROS", true}},
		{name: "tns", decl: "int64 %s (TIME(NANOS,false))", time: &timeType{"NANOS", false}},
		{name: "tsms", decl: "int64 %s (TIMESTAMP(MILLIS,true))", time: &timeType{"MILLIS", true}},
		{name: "tsmsl", decl: "int64 %s (TIMESTAMP(MILLIS,false))", time: &timeType{"MILLIS", false}},
		{name: "tsus", decl: "int64 %s (TIMESTAMP(MICROS,true))", time: &timeType{"MICROS", true}},
		{name: "tsusl", decl: "int64 %s (TIMESTAMP(MICROS,false))", time: &timeType{"MICROS", false}},
		{name: "tsns", decl: "int64 %s (TIMESTAMP(NANOS,true))", time: &timeType{"NANOS", true}},
		{name: "tsnsl", decl: "int64 %s (TIMESTAMP(NANOS,false))", time: &timeType{"NANOS", false}},
		{name: "ival", decl: "fixed_len_byte_array(12) %s (INTERVAL)", gen: genInterval, canon: canonInterval, order: orderNone, fixedLen: 12, kind: "INTERVAL"},
		{name: "i96", decl: "int96 %s", gen: genInt96, canon: canonInt96, order: orderNone, kind: "INT96"},
	}
	for _, t := range ts {
		t.physical = physTypes[strings.Fields(strings.Replace(t.decl, "(", " (", 1))[0]]
		switch t.physical {
		case meta.TypeBoolean:
			t.encs = encBool
		case meta.TypeInt32, meta.TypeInt64:
			t.encs = encInt
		case meta.TypeFloat, meta.TypeDouble:
			t.encs = encFloat
		case meta.TypeByteArray:
			t.encs = encBytes
		case meta.TypeFixedLenByteArray:
			t.encs = encFixed
		case meta.TypeInt96:
			t.encs = encInt96
		}
		if d := t.decimal; d != nil {
			t.kind, t.order = "DECIMAL", orderSigned
			t.gen, t.canon = genDecimal(d), canonDecimal(d)
		}
		if tt := t.time; tt != nil {
			t.order = orderSigned
			if strings.Contains(t.decl, "TIMESTAMP") {
				t.kind, t.gen, t.canon = "TIMESTAMP", genTimestamp(tt), canonTimestamp(tt)
			} else {
				t.kind, t.gen, t.canon = "TIME", genTime(tt), canonTimeOf(tt)
			}
		}
		switch t.physical {
		case meta.TypeInt32, meta.TypeInt64:
			t.bloomOK = t.kind == "" || t.kind == "DATE" || t.kind == "TIMESTAMP"
		}
	}
	return ts
}

// pick returns one of the edge values with probability 1/4, else nil.
func pick(r *rand.Rand, edges ...any) any {
	if r.IntN(4) == 0 {
		return edges[r.IntN(len(edges))]
	}
	return nil
}

func genBool(r *rand.Rand) any { return r.IntN(2) == 0 }

func canonBool(raw json.RawMessage) (string, error) {
	switch s := string(raw); s {
	case "true", "false":
		return s, nil
	}
	return "", fmt.Errorf("not a boolean: %s", raw)
}

// genInt returns integers in [lo, hi], written as JSON numbers, sometimes
// with an exponent or a zero fraction, which are still integers.
func genInt(lo, hi int64) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		if e := pick(r, lo, hi, int64(0), int64(-1), int64(1)); e != nil {
			return json.Number(strconv.FormatInt(e.(int64), 10))
		}
		var v int64
		if span := uint64(hi) - uint64(lo); span == math.MaxUint64 {
			v = int64(r.Uint64())
		} else {
			v = lo + int64(r.Uint64N(span+1))
		}
		if r.IntN(10) == 0 && v%100 == 0 && v != 0 {
			return json.Number(strconv.FormatInt(v/100, 10) + "e2")
		}
		return json.Number(strconv.FormatInt(v, 10))
	}
}

func genUint(hi uint64) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		if e := pick(r, uint64(0), hi, hi-1, uint64(1)); e != nil {
			return json.Number(strconv.FormatUint(e.(uint64), 10))
		}
		if hi == math.MaxUint64 {
			return json.Number(strconv.FormatUint(r.Uint64(), 10))
		}
		return json.Number(strconv.FormatUint(r.Uint64N(hi+1), 10))
	}
}

// canonInt reads an integral JSON number exactly (1e2 and 1.0 included).
func canonInt(raw json.RawMessage) (string, error) {
	v, ok := new(big.Rat).SetString(string(raw))
	if !ok || !v.IsInt() {
		return "", fmt.Errorf("not an integer: %s", raw)
	}
	return v.Num().String(), nil
}

var floatEdges = []any{"NaN", "Infinity", "-Infinity", json.Number("-0.0"), json.Number("0"),
	json.Number("1e-45"), json.Number("3.4028234663852886e38"), json.Number("-1.5")}

var doubleEdges = []any{"NaN", "Infinity", "-Infinity", json.Number("-0.0"), json.Number("0"),
	json.Number("5e-324"), json.Number("1.7976931348623157e308"), json.Number("-2.5e-300")}

func genFloat(bits int) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		edges := doubleEdges
		if bits == 32 {
			edges = floatEdges
		}
		if e := pick(r, edges...); e != nil {
			return e
		}
		v := (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(20)-10))
		if bits == 32 {
			v = float64(float32(v))
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, bits))
	}
}

// genFloat16 returns numbers that FLOAT16 holds exactly, so that rounding
// is not in question: k/1024 for |k| < 2048, powers of two down to the
// smallest subnormal, and the largest finite value.
func genFloat16(r *rand.Rand) any {
	if e := pick(r, "NaN", "Infinity", "-Infinity", json.Number("-0"), json.Number("65504"),
		json.Number("-65504"), json.Number("5.960464477539063e-08"), json.Number("6.103515625e-05")); e != nil {
		return e
	}
	v := float64(r.IntN(4095)-2047) / 1024 * math.Pow(2, float64(r.IntN(20)-5))
	return json.Number(strconv.FormatFloat(v, 'g', -1, 64))
}

// canonFloat parses a JSON number (or "NaN"/"Infinity"/"-Infinity") to the
// nearest value of the width, as the shredder does, and renders it.
func canonFloat(bits int) func(json.RawMessage) (string, error) {
	return func(raw json.RawMessage) (string, error) {
		s := string(raw)
		if strings.HasPrefix(s, `"`) {
			s = strings.Trim(s, `"`)
		}
		v, err := strconv.ParseFloat(s, bits)
		if err != nil && !(s == "NaN" || s == "Infinity" || s == "-Infinity") {
			return "", fmt.Errorf("not a float: %s", raw)
		}
		return formatFloat(v, bits), nil
	}
}

// formatFloat is the canonical text of a float of the given width.
func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0 && math.Signbit(v):
		return "-0"
	}
	return strconv.FormatFloat(v, 'g', -1, bits)
}

// genString mixes ASCII, multi-byte UTF-8, the empty string, and strings
// longer than the 64-byte statistics truncation.
func genString(r *rand.Rand) any {
	if e := pick(r, "", "ä", "\u00ff\u00ff", "zzzz", strings.Repeat("x", 100), strings.Repeat("\u00e9", 70)+"!", "a\"b\\c\n"); e != nil {
		return e
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABC0123456789 éß€😀"
	runes := []rune(alphabet)
	n := r.IntN(12)
	if r.IntN(8) == 0 {
		n = 60 + r.IntN(40)
	}
	var b strings.Builder
	for range n {
		b.WriteRune(runes[r.IntN(len(runes))])
	}
	return b.String()
}

func canonString(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("not a string: %s", raw)
	}
	return s, nil
}

func genEnum(r *rand.Rand) any {
	return []string{"RED", "GREEN", "BLUE", "ULTRAVIOLET"}[r.IntN(4)]
}

// genJSON returns JSON documents, some as strings holding JSON text (stored
// as written) and some as JSON values (stored as compact text).
func genJSON(r *rand.Rand) any {
	docs := []string{`{"a":1,"b":[true,null,"x"]}`, `[1, 2.5, "three"]`, `"just a string"`, `42`, `null`, `{"z":{"y":{}}}`}
	d := docs[r.IntN(len(docs))]
	// A JSON null would be a null field, and a JSON string is read as
	// holding JSON text: those two are always written as strings.
	if r.IntN(2) == 0 || d == "null" || strings.HasPrefix(d, `"`) {
		return d
	}
	return json.RawMessage(d)
}

// canonJSON is the stored text: a string's content as is, any other value
// compacted.
func canonJSON(raw json.RawMessage) (string, error) {
	if strings.HasPrefix(string(raw), `"`) {
		return canonString(raw)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

func genBytes(lo, hi int) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		b := make([]byte, lo+r.IntN(hi-lo+1))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if len(b) > 0 && r.IntN(5) == 0 {
			b[0] = 0xff // orders after every other first byte, unsigned
		}
		return base64.StdEncoding.EncodeToString(b)
	}
}

// canonBase64 checks the base64 text and keeps it; encoding/base64 output is
// the one canonical spelling.
func canonBase64(raw json.RawMessage) (string, error) {
	s, err := canonString(raw)
	if err != nil {
		return "", err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func genUUID(r *rand.Rand) any {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	s := formatUUID(b[:])
	if r.IntN(3) == 0 {
		s = strings.ToUpper(s) // accepted; canonical is lower case
	}
	return s
}

func formatUUID(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func canonUUID(raw json.RawMessage) (string, error) {
	s, err := canonString(raw)
	return strings.ToLower(s), err
}

// genDecimal returns values with up to precision digits, as numbers or
// numeric strings, with fewer fraction digits than the scale at times
// (12.5 in a scale-4 column is 12.5000) and with exponents.
func genDecimal(d *decimalType) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		maxDigits := strings.Repeat("9", d.precision)
		if e := pick(r, "0", maxDigits, "-"+maxDigits); e != nil {
			s := e.(string)
			if len(s) > 1 {
				s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
				if strings.HasPrefix(s, "-.") || strings.HasPrefix(s, ".") {
					s = strings.Replace(s, ".", "0.", 1)
				}
			}
			return json.Number(s)
		}
		n := 1 + r.IntN(d.precision)
		var b strings.Builder
		if r.IntN(2) == 0 {
			b.WriteByte('-')
		}
		b.WriteByte(byte('1' + r.IntN(9)))
		for i := 1; i < n; i++ {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		unscaled, _ := new(big.Int).SetString(b.String(), 10)
		v := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale)), nil))
		s := v.FloatString(d.scale)
		if strings.Contains(s, ".") && r.IntN(2) == 0 {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		switch r.IntN(3) {
		case 0:
			return s // numeric string
		case 1:
			if !strings.Contains(s, ".") && len(s) > 3 && strings.HasSuffix(s, "000") {
				return json.Number(s[:len(s)-3] + "e3")
			}
		}
		return json.Number(s)
	}
}

func canonDecimal(d *decimalType) func(json.RawMessage) (string, error) {
	return func(raw json.RawMessage) (string, error) {
		s := strings.Trim(string(raw), `"`)
		v, ok := new(big.Rat).SetString(s)
		if !ok {
			return "", fmt.Errorf("not a decimal: %s", raw)
		}
		return v.FloatString(d.scale), nil
	}
}

var epoch = time.Unix(0, 0).UTC()

func genDate(r *rand.Rand) any {
	if e := pick(r, "1970-01-01", "0001-01-01", "9999-12-31", "2000-02-29", "1969-12-31"); e != nil {
		return e
	}
	days := r.IntN(200000) - 100000
	if r.IntN(4) == 0 {
		return json.Number(strconv.Itoa(days))
	}
	return epoch.AddDate(0, 0, days).Format(time.DateOnly)
}

func canonDate(raw json.RawMessage) (string, error) {
	if !strings.HasPrefix(string(raw), `"`) {
		n, err := strconv.Atoi(string(raw))
		if err != nil {
			return "", err
		}
		return epoch.AddDate(0, 0, n).Format(time.DateOnly), nil
	}
	s, _ := canonString(raw)
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return "", err
	}
	return t.Format(time.DateOnly), nil
}

// genTime returns times of day at the unit's precision, as strings with a
// varying number of fraction digits or as integers in the unit.
func genTime(tt *timeType) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		per := tt.perSecond()
		v := r.Int64N(86400 * per)
		if e := pick(r, int64(0), 86400*per-1, per); e != nil {
			v = e.(int64)
		}
		if r.IntN(3) == 0 {
			return json.Number(strconv.FormatInt(v, 10))
		}
		return formatClock(v*(1e9/per), r.IntN(2) == 0)
	}
}

// formatClock renders nanoseconds of the day, with 9 fraction digits or
// with trailing zeros (and an empty fraction) dropped.
func formatClock(nanos int64, trim bool) string {
	sec := nanos / 1e9
	s := fmt.Sprintf("%02d:%02d:%02d.%09d", sec/3600, sec/60%60, sec%60, nanos%1e9)
	if trim {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// canonTimeOf renders a TIME input in its unit as HH:MM:SS.nnnnnnnnn.
func canonTimeOf(tt *timeType) func(json.RawMessage) (string, error) {
	return func(raw json.RawMessage) (string, error) {
		if !strings.HasPrefix(string(raw), `"`) {
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return "", err
			}
			return formatClock(v*(1e9/tt.perSecond()), false), nil
		}
		s, _ := canonString(raw)
		t, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return "", err
		}
		return formatClock(int64(t.Hour()*3600+t.Minute()*60+t.Second())*1e9+int64(t.Nanosecond()), false), nil
	}
}

// tsMin and tsMax bound generated timestamps to what INT64 nanoseconds
// hold, so that every unit takes the same instants.
var (
	tsMin = time.Date(1678, 1, 1, 0, 0, 0, 0, time.UTC)
	tsMax = time.Date(2261, 12, 31, 0, 0, 0, 0, time.UTC)
)

// genTimestamp returns instants at the unit's precision: RFC 3339 strings
// with an offset for UTC-adjusted columns (which normalize them), without
// one for local columns, or integers in the unit.
func genTimestamp(tt *timeType) func(*rand.Rand) any {
	return func(r *rand.Rand) any {
		per := tt.perSecond()
		span := tsMax.Unix() - tsMin.Unix()
		t := time.Unix(tsMin.Unix()+r.Int64N(span), r.Int64N(1e9)/(1e9/per)*(1e9/per)).UTC()
		if e := pick(r, epoch, epoch.Add(-time.Duration(1e9/per)), time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)); e != nil {
			t = e.(time.Time)
		}
		if r.IntN(4) == 0 {
			return json.Number(strconv.FormatInt(unitsSinceEpoch(t, per), 10))
		}
		if !tt.utc {
			return t.Format("2006-01-02T15:04:05.999999999")
		}
		zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("", -8*3600)}
		return t.In(zones[r.IntN(len(zones))]).Format(time.RFC3339Nano)
	}
}

func unitsSinceEpoch(t time.Time, per int64) int64 {
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	return sec*per + nsec/(1e9/per)
}

// fromUnits converts a count of units since the epoch to a time, exactly.
func fromUnits(v, per int64) time.Time {
	sec, rem := v/per, v%per
	if rem < 0 {
		sec, rem = sec-1, rem+per
	}
	return time.Unix(sec, rem*(1e9/per)).UTC()
}

func canonTimestamp(tt *timeType) func(json.RawMessage) (string, error) {
	return func(raw json.RawMessage) (string, error) {
		if !strings.HasPrefix(string(raw), `"`) {
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return "", err
			}
			return formatInstant(fromUnits(v, tt.perSecond()), tt.utc), nil
		}
		s, _ := canonString(raw)
		layout := "2006-01-02T15:04:05.999999999Z07:00"
		if !tt.utc && !strings.HasSuffix(s, "Z") {
			layout = "2006-01-02T15:04:05.999999999"
		}
		t, err := time.Parse(layout, s)
		if err != nil {
			return "", err
		}
		return formatInstant(t, tt.utc), nil
	}
}

// formatInstant renders a timestamp with nanoseconds; instants end in Z,
// local date-times don't.
func formatInstant(t time.Time, utc bool) string {
	s := t.UTC().Format("2006-01-02T15:04:05.000000000")
	if utc {
		s += "Z"
	}
	return s
}

func genInterval(r *rand.Rand) any {
	m := map[string]any{}
	for _, k := range []string{"months", "days", "millis"} {
		if r.IntN(4) != 0 {
			// DuckDB holds months and days in int32, so stay below 2^31.
			m[k] = r.Int64N(1 << 31)
		}
	}
	return m
}

func canonInterval(raw json.RawMessage) (string, error) {
	var v struct{ Months, Days, Millis uint32 }
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	return formatInterval(v.Months, v.Days, v.Millis), nil
}

func formatInterval(months, days, millis uint32) string {
	return fmt.Sprintf("%dm%dd%dms", months, days, millis)
}

// genInt96 returns RFC 3339 instants with nanoseconds, some with offsets.
func genInt96(r *rand.Rand) any {
	for {
		if s, ok := genTimestamp(&timeType{"NANOS", true})(r).(string); ok {
			return s
		}
	}
}

func canonInt96(raw json.RawMessage) (string, error) {
	if !strings.HasPrefix(string(raw), `"`) {
		return "", fmt.Errorf("INT96 takes only strings: %s", raw)
	}
	return canonTimestamp(&timeType{"NANOS", true})(raw)
}
