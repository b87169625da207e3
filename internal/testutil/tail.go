package testutil

import (
	"strings"
	"sync"
)

// Tail is an io.Writer that keeps the last Max bytes written to it: enough
// of a child process's output to explain a failure, without growing without
// bound. The zero value keeps 64 KiB. It is safe for concurrent use.
type Tail struct {
	Max int // bytes kept; 0 means 64 KiB

	mu  sync.Mutex
	buf []byte
}

// Write keeps the end of p. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	limit := t.Max
	if limit <= 0 {
		limit = 64 << 10
	}
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns what is kept, without surrounding white space.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
