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
)

// RecordSchemaKey reports whether a footer key is one of a records'
// schema: AvroSchemaKey, or a key that begins with JSONSchemaPrefix or
// ProtobufSchemaPrefix.
func RecordSchemaKey(key string) bool {
	return key == AvroSchemaKey || strings.HasPrefix(key, JSONSchemaPrefix) || strings.HasPrefix(key, ProtobufSchemaPrefix)
}
