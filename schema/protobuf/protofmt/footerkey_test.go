package protofmt

import (
	"strings"
	"testing"

	"github.com/pqsink/pqsink/archive"
)

// TestFooterKeysAgreeWithArchive: the schema id and message indexes a
// registry file's footer holds are records' schema keys as archive
// declares them, so that a file another engine rewrote is lent them, and
// replay can write each record's Confluent header again.
func TestFooterKeysAgreeWithArchive(t *testing.T) {
	for _, k := range []string{SchemaIDKey, IndexesKey} {
		if !strings.HasPrefix(k, archive.ProtobufSchemaPrefix) || !archive.RecordSchemaKey(k) {
			t.Errorf("%q is not under archive.ProtobufSchemaPrefix %q", k, archive.ProtobufSchemaPrefix)
		}
	}
}

// TestIndexText: message indexes as the footer writes them.
func TestIndexText(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{0}, "0"}, {[]int{1, 3}, "1,3"}} {
		if got := IndexText(c.in); got != c.want {
			t.Errorf("IndexText(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
