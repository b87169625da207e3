// Package benchmarks compares pqsink's Parquet writer with parquet-go and
// arrow-go on the same rows and codec. It holds only benchmarks; run them
// with
//
//	go test ./benchmarks -run '^$' -bench . -benchmem -count 6 | tee new.txt
//	benchstat new.txt
//
// Each benchmark reports rows/s and the file size (file_bytes), besides
// Go's ns/op, B/op and allocs/op; the writer comparisons report rows per
// CPU second of the process too (rows/cpu-s), which varies less than
// rows/s on a machine shared with other work.
package benchmarks
