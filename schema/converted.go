package schema

import (
	"fmt"

	"github.com/pqsink/pqsink/meta"
)

// convertedNames are the message-syntax names of the legacy ConvertedType
// annotations, as parquet-java prints them.
var convertedNames = map[meta.ConvertedType]string{
	meta.ConvertedUTF8:            "UTF8",
	meta.ConvertedMap:             "MAP",
	meta.ConvertedMapKeyValue:     "MAP_KEY_VALUE",
	meta.ConvertedList:            "LIST",
	meta.ConvertedEnum:            "ENUM",
	meta.ConvertedDecimal:         "DECIMAL",
	meta.ConvertedDate:            "DATE",
	meta.ConvertedTimeMillis:      "TIME_MILLIS",
	meta.ConvertedTimeMicros:      "TIME_MICROS",
	meta.ConvertedTimestampMillis: "TIMESTAMP_MILLIS",
	meta.ConvertedTimestampMicros: "TIMESTAMP_MICROS",
	meta.ConvertedUint8:           "UINT_8",
	meta.ConvertedUint16:          "UINT_16",
	meta.ConvertedUint32:          "UINT_32",
	meta.ConvertedUint64:          "UINT_64",
	meta.ConvertedInt8:            "INT_8",
	meta.ConvertedInt16:           "INT_16",
	meta.ConvertedInt32:           "INT_32",
	meta.ConvertedInt64:           "INT_64",
	meta.ConvertedJSON:            "JSON",
	meta.ConvertedBSON:            "BSON",
	meta.ConvertedInterval:        "INTERVAL",
}

func convertedName(c meta.ConvertedType) string {
	if s, ok := convertedNames[c]; ok {
		return s
	}
	return fmt.Sprintf("ConvertedType(%d)", int(c))
}

// fromConverted returns the logical type a legacy ConvertedType implies, per
// the backward-compatibility tables of LogicalTypes.md. Decimal takes its
// precision and scale from the element. ok is false for MAP_KEY_VALUE, which
// has no logical counterpart, and for unknown values.
func fromConverted(c meta.ConvertedType, precision, scale int32) (l Logical, ok bool) {
	switch c {
	case meta.ConvertedUTF8:
		return Logical{Kind: String}, true
	case meta.ConvertedMap:
		return Logical{Kind: Map}, true
	case meta.ConvertedList:
		return Logical{Kind: List}, true
	case meta.ConvertedEnum:
		return Logical{Kind: Enum}, true
	case meta.ConvertedDecimal:
		return Logical{Kind: Decimal, Precision: precision, Scale: scale}, true
	case meta.ConvertedDate:
		return Logical{Kind: Date}, true
	case meta.ConvertedTimeMillis:
		return Logical{Kind: Time, Unit: Millis, UTC: true}, true
	case meta.ConvertedTimeMicros:
		return Logical{Kind: Time, Unit: Micros, UTC: true}, true
	case meta.ConvertedTimestampMillis:
		return Logical{Kind: Timestamp, Unit: Millis, UTC: true}, true
	case meta.ConvertedTimestampMicros:
		return Logical{Kind: Timestamp, Unit: Micros, UTC: true}, true
	case meta.ConvertedUint8:
		return Logical{Kind: Int, BitWidth: 8}, true
	case meta.ConvertedUint16:
		return Logical{Kind: Int, BitWidth: 16}, true
	case meta.ConvertedUint32:
		return Logical{Kind: Int, BitWidth: 32}, true
	case meta.ConvertedUint64:
		return Logical{Kind: Int, BitWidth: 64}, true
	case meta.ConvertedInt8:
		return Logical{Kind: Int, BitWidth: 8, Signed: true}, true
	case meta.ConvertedInt16:
		return Logical{Kind: Int, BitWidth: 16, Signed: true}, true
	case meta.ConvertedInt32:
		return Logical{Kind: Int, BitWidth: 32, Signed: true}, true
	case meta.ConvertedInt64:
		return Logical{Kind: Int, BitWidth: 64, Signed: true}, true
	case meta.ConvertedJSON:
		return Logical{Kind: JSON}, true
	case meta.ConvertedBSON:
		return Logical{Kind: BSON}, true
	case meta.ConvertedInterval:
		return Logical{Kind: Interval}, true
	}
	return Logical{}, false
}

// Converted returns the legacy ConvertedType that writers must store beside
// l, per the forward-compatibility tables of LogicalTypes.md and the
// comments of LogicalType in parquet.thrift. ok is false for the kinds that
// have none: UUID, FLOAT16, UNKNOWN, VARIANT, GEOMETRY, GEOGRAPHY, and TIME
// or TIMESTAMP in NANOS. TIME and TIMESTAMP in MILLIS or MICROS map to the
// legacy annotation whether or not they are adjusted to UTC. For DECIMAL the
// element also carries precision and scale.
func (l Logical) Converted() (c meta.ConvertedType, ok bool) {
	switch l.Kind {
	case String:
		return meta.ConvertedUTF8, true
	case Map:
		return meta.ConvertedMap, true
	case List:
		return meta.ConvertedList, true
	case Enum:
		return meta.ConvertedEnum, true
	case Decimal:
		return meta.ConvertedDecimal, true
	case Date:
		return meta.ConvertedDate, true
	case Time:
		switch l.Unit {
		case Millis:
			return meta.ConvertedTimeMillis, true
		case Micros:
			return meta.ConvertedTimeMicros, true
		}
	case Timestamp:
		switch l.Unit {
		case Millis:
			return meta.ConvertedTimestampMillis, true
		case Micros:
			return meta.ConvertedTimestampMicros, true
		}
	case Int:
		var signed, unsigned meta.ConvertedType
		switch l.BitWidth {
		case 8:
			signed, unsigned = meta.ConvertedInt8, meta.ConvertedUint8
		case 16:
			signed, unsigned = meta.ConvertedInt16, meta.ConvertedUint16
		case 32:
			signed, unsigned = meta.ConvertedInt32, meta.ConvertedUint32
		case 64:
			signed, unsigned = meta.ConvertedInt64, meta.ConvertedUint64
		default:
			return 0, false
		}
		if l.Signed {
			return signed, true
		}
		return unsigned, true
	case JSON:
		return meta.ConvertedJSON, true
	case BSON:
		return meta.ConvertedBSON, true
	case Interval:
		return meta.ConvertedInterval, true
	}
	return 0, false
}
