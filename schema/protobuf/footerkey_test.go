package protobuf

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
)

// TestMessageKeyAgreesWithArchive: archive declares the records' schema
// footer keys for the packages that must not import a format (envelope,
// merge, compact); the key this package writes must be one of them, or a
// rewritten file would be lent no message name.
func TestMessageKeyAgreesWithArchive(t *testing.T) {
	if !strings.HasPrefix(MessageKey, archive.ProtobufSchemaPrefix) || !archive.RecordSchemaKey(MessageKey) {
		t.Errorf("MessageKey %q is not under archive.ProtobufSchemaPrefix %q", MessageKey, archive.ProtobufSchemaPrefix)
	}
}
