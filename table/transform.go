package table

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// The sink computes each partition value itself, per record, so that it
// can put it in the file's path (a file holds one partition tuple). The
// transforms below follow Iceberg's specification ("Partition
// Transforms", "Bucket Transform Details") on a value in Iceberg's
// single-value serialization; the tests hold them to iceberg-go's own.

// transform is one partition field's transform of a source column of
// Iceberg type src.
type transform struct {
	name  string // identity, bucket, truncate, year, month, day, hour
	param int    // N of bucket[N], W of truncate[W]
	src   iceberg.Type
}

// newTransform checks that tr applies to src and is one the sink computes.
func newTransform(tr iceberg.Transform, src iceberg.Type) (transform, error) {
	t := transform{src: src}
	switch x := tr.(type) {
	case iceberg.IdentityTransform:
		t.name = "identity"
	case iceberg.BucketTransform:
		t.name, t.param = "bucket", x.NumBuckets
	case iceberg.TruncateTransform:
		t.name, t.param = "truncate", x.Width
	case iceberg.YearTransform:
		t.name = "year"
	case iceberg.MonthTransform:
		t.name = "month"
	case iceberg.DayTransform:
		t.name = "day"
	case iceberg.HourTransform:
		t.name = "hour"
	default:
		return t, fmt.Errorf("transform %s is not one the sink computes", tr)
	}
	if !tr.CanTransform(src) {
		return t, fmt.Errorf("%s cannot transform a column of type %s", tr, src)
	}
	if t.param < 1 && (t.name == "bucket" || t.name == "truncate") {
		return t, fmt.Errorf("%s: the width must be positive", tr)
	}
	if t.name == "identity" && !canRender(src) {
		return t, fmt.Errorf("identity of a column of type %s cannot be put in a path", src)
	}
	return t, nil
}

// canRender says whether the identity of a value of type t has a path
// text that parsePathValue reads back.
func canRender(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType,
		iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType,
		iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType, iceberg.DecimalType,
		iceberg.Float32Type, iceberg.Float64Type:
		return true
	}
	return false
}

// errBadValue is a source value whose serialization does not fit its type.
var errBadValue = errors.New("value does not fit the column's type")

// apply returns the partition value of v, a value of t.src in Iceberg's
// single-value serialization, as its path text: Iceberg's human-readable
// form of the transform's result (what Iceberg's Java writers put in a
// path), e.g. "3" for a bucket, "2026-11-27" for a day, "DE" for a
// truncated string, "12.30" for a decimal, base64 for binary.
func (t transform) apply(v []byte) (string, error) {
	if _, ok := t.src.(iceberg.DecimalType); ok && len(toTwos(fromTwos(v))) > 16 {
		return "", fmt.Errorf("decimal wider than 128 bits: %w", errBadValue)
	}
	switch t.name {
	case "bucket":
		h, err := bucketHash(t.src, v)
		if err != nil {
			return "", err
		}
		return strconv.Itoa(int(h&math.MaxInt32) % t.param), nil
	case "truncate":
		return t.truncate(v)
	case "year", "month", "day", "hour":
		return t.timeUnit(v)
	}
	return renderValue(t.src, v)
}

// bucketHash is the 32-bit Murmur3 (x86 variant, seed 0) of the value as
// the specification hashes it: integers, dates, times and timestamps as
// the 8 little-endian bytes of a long (timestamps in nanoseconds first
// floored to microseconds), decimals as the shortest big-endian two's
// complement of the unscaled value, strings as UTF-8, UUIDs as their 16
// bytes, binary and fixed as they are.
func bucketHash(t iceberg.Type, v []byte) (uint32, error) {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.DateType:
		if len(v) != 4 {
			return 0, errBadValue
		}
		return hashLong(int64(int32(binary.LittleEndian.Uint32(v)))), nil
	case iceberg.Int64Type, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType:
		if len(v) != 8 {
			return 0, errBadValue
		}
		return hashLong(int64(binary.LittleEndian.Uint64(v))), nil
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if len(v) != 8 {
			return 0, errBadValue
		}
		return hashLong(floorDiv(int64(binary.LittleEndian.Uint64(v)), 1000)), nil
	case iceberg.DecimalType:
		return murmur3(toTwos(fromTwos(v))), nil
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return murmur3(v), nil
	}
	return 0, fmt.Errorf("bucket of type %s", t)
}

func hashLong(x int64) uint32 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(x))
	return murmur3(b[:])
}

// murmur3 is MurmurHash3's x86 32-bit hash of b with seed 0.
func murmur3(b []byte) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	var h uint32
	n := len(b)
	for ; len(b) >= 4; b = b[4:] {
		k := binary.LittleEndian.Uint32(b)
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch len(b) {
	case 3:
		k ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		k ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		k ^= uint32(b[0])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// floorDiv is x/d rounded towards negative infinity.
func floorDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 && (x < 0) != (d < 0) {
		q--
	}
	return q
}

// truncate is truncate[W]: integers and decimals (their unscaled value)
// down to a multiple of W, v - (((v % W) + W) % W); strings to their first
// W code points; binary to its first W bytes.
func (t transform) truncate(v []byte) (string, error) {
	w := int64(t.param)
	switch tt := t.src.(type) {
	case iceberg.Int32Type:
		if len(v) != 4 {
			return "", errBadValue
		}
		x := int64(int32(binary.LittleEndian.Uint32(v)))
		// In 32 bits, as the specification computes an int's: the result
		// may wrap below math.MinInt32.
		return strconv.Itoa(int(int32(x - ((x%w)+w)%w))), nil
	case iceberg.Int64Type:
		if len(v) != 8 {
			return "", errBadValue
		}
		x := int64(binary.LittleEndian.Uint64(v))
		return strconv.FormatInt(x-((x%w)+w)%w, 10), nil
	case iceberg.DecimalType:
		x := fromTwos(v)
		bw := big.NewInt(w)
		r := new(big.Int).Mod(x, bw) // Euclidean: 0 <= r < w
		if x.Sub(x, r); len(toTwos(x)) > 16 {
			return "", fmt.Errorf("truncated decimal wider than 128 bits: %w", errBadValue)
		}
		return renderDecimal(x, tt.Scale()), nil
	case iceberg.StringType:
		s, n := string(v), t.param
		for i := range s {
			if n == 0 {
				return s[:i], nil
			}
			n--
		}
		return s, nil
	case iceberg.BinaryType:
		return base64.StdEncoding.EncodeToString(v[:min(len(v), t.param)]), nil
	}
	return "", fmt.Errorf("truncate of type %s", t.src)
}

// timeUnit is year, month, day or hour of a date or timestamp: the whole
// units since 1970-01-01T00:00 UTC, floored, written as a date.
func (t transform) timeUnit(v []byte) (string, error) {
	var at time.Time
	switch t.src.(type) {
	case iceberg.DateType:
		if len(v) != 4 || t.name == "hour" {
			return "", errBadValue
		}
		at = time.Unix(int64(int32(binary.LittleEndian.Uint32(v)))*86400, 0).UTC()
	case iceberg.TimestampType, iceberg.TimestampTzType:
		if len(v) != 8 {
			return "", errBadValue
		}
		us := int64(binary.LittleEndian.Uint64(v))
		at = time.Unix(floorDiv(us, 1e6), 0).UTC()
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if len(v) != 8 {
			return "", errBadValue
		}
		ns := int64(binary.LittleEndian.Uint64(v))
		at = time.Unix(floorDiv(ns, 1e9), 0).UTC()
	default:
		return "", fmt.Errorf("%s of type %s", t.name, t.src)
	}
	if err := pathYear(at); err != nil {
		return "", err
	}
	switch t.name {
	case "year":
		return strconv.Itoa(at.Year()), nil
	case "month":
		return at.Format("2006-01"), nil
	case "day":
		return at.Format("2006-01-02"), nil
	}
	return at.Format("2006-01-02-15"), nil
}

// pathYear refuses a time whose year a path cannot write as four digits
// and read back: a record with such a time has no partition value the
// sink can put in a path (it is rejected, reason path).
func pathYear(at time.Time) error {
	if y := at.UTC().Year(); y < 0 || y > 9999 {
		return fmt.Errorf("year %d is outside 0000 to 9999: %w", y, errBadValue)
	}
	return nil
}

// Layouts of the human-readable forms of times.
const (
	timeLayout    = "15:04:05.999999"
	tsLayout      = "2006-01-02T15:04:05.999999"
	tsNanosLayout = "2006-01-02T15:04:05.999999999"
	utcSuffix     = "+00:00"
)

// renderValue writes a value of type t (single-value serialization) in
// Iceberg's human-readable form, as an identity partition value.
func renderValue(t iceberg.Type, v []byte) (string, error) {
	want := map[string]int{"boolean": 1, "int": 4, "date": 4, "float": 4, "double": 8, "long": 8, "time": 8, "timestamp": 8, "timestamptz": 8, "timestamp_ns": 8, "timestamptz_ns": 8, "uuid": 16}
	if n, ok := want[t.String()]; ok && len(v) != n {
		return "", errBadValue
	}
	switch t.(type) {
	case iceberg.DateType:
		if err := pathYear(time.Unix(int64(int32(binary.LittleEndian.Uint32(v)))*86400, 0)); err != nil {
			return "", err
		}
	case iceberg.TimeType:
		if us := int64(binary.LittleEndian.Uint64(v)); us < 0 || us >= 86400e6 {
			return "", fmt.Errorf("time %d µs: %w", us, errBadValue)
		}
	case iceberg.TimestampType, iceberg.TimestampTzType:
		if err := pathYear(time.UnixMicro(int64(binary.LittleEndian.Uint64(v)))); err != nil {
			return "", err
		}
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		if err := pathYear(time.Unix(0, int64(binary.LittleEndian.Uint64(v)))); err != nil {
			return "", err
		}
	}
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return strconv.FormatBool(v[0] != 0), nil
	case iceberg.Int32Type:
		return strconv.Itoa(int(int32(binary.LittleEndian.Uint32(v)))), nil
	case iceberg.Int64Type:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(v)), 10), nil
	case iceberg.Float32Type:
		return strconv.FormatFloat(float64(math.Float32frombits(binary.LittleEndian.Uint32(v))), 'g', -1, 32), nil
	case iceberg.Float64Type:
		return strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64), nil
	case iceberg.DateType:
		return time.Unix(int64(int32(binary.LittleEndian.Uint32(v)))*86400, 0).UTC().Format("2006-01-02"), nil
	case iceberg.TimeType:
		return time.UnixMicro(int64(binary.LittleEndian.Uint64(v))).UTC().Format(timeLayout), nil
	case iceberg.TimestampType:
		return time.UnixMicro(int64(binary.LittleEndian.Uint64(v))).UTC().Format(tsLayout), nil
	case iceberg.TimestampTzType:
		return time.UnixMicro(int64(binary.LittleEndian.Uint64(v))).UTC().Format(tsLayout) + utcSuffix, nil
	case iceberg.TimestampNsType:
		return time.Unix(0, int64(binary.LittleEndian.Uint64(v))).UTC().Format(tsNanosLayout), nil
	case iceberg.TimestampTzNsType:
		return time.Unix(0, int64(binary.LittleEndian.Uint64(v))).UTC().Format(tsNanosLayout) + utcSuffix, nil
	case iceberg.StringType:
		return string(v), nil
	case iceberg.BinaryType, iceberg.FixedType:
		return base64.StdEncoding.EncodeToString(v), nil
	case iceberg.UUIDType:
		h := hex.EncodeToString(v)
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
	case iceberg.DecimalType:
		return renderDecimal(fromTwos(v), tt.Scale()), nil
	}
	return "", fmt.Errorf("identity of type %s", t)
}

// renderDecimal writes the unscaled value x with scale digits after the
// point ("12.30", "-0.05", "7" for scale 0).
func renderDecimal(x *big.Int, scale int) string {
	neg := x.Sign() < 0
	digits := new(big.Int).Abs(x).String()
	if scale > 0 {
		if len(digits) <= scale {
			digits = strings.Repeat("0", scale-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// parsePathValue reads the path text of a partition value of transform t
// back into the value the table's partition tuple holds (for
// iceberg.NewDataFileBuilder): the inverse of apply's rendering.
func (t transform) parsePathValue(text string) (any, error) {
	bad := func(err error) (any, error) {
		return nil, fmt.Errorf("%q is not a %s value of a %s column: %w", text, t.name, t.src, err)
	}
	switch t.name {
	case "bucket":
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil || n < 0 || n >= int64(t.param) {
			return bad(errBadValue)
		}
		return int32(n), nil
	case "year":
		y, err := strconv.Atoi(text)
		if err != nil {
			return bad(err)
		}
		return int32(y - 1970), nil
	case "month":
		at, err := time.Parse("2006-01", text)
		if err != nil {
			return bad(err)
		}
		return int32((at.Year()-1970)*12 + int(at.Month()) - 1), nil
	case "day":
		at, err := time.Parse("2006-01-02", text)
		if err != nil {
			return bad(err)
		}
		return iceberg.Date(floorDiv(at.Unix(), 86400)), nil
	case "hour":
		at, err := time.Parse("2006-01-02-15", text)
		if err != nil {
			return bad(err)
		}
		return int32(floorDiv(at.Unix(), 3600)), nil
	}
	// identity and truncate keep the source type.
	v, err := parseValue(t.src, text)
	if err != nil {
		return bad(err)
	}
	return v, nil
}

// parseValue reads renderValue's text of a value of type t.
func parseValue(t iceberg.Type, text string) (any, error) {
	parseTime := func(layout string) (time.Time, error) { return time.ParseInLocation(layout, text, time.UTC) }
	switch tt := t.(type) {
	case iceberg.BooleanType:
		return strconv.ParseBool(text)
	case iceberg.Int32Type:
		n, err := strconv.ParseInt(text, 10, 32)
		return int32(n), err
	case iceberg.Int64Type:
		return strconv.ParseInt(text, 10, 64)
	case iceberg.Float32Type:
		f, err := strconv.ParseFloat(text, 32)
		return float32(f), err
	case iceberg.Float64Type:
		return strconv.ParseFloat(text, 64)
	case iceberg.DateType:
		at, err := parseTime("2006-01-02")
		return iceberg.Date(floorDiv(at.Unix(), 86400)), err
	case iceberg.TimeType:
		at, err := parseTime(timeLayout)
		return iceberg.Time(at.Sub(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds()), err
	case iceberg.TimestampType:
		at, err := parseTime(tsLayout)
		return iceberg.Timestamp(at.UnixMicro()), err
	case iceberg.TimestampTzType:
		s, ok := strings.CutSuffix(text, utcSuffix)
		at, err := time.ParseInLocation(tsLayout, s, time.UTC)
		if err == nil && !ok {
			err = errors.New("no +00:00")
		}
		return iceberg.Timestamp(at.UnixMicro()), err
	case iceberg.TimestampNsType:
		at, err := parseTime(tsNanosLayout)
		return iceberg.TimestampNano(at.UnixNano()), err
	case iceberg.TimestampTzNsType:
		s, ok := strings.CutSuffix(text, utcSuffix)
		at, err := time.ParseInLocation(tsNanosLayout, s, time.UTC)
		if err == nil && !ok {
			err = errors.New("no +00:00")
		}
		return iceberg.TimestampNano(at.UnixNano()), err
	case iceberg.StringType:
		return text, nil
	case iceberg.BinaryType, iceberg.FixedType:
		return base64.StdEncoding.DecodeString(text)
	case iceberg.UUIDType:
		b, err := hex.DecodeString(strings.ReplaceAll(text, "-", ""))
		if err != nil || len(b) != 16 || len(text) != 36 {
			return nil, errBadValue
		}
		lit, err := iceberg.LiteralFromBytes(tt, b)
		if err != nil {
			return nil, err
		}
		return lit.Any(), nil
	case iceberg.DecimalType:
		x, err := parseDecimal(text, tt.Scale())
		if err != nil {
			return nil, err
		}
		if len(toTwos(x)) > 16 {
			return nil, fmt.Errorf("decimal wider than 128 bits: %w", errBadValue)
		}
		lit, err := iceberg.LiteralFromBytes(tt, toTwos(x))
		if err != nil {
			return nil, err
		}
		return lit.Any(), nil
	}
	return nil, fmt.Errorf("no path value for type %s", t)
}

// parseDecimal reads renderDecimal's text of a decimal with scale digits
// after the point as its unscaled value.
func parseDecimal(text string, scale int) (*big.Int, error) {
	digits := text
	if scale > 0 {
		i := strings.IndexByte(text, '.')
		if i < 0 || len(text)-i-1 != scale {
			return nil, errBadValue
		}
		digits = text[:i] + text[i+1:]
	}
	x, ok := new(big.Int).SetString(digits, 10)
	if !ok || strings.HasPrefix(digits, "+") {
		return nil, errBadValue
	}
	return x, nil
}
