package reader

import (
	"math/rand/v2"
	"testing"

	"github.com/pqsink/pqsink/internal/jsontext"
)

// checkString requires appendJSONString to write s as
// jsontext.AppendStringBytes.
func checkString(t *testing.T, s []byte) {
	t.Helper()
	want := string(jsontext.AppendStringBytes([]byte("x"), s))
	if got := string(appendJSONString([]byte("x"), s)); got != want {
		t.Fatalf("%q: got %s, want %s", s, got, want)
	}
}

// TestAppendJSONString compares appendJSONString with jsontext on every
// byte value at every position of strings of 0 to 20 bytes, and on random
// strings of printable ASCII, UTF-8 and arbitrary bytes.
func TestAppendJSONString(t *testing.T) {
	base := []byte("abcdefghijklmnopqrst")
	for n := 0; n <= len(base); n++ {
		checkString(t, base[:n])
		for pos := 0; pos < n; pos++ {
			for c := range 256 {
				s := append([]byte(nil), base[:n]...)
				s[pos] = byte(c)
				checkString(t, s)
			}
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	for range 100_000 {
		s := make([]byte, r.IntN(40))
		for i := range s {
			switch r.IntN(3) {
			case 0:
				s[i] = byte(0x20 + r.IntN(0x5f))
			case 1:
				s[i] = byte(r.IntN(256))
			default:
				s[i] = "é€😀"[r.IntN(9)]
			}
		}
		checkString(t, s)
	}
}

// FuzzAppendJSONString holds appendJSONString to jsontext.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "user_2868", `a"b`, "tab\t", "\x7f", "é", "\xff", "0123456789abcdef"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		checkString(t, s)
	})
}
