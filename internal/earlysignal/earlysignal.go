// Package earlysignal catches SIGINT and SIGTERM while a program's packages
// initialize, so that one sent then stops the program as one sent later
// would, instead of ending it by the signal's default action.
//
// pqsink spends 80 to 90 ms in package initialization (most of it in
// iceberg-go's table/substrait), before main can ask for the signals. A
// SIGTERM in that window, from a supervisor stopping a process it has just
// started, ended the process as a SIGKILL would: no clean exit, and exit
// status 143 instead of the command's own. The sink's exactly-once state
// does not depend on a clean exit, so nothing was lost, but the exit told
// a lie, and tests that stop a process they have just started saw it fail.
//
// The catch works only if this package initializes before the slow ones.
// Go initializes packages in import-path order among those whose imports
// are done: this one imports only os/signal and syscall, which the runtime
// readies early, so it comes before the packages that wait for most of
// the program. A test of the built binary checks that order.
package earlysignal

import (
	"os"
	"os/signal"
	"syscall"
)

// caught is the one piece of package state: a signal can only be caught
// before main by a channel registered in an init function.
var caught = make(chan os.Signal, 1)

func init() {
	signal.Notify(caught, os.Interrupt, syscall.SIGTERM)
}

// Handover stops the early catch and reports the signal caught before it,
// if any (nil otherwise). main calls it once it has asked for the same
// signals itself, so that none falls between the two.
func Handover() os.Signal {
	signal.Stop(caught)
	select {
	case s := <-caught:
		return s
	default:
		return nil
	}
}
