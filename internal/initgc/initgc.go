// Package initgc holds the garbage collector off while a program's
// packages initialize, and gives it back to GOGC when main calls Restore.
//
// pqsink's package initialization allocates about 40 MB, 32 MB of it in
// iceberg-go's table/substrait package, which parses the Substrait
// function extensions from YAML whether or not anything uses them. With the
// collector on, that start-up runs several collections that mark the
// growing set of parsed extensions again and again: 20-22 ms of CPU of the
// 85-90 ms every pqsink command spends before main, which is 4% of a
// million-record `pqsink convert`. Held off, the garbage is collected
// once, in the first collection after Restore.
//
// The hold works only if this package initializes before the packages
// that allocate. Go initializes packages in import-path order among those
// whose imports are done (the spec's rule since Go 1.21): this package
// imports only what the runtime needs anyway, so it becomes ready early,
// and well before iceberg-go's packages, which wait for most of the
// program. A test of the built binary checks that order. GOMEMLIMIT still
// bounds the heap while the collector is held.
package initgc

import (
	"os"
	"runtime/debug"
	"strconv"
)

func init() {
	debug.SetGCPercent(-1)
}

// Restore sets the collector's target to what GOGC says (100 when GOGC
// is unset or not a number, off for "off"), as the runtime would have set
// it, and returns that percentage (-1 for off).
func Restore() int {
	percent := Percent(os.Getenv("GOGC"))
	debug.SetGCPercent(percent)
	return percent
}

// Percent is the collector's target for a GOGC value, read as the runtime
// reads it: "off" is -1, a decimal number is itself, and anything else
// (the empty string included) is the default, 100.
func Percent(gogc string) int {
	if gogc == "off" {
		return -1
	}
	if n, err := strconv.ParseInt(gogc, 10, 32); err == nil {
		return int(n)
	}
	return 100
}
