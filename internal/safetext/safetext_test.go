package safetext

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"ü":              `"ü"`,
		"a\x1b[31mb":     `"a\x1b[31mb"`,
		"\xff":           `"\xff"`,
		"line\nbreak":    `"line\nbreak"`,
		"plain_name.sub": `"plain_name.sub"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	long := strings.Repeat("k", 10<<20)
	if got := Quote(long); len(got) > MaxQuoted+40 || !strings.Contains(got, "(10485760 bytes)") {
		t.Errorf("Quote of 10 MB: %d bytes: %.60s", len(got), got)
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"line 3: field ü: bad":      "line 3: field ü: bad",
		"key \x1b]0;pwned\x07 here": `key \x1b]0;pwned\a here`,
		"bad \xff\xfe byte":         `bad \xff\xfe byte`,
		"tab\tkept, newline\ngone":  `tab	kept, newline\ngone`,
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Clean(strings.Repeat("é", 1<<20)); len(got) > MaxMessage+40 || !strings.HasSuffix(got, "more bytes)") {
		t.Errorf("Clean of 2 MB: %d bytes", len(got))
	}
	err := Error(io.ErrUnexpectedEOF)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("Error hides its cause")
	}
}
