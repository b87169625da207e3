package jsonschema

import (
	"testing"

	"github.com/pqsink/pqsink/archive"
)

// TestFooterKeysAgreeWithArchive: archive declares the records' schema
// footer keys for the packages that must not import a format (envelope,
// merge, compact); every key this package writes must be one of them, or a
// rewritten file would be lent part of its schema only.
func TestFooterKeysAgreeWithArchive(t *testing.T) {
	if MetadataKey != archive.JSONSchemaPrefix {
		t.Errorf("MetadataKey %q, archive.JSONSchemaPrefix %q", MetadataKey, archive.JSONSchemaPrefix)
	}
	for _, k := range []string{MetadataKey, ReferencesKey, IDKey} {
		if !archive.RecordSchemaKey(k) {
			t.Errorf("archive.RecordSchemaKey(%q) is false", k)
		}
	}
}
