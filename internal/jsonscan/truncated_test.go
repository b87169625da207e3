package jsonscan

import (
	"errors"
	"io"
	"testing"
	"time"
)

// TestTruncatedStringsEnd guards against a scanner that loops on an
// unterminated string (seen once while the word-at-a-time scan was
// written): every cut of a document must end in an error, promptly.
func TestTruncatedStringsEnd(t *testing.T) {
	doc := `{"id":"x","t":"caf\u00e9 ü","n":[1,"two",{"k":"v\"w"}]}`
	for cut := 0; cut < len(doc); cut++ {
		done := make(chan error, 1)
		go func() {
			var s Scanner
			s.Reset([]byte(doc[:cut]))
			for {
				if _, err := s.Next(); err != nil {
					done <- err
					return
				}
			}
		}()
		select {
		case err := <-done:
			if errors.Is(err, io.EOF) {
				t.Errorf("%q: io.EOF for a truncated document", doc[:cut])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q: scanner did not finish", doc[:cut])
		}
	}
}
