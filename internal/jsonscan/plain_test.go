package jsonscan

import (
	"bytes"
	"testing"
)

var plainSeeds = []string{
	`"abc"`, `"a\"b"`, `"ä€😀"`, "\"\xff\"", "\"a\nb\"", `"unterminated`, `""`, `"0123456789abcdef0123"`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e5`, `1E+5`, `1e`, `-1.25e-7`, `123456789012345678901234567890`, `1.5.3`, `1x`,
}

// checkPlain holds PlainString and NumberEnd to the Scanner: what they
// accept at the start of data, the Scanner reads as the same token.
func checkPlain(t *testing.T, data []byte) {
	var s Scanner
	if len(data) > 0 && data[0] == '"' {
		if end, ok := PlainString(data, 1); ok {
			s.Reset(data[:end+1])
			if k, err := s.Next(); err != nil || k != String || !bytes.Equal(s.Bytes(), data[1:end]) {
				t.Fatalf("PlainString(%q) = %d, but the Scanner reads %v %v %q", data, end, k, err, s.Bytes())
			}
		}
		return
	}
	end, ok := NumberEnd(data, 0)
	s.Reset(data)
	if k, err := s.Next(); err == nil && k == Number && len(data) > 0 && !isSpace(data[0]) && (!ok || end != len(s.Bytes())) {
		t.Fatalf("NumberEnd(%q) = %d, %v; the Scanner reads the number %q", data, end, ok, s.Bytes())
	}
	if ok {
		s.Reset(data[:end])
		if k, err := s.Next(); err != nil || k != Number || !bytes.Equal(s.Bytes(), data[:end]) {
			t.Fatalf("NumberEnd(%q) = %d, but the Scanner reads %v %v", data, end, k, err)
		}
	}
}

func TestPlain(t *testing.T) {
	for _, d := range plainSeeds {
		checkPlain(t, []byte(d))
	}
}

func FuzzPlain(f *testing.F) {
	for _, d := range plainSeeds {
		f.Add([]byte(d))
	}
	f.Fuzz(checkPlain)
}
