package avro

import (
	"testing"

	"github.com/pqsink/pqsink/archive"
)

// TestMetadataKeyAgreesWithArchive: archive declares the records' schema
// footer keys for the packages that must not import a format (envelope,
// merge, compact); the key this package writes must be the one they look
// for, or a rewritten file would be lent no schema.
func TestMetadataKeyAgreesWithArchive(t *testing.T) {
	if MetadataKey != archive.AvroSchemaKey {
		t.Errorf("MetadataKey %q, archive.AvroSchemaKey %q", MetadataKey, archive.AvroSchemaKey)
	}
	if !archive.RecordSchemaKey(MetadataKey) {
		t.Errorf("archive.RecordSchemaKey(%q) is false", MetadataKey)
	}
}
