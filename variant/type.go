package variant

import "fmt"

// Type is the type of a Variant value as seen by readers. Short strings
// and long strings are both String; true and false are both Boolean.
type Type uint8

// Variant types.
const (
	Invalid Type = iota
	Null
	Boolean
	Int8
	Int16
	Int32
	Int64
	Double
	Decimal4
	Decimal8
	Decimal16
	Date
	Timestamp    // microseconds since the epoch, UTC
	TimestampNTZ // microseconds since the epoch, no time zone
	Float
	Binary
	String
	TimeNTZ        // microseconds since midnight, no time zone
	TimestampNanos // nanoseconds since the epoch, UTC
	TimestampNTZNanos
	UUID
	Object
	Array
)

var typeNames = [...]string{
	Invalid:           "invalid",
	Null:              "null",
	Boolean:           "boolean",
	Int8:              "int8",
	Int16:             "int16",
	Int32:             "int32",
	Int64:             "int64",
	Double:            "double",
	Decimal4:          "decimal4",
	Decimal8:          "decimal8",
	Decimal16:         "decimal16",
	Date:              "date",
	Timestamp:         "timestamp",
	TimestampNTZ:      "timestamp_ntz",
	Float:             "float",
	Binary:            "binary",
	String:            "string",
	TimeNTZ:           "time_ntz",
	TimestampNanos:    "timestamp_nanos",
	TimestampNTZNanos: "timestamp_ntz_nanos",
	UUID:              "uuid",
	Object:            "object",
	Array:             "array",
}

// String returns the lower-case name of the type.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Type(%d)", t)
}

// Basic types: the low two bits of a value's first byte.
const (
	basicPrimitive   = 0
	basicShortString = 1
	basicObject      = 2
	basicArray       = 3
)

// Primitive type ids, from the spec's primitive type table.
const (
	primNull              = 0
	primTrue              = 1
	primFalse             = 2
	primInt8              = 3
	primInt16             = 4
	primInt32             = 5
	primInt64             = 6
	primDouble            = 7
	primDecimal4          = 8
	primDecimal8          = 9
	primDecimal16         = 10
	primDate              = 11
	primTimestamp         = 12
	primTimestampNTZ      = 13
	primFloat             = 14
	primBinary            = 15
	primString            = 16
	primTimeNTZ           = 17
	primTimestampNanos    = 18
	primTimestampNTZNanos = 19
	primUUID              = 20
	numPrims              = 21
)

// primTypes maps a primitive type id to its Type.
var primTypes = [numPrims]Type{
	Null, Boolean, Boolean, Int8, Int16, Int32, Int64, Double,
	Decimal4, Decimal8, Decimal16, Date, Timestamp, TimestampNTZ, Float,
	Binary, String, TimeNTZ, TimestampNanos, TimestampNTZNanos, UUID,
}

// primSizes is the size of a primitive's value data; -1 for the
// length-prefixed binary and string.
var primSizes = [numPrims]int{
	0, 0, 0, 1, 2, 4, 8, 8,
	5, 9, 17, 4, 8, 8, 4,
	-1, -1, 8, 8, 8, 16,
}

// primitiveHeader is the first byte of a primitive value of type id.
func primitiveHeader(id byte) byte { return id<<2 | basicPrimitive }
