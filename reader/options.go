package reader

import (
	"fmt"
)

// Option configures Open.
type Option func(*options) error

type options struct {
	verifyChecksums bool
	maxMemory       int64
}

func defaultOptions() options {
	return options{
		verifyChecksums: true,
		maxMemory:       DefaultMaxMemory,
	}
}

// VerifyChecksums sets whether the CRC of a page, when the page header has
// one, is checked against the page's bytes. A mismatch is an error wrapping
// ErrChecksum. Pages without a CRC are never checked.
//
// Defaults to true.
func VerifyChecksums(on bool) Option {
	return func(o *options) error {
		o.verifyChecksums = on
		return nil
	}
}

// MaxMemory sets the memory budget of one read, in bytes: everything a
// chunk reader or a row iterator decodes and holds at once (the chunk bytes
// being read, decompressed pages, levels, values and dictionaries of all
// projected columns together, and the record being assembled, even across
// pages) counts against it. A read that would exceed it fails with an error
// wrapping ErrMemoryBudget, which says so and names this option; it never
// calls the file corrupt for that. Files declare sizes and counts that a few
// bytes can back (a run-length encoded page of billions of nulls, a
// compression bomb), so this, not the file's size, bounds what a read takes.
// The process holds somewhat more than the count: allocations are rounded
// up and the Go runtime keeps garbage until it collects it.
//
// Defaults to 1 GiB.
func MaxMemory(n int64) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("MaxMemory %d: must be positive", n)
		}
		o.maxMemory = n
		return nil
	}
}
