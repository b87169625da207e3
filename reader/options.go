package reader

import (
	"fmt"
	"math"
)

// Option configures Open.
type Option func(*options) error

type options struct {
	verifyChecksums bool
	maxPageSize     int
	maxPageValues   int
}

func defaultOptions() options {
	return options{
		verifyChecksums: true,
		maxPageSize:     256 << 20,
		maxPageValues:   4 << 20,
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

// MaxPageSize sets the largest uncompressed page, in bytes, that the reader
// accepts. Page headers declare sizes the reader must allocate for before
// decompressing, so a hostile header could otherwise ask for up to 2 GiB
// per page with a few bytes of input.
//
// Defaults to 256 MiB.
func MaxPageSize(n int) Option {
	return func(o *options) error {
		if n <= 0 || n > math.MaxInt32 {
			// Page headers declare sizes as i32, and byte-array offsets
			// are uint32.
			return fmt.Errorf("MaxPageSize %d: must be in 1..%d", n, math.MaxInt32)
		}
		o.maxPageSize = n
		return nil
	}
}

// MaxPageValues sets the largest number of values (levels) one data page may
// declare. Run-length encodings let a few bytes describe billions of values,
// so the page bytes alone cannot bound the memory a page decodes to; this
// limit does. Writers cut pages far below it: parquet-java and Arrow at
// 20,000 rows, DuckDB at one row group of 122,880.
//
// Defaults to 4 Mi (4,194,304) values.
func MaxPageValues(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("MaxPageValues %d: must be positive", n)
		}
		o.maxPageValues = n
		return nil
	}
}
