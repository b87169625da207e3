// Command rsswrap runs a command and reports its peak RSS on stderr as a
// last line "rsswrap: maxrss=KB". It is small, so the command it starts
// reports its own peak, not that of the large test process that started
// rsswrap (see package internal/rusage).
package main

import (
	"fmt"
	"os"
	"syscall"

	"github.com/pqsink/pqsink/internal/rusage"
)

func main() {
	code, u, err := rusage.Run(os.Args[1:], syscall.SIGINT, syscall.SIGTERM)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsswrap:", err)
		os.Exit(125)
	}
	fmt.Fprintf(os.Stderr, "rsswrap: maxrss=%d\n", u.MaxRSS>>10)
	os.Exit(code)
}
