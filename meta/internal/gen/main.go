// Command gen generates package meta's Go types and their Thrift
// compact-protocol encoders and decoders from parquet.thrift, so that each
// thrift struct is declared once and its field ids cannot drift.
//
// Usage (from package meta, via go generate):
//
//	go run ./internal/gen -in internal/gen/parquet.thrift -out thrift_gen.go
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	in := flag.String("in", "parquet.thrift", "thrift file to read")
	out := flag.String("out", "thrift_gen.go", "Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	code, err := generate(src)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, code, 0o644)
}
