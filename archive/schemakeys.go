package archive

import "strings"

// Footer keys of a file's records' schema. A file the sink wrote from
// records with a schema of their own carries that schema in its footer,
// so that replay can produce the records again in their wire format; a
// file another engine rewrote loses these entries and is lent them from a
// sink file of the same columns (envelope.SchemaEntries). They are
// declared here, once, so that the archive's readers (envelope, merge,
// compact) need no format package to tell them apart; each format package
// declares its own keys too, and its tests check them against these.
const (
	// AvroSchemaKey holds the Avro schema of the records, as parquet-java
	// writes it (schema/avro.MetadataKey).
	AvroSchemaKey = "avro.schema"
	// JSONSchemaPrefix begins the keys of a JSON Schema: the root schema's
	// text under the prefix itself (schema/jsonschema.MetadataKey), its
	// references and registry id under longer keys.
	JSONSchemaPrefix = "json.schema"
	// ProtobufSchemaPrefix begins the keys of a Protobuf records' schema:
	// the message's name (schema/protobuf.MessageKey), and the registry's
	// schema id and message indexes.
	ProtobufSchemaPrefix = "pqsink.protobuf."
	// ProtobufSchemaIDKey holds the Schema Registry's id of the schema
	// that a file's registry Protobuf records were written with.
	ProtobufSchemaIDKey = ProtobufSchemaPrefix + "schema_id"
	// ProtobufIndexesKey holds the message indexes (comma-separated) that
	// name the records' message type in that schema, so that replay can
	// write each record's Confluent header again.
	ProtobufIndexesKey = ProtobufSchemaPrefix + "message_indexes"
)

// JSONTimestampUnitsKey is the footer entry of a table's file of JSON
// records with a schema file whose millisecond (or nanosecond) timestamps
// and millisecond times of day the file holds in microseconds: a JSON
// object from each such column's path to the schema file's unit, "MILLIS"
// or "NANOS". Replay renders those columns in the schema file's unit, and
// compaction carries the entry into the files it writes. It is not a
// records' schema key (RecordSchemaKey): it describes the file's columns,
// and a file another engine rewrote, which lacks it, holds no such column.
const JSONTimestampUnitsKey = "pqsink.json.timestamp_units"

// RecordSchemaKey reports whether a footer key is one of a records'
// schema: AvroSchemaKey, or a key that begins with JSONSchemaPrefix or
// ProtobufSchemaPrefix.
func RecordSchemaKey(key string) bool {
	return key == AvroSchemaKey || strings.HasPrefix(key, JSONSchemaPrefix) || strings.HasPrefix(key, ProtobufSchemaPrefix)
}
