package reader

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrMemoryBudget is wrapped by the error of a read that would hold more
// decoded bytes than the budget of MaxMemory allows. It says nothing about
// the file's validity: the same read succeeds under a larger budget.
var ErrMemoryBudget = errors.New("memory budget exceeded")

// DefaultMaxMemory is the memory budget of a read when MaxMemory is not
// given: 1 GiB.
const DefaultMaxMemory = 1 << 30

// MemoryError is the error of a read stopped by its memory budget.
type MemoryError struct {
	What  string // what was being decoded or held
	Need  int64  // the bytes it asked for
	Used  int64  // the bytes already held by the read
	Limit int64  // the budget
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("%v: %s needs %s more, with %s of the %s budget already held; raise the budget with reader.MaxMemory (pqsink inspect --max-memory)",
		ErrMemoryBudget, e.What, byteSize(e.Need), byteSize(e.Used), byteSize(e.Limit))
}

func (e *MemoryError) Unwrap() error { return ErrMemoryBudget }

// byteSize renders n bytes for people: "1 GiB", "12.5 MiB", "100 bytes".
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	f, i := float64(n), -1
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", f)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + [...]string{"KiB", "MiB", "GiB", "TiB", "PiB"}[i]
}

// budget counts the bytes one read holds: the column chunk windows, the
// decompressed pages, levels, values and dictionaries of every projected
// column, and the record being assembled. Every allocation that a file's
// declarations size is checked against it before it is made, so a hostile
// file fails with a *MemoryError instead of taking the process down, and a
// legitimate file that needs more than the budget says which option to
// raise. Go's allocator rounds up and append grows by a factor, so the
// process holds somewhat more than the count; that slack is a constant
// factor, not a function of what the file declares.
type budget struct {
	limit int64
	used  int64
}

func newBudget(limit int64) *budget { return &budget{limit: limit} }

// check reports whether n more bytes fit, without taking them.
func (b *budget) check(what string, n int64) error {
	if n > 0 && (n > b.limit || b.used > b.limit-n) {
		return &MemoryError{What: what, Need: n, Used: b.used, Limit: b.limit}
	}
	return nil
}

// set changes a holder's charge, *held, to n bytes, failing without a
// change when the growth does not fit.
func (b *budget) set(what string, held *int64, n int64) error {
	if n > *held {
		if err := b.check(what, n-*held); err != nil {
			return err
		}
	}
	b.used += n - *held
	*held = n
	return nil
}

// valueSize is the size of one Value in a record tree.
const valueSize = int64(unsafe.Sizeof(Value{}))

// grownCap is an upper bound on the capacity append gives a slice of
// capacity c that needs room for want elements: the growth rule of the Go
// runtime (double small slices, grow large ones by a quarter), with room
// for the rounding to a size class.
func grownCap(c, want int) int {
	n := 2 * c
	if c >= 256 {
		n = c + (c+3*256)/4
	}
	return max(want, n+n/16, 8)
}
