package main

import (
	"strings"
	"testing"
)

// TestHelp: every command's -h and --help print its usage and exit 0, and
// convert's help does not call --schema required when other flags give
// the schema.
func TestHelp(t *testing.T) {
	for _, c := range commands() {
		for _, flag := range []string{"-h", "--help"} {
			code, _, stderr := pqsink(t, "", c.name, flag)
			if code != 0 || !strings.Contains(stderr, "usage: pqsink "+c.name) {
				t.Errorf("pqsink %s %s: exit %d, stderr %q; want 0 and the usage", c.name, flag, code, stderr)
			}
		}
	}
	_, _, stderr := pqsink(t, "", "convert", "--help")
	if strings.Contains(stderr, "(required)") || !strings.Contains(stderr, "required unless --variant, --json-schema, --avro-schema") {
		t.Errorf("convert --help on --schema:\n%s", stderr)
	}
	if code, _, _ := pqsink(t, "", "version", "extra"); code != 2 {
		t.Errorf("pqsink version extra: exit %d, want 2", code)
	}
}
