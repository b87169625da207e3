package all

import (
	"slices"
	"testing"
)

// TestFormats: every format.type the config accepts is registered, in the
// order the config names them.
func TestFormats(t *testing.T) {
	want := []string{"json", "variant", "avro", "protobuf", "json_schema"}
	if got := Formats().Names(); !slices.Equal(got, want) {
		t.Errorf("registered %v, want %v", got, want)
	}
}
