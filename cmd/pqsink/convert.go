package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/internal/safetext"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

const convertUsage = `usage: pqsink convert [flags] INPUT OUTPUT

Converts JSON Lines (INPUT, or - for stdin) into one Parquet file (OUTPUT,
or - for stdout). A UTF-8 byte order mark at the start of INPUT is skipped.
The output appears only when the conversion succeeds: it is written to a
temporary file beside OUTPUT (.OUTPUT.pqsink-tmp-PID-*), renamed into place
at the end, and removed on failure or on SIGINT/SIGTERM (exit status 1). A
temporary file that a killed run left is removed by the next run on the
same OUTPUT.

flags:
`

func runConvert(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return safetext.Error(convertCmd(ctx, args, stdin, stdout, stderr))
}

func convertCmd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, convertUsage); fs.PrintDefaults() }
	var (
		schemaFile   = fs.String("schema", "", "Parquet message-syntax schema `FILE`: required unless --variant, --json-schema, --avro-schema or --input-format avro or protobuf gives the schema")
		codec        = fs.String("codec", "zstd", "compression `codec[:level]`: none, snappy, gzip, zstd, lz4_raw, brotli (also uncompressed, lz4raw)")
		rowGroupSize = fs.String("row-group-size", "32MiB", "in-memory `size` at which a row group is written")
		pageSize     = fs.String("page-size", "1MiB", "target uncompressed data page `size`")
		pageRows     = fs.Int("page-rows", 20000, "maximum rows per data page")
		dictionary   = fs.Bool("dictionary", true, "dictionary-encode columns while the dictionary pays off")
		dictSize     = fs.String("dictionary-page-size", "1MiB", "dictionary `size` at which a column chunk falls back")
		pageVersion  = fs.Int("page-version", 1, "data page header version, 1 or 2")
		truncate     = fs.Int("stats-truncate", 64, "truncate binary min/max statistics to `N` bytes (0: never)")
		checksums    = fs.Bool("checksums", true, "write a CRC32 of every page")
		pageIndex    = fs.Bool("page-index", true, "write the column and offset indexes")
		stats        = fs.Bool("statistics", true, "write min/max/null statistics")
		errorsFlag   = fs.String("errors", "fail", "bad lines: fail, skip (reported on stderr) or file:PATH (skipped, written to PATH)")
		unknown      = fs.Bool("ignore-unknown-fields", false, "ignore JSON fields the schema lacks instead of rejecting the line")
		quiet        = fs.Bool("quiet", false, "no progress lines on stderr")
		asVariant    = fs.Bool("variant", false, "write each line as one VARIANT value instead of using --schema")
		column       = fs.String("column", "payload", "with --variant: the VARIANT column's `NAME`")
		shred        = fs.String("shred", "auto", "with --variant: shredding: auto (inferred from the first 10,000 records), none, or a `FILE` (a message with one VARIANT field, or PATH TYPE lines)")
		verbose      = fs.Bool("verbose", false, "with --variant: print the chosen Parquet schema on stderr")
		lossy        = fs.Bool("lossy-numbers", false, "store a JSON number that its column cannot hold exactly as the nearest value instead of rejecting the line: one that underflows a FLOAT or DOUBLE (1e-400) becomes 0 or a subnormal; with --variant, one over 38 digits or underflowing a double becomes the nearest double (as format.lossy_numbers in the sink)")
		lossyVariant = fs.Bool("variant-lossy-numbers", false, "the same as --lossy-numbers (kept for scripts that use it)")
		inputFormat  = fs.String("input-format", "jsonl", "input `FORMAT`: jsonl, avro (an Avro object container file, whose writer schema gives the Parquet schema), or protobuf (length-delimited messages of --message in --proto-file)")
		protoFile    = fs.String("proto-file", "", "with --input-format protobuf: the `FILE` (.proto) that defines --message; its imports are found in --import-path and its own directory, the well-known types built in")
		protoMessage = fs.String("message", "", "with --input-format protobuf: the message type `NAME` (pkg.Event, or Event when the file has one of that name)")
		jsonSchema   = fs.String("json-schema", "", "JSON Schema `FILE` (draft-07 or 2020-12): each line is validated against it, and the Parquet schema is its mapping (instead of --schema); see docs/json-schema.md")
		avroSchema   = fs.String("avro-schema", "", "Avro schema `FILE` (.avsc): the lines are records in Avro's JSON encoding, and the Parquet schema is the Avro schema's (instead of --schema)")
		maxRecord    = fs.String("max-record-bytes", "64MiB", "longest input line (`SIZE`); a longer one is a bad line, handled by --errors, and is never held in memory whole")
		threads      = fs.Int("threads", 0, "cores to use (`N`): column chunks of a row group encoded at once, and at most N goroutines running at a time (GOMAXPROCS); 0: one per core. The output is the same, byte for byte, whatever N")
		encodings    listFlag
		codecs       listFlag
		blooms       listFlag
		noDict       listFlag
		keyValues    listFlag
	)
	fs.Var(&encodings, "encoding", "`COLUMN=ENCODING` for a column's non-dictionary pages (repeatable): plain, rle, delta_binary_packed, delta_length_byte_array, delta_byte_array, byte_stream_split")
	fs.Var(&codecs, "column-codec", "`COLUMN=codec[:level]` overrides the codec of one column (repeatable)")
	fs.Var(&blooms, "bloom-filter", "`COLUMN[:fpp]` writes a bloom filter for a column (repeatable; fpp defaults to 0.01)")
	fs.Var(&noDict, "no-dictionary", "`COLUMN` not to dictionary-encode (repeatable)")
	var importPaths listFlag
	fs.Var(&importPaths, "import-path", "with --input-format protobuf: a `DIR` where --proto-file's imports are found (repeatable)")
	fs.Var(&keyValues, "metadata", "`KEY=VALUE` added to the file's key-value metadata (repeatable)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return usagef("want INPUT and OUTPUT, got %d arguments", len(pos))
	}
	var s *schema.Schema
	input, err := openInput(ctx, inputFlags{format: *inputFormat, protoFile: *protoFile, message: *protoMessage, importPaths: importPaths,
		jsonSchema: *jsonSchema, avroSchema: *avroSchema, parquetSchema: *schemaFile, variant: *asVariant})
	if err != nil {
		return err
	}
	if !*asVariant && input == nil { // --variant and the inputs of their own schema (Avro, Protobuf, JSON Schema) decide it
		if *schemaFile == "" {
			return usagef("--schema FILE is required")
		}
		text, err := os.ReadFile(*schemaFile)
		if err != nil {
			return err
		}
		if s, err = schema.Parse(string(text)); err != nil {
			return fmt.Errorf("schema %s: %w", *schemaFile, err)
		}
	}

	opts := convert.Options{Schema: s}
	if opts.RowGroupSize, err = config.ParseSize(*rowGroupSize); err != nil {
		return usagef("--row-group-size: %v", err)
	}
	if opts.MaxRecordBytes, err = config.ParseSize(*maxRecord); err != nil || opts.MaxRecordBytes <= 0 {
		return usagef("--max-record-bytes %q: want a positive size, e.g. 64MiB", *maxRecord)
	}
	if *threads < 0 {
		return usagef("--threads %d: want 0 (one per core) or more", *threads)
	}
	if *threads == 0 {
		*threads = runtime.GOMAXPROCS(0)
	} else if *threads < runtime.GOMAXPROCS(0) {
		// N bounds the cores the command takes, the runtime's included:
		// with a core left idle, the collector's idle mark worker takes
		// it, and spends most of it waiting for the converting goroutine
		// to stop for its stack scan (7-10% more CPU on one thread).
		// Restored on return, for a caller (a test) that goes on.
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*threads))
	}
	if *pageRows <= 0 || *pageRows > maxPageRows {
		return usagef("--page-rows %d: want 1 to %d", *pageRows, maxPageRows)
	}
	set := writer.Settings{
		Codec:         *codec,
		PageRows:      *pageRows,
		Dictionary:    *dictionary,
		PageVersion:   *pageVersion,
		StatsTruncate: *truncate,
		Checksums:     *checksums,
		PageIndex:     *pageIndex,
		Statistics:    *stats,
		Parallelism:   *threads,
		BloomFilters:  blooms,
		NoDictionary:  noDict,
	}
	for flagName, v := range map[string]*string{"page-size": pageSize, "dictionary-page-size": dictSize} {
		n, err := config.ParseSize(*v)
		if err != nil || n <= 0 || n > 1<<30 {
			return usagef("--%s: want a size between 1B and 1GiB, got %q", flagName, *v)
		}
		if flagName == "page-size" {
			set.PageBytes = n
		} else {
			set.DictionaryPageBytes = n
		}
	}
	for _, e := range encodings {
		col, name, ok := strings.Cut(e, "=")
		if !ok {
			return usagef("--encoding %q: want COLUMN=ENCODING with ENCODING one of %s", e, encodingList)
		}
		set.Encodings = append(set.Encodings, writer.ColumnSetting{Column: col, Value: name})
	}
	for _, e := range codecs {
		col, name, ok := strings.Cut(e, "=")
		if !ok {
			return usagef("--column-codec %q: want COLUMN=codec[:level]", e)
		}
		set.ColumnCodecs = append(set.ColumnCodecs, writer.ColumnSetting{Column: col, Value: name})
	}
	for _, kv := range keyValues {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--metadata %q: want KEY=VALUE", kv)
		}
		set.KeyValues = append(set.KeyValues, [2]string{k, v})
	}
	wopts, err := set.Options()
	if err != nil {
		return settingUsage(err)
	}
	opts.Writer = wopts
	if *unknown {
		opts.JSON = append(opts.JSON, rowgroup.IgnoreUnknownFields())
	}
	*lossy = *lossy || *lossyVariant
	if *lossy {
		opts.JSON = append(opts.JSON, rowgroup.LossyNumbers())
	}
	if !*quiet {
		opts.Progress = stderr
	}

	// Open the input first: nothing is created when it cannot be read.
	in := stdin
	inputs := []string{*schemaFile}
	if *asVariant {
		inputs = []string{*shred}
	}
	if sf, ok := input.(schemaFiler); ok {
		inputs = []string{sf.schemaFile()}
	}
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
		inputs = append(inputs, pos[0])
	}
	var rejects *os.File
	switch {
	case *errorsFlag == "fail":
	case *errorsFlag == "skip":
		opts.Errors, opts.Rejects = convert.Skip, stderr
	case strings.HasPrefix(*errorsFlag, "file:") && len(*errorsFlag) > len("file:"):
		path := strings.TrimPrefix(*errorsFlag, "file:")
		if err := checkRejectsPath(path, pos[0] == "-", append(inputs, pos[1])); err != nil {
			return err
		}
		opts.Errors = convert.Skip
		if rejects, err = os.Create(path); err != nil {
			return err
		}
		defer rejects.Close()
		opts.Rejects = rejects
	default:
		return usagef("--errors %q: want fail, skip or file:PATH", *errorsFlag)
	}

	var st convert.Stats
	if input != nil {
		st, err = writeOutput(ctx, pos[1], stdout, func(w io.Writer) (convert.Stats, error) { return input.run(ctx, in, w, opts) })
	} else if *asVariant {
		st, err = convertVariant(ctx, pos[1], stdout, stderr, in, opts, variantFlags{column: *column, shred: *shred, verbose: *verbose, lossy: *lossy})
	} else {
		st, err = writeOutput(ctx, pos[1], stdout, func(w io.Writer) (convert.Stats, error) { return convert.Run(ctx, in, w, opts) })
	}
	if err != nil {
		return err
	}
	if rejects != nil {
		if err := rejects.Close(); err != nil {
			return err
		}
	}
	if st.Skipped > 0 && st.Rows == 0 {
		return statusError{exitAllRejected, fmt.Sprintf("every one of the %d lines that were not blank was rejected: the output has no rows (exit status %d)", st.Skipped, exitAllRejected)}
	}
	if st.Skipped > 0 {
		fmt.Fprintf(stderr, "pqsink convert: skipped %d of %d lines that did not fit the schema\n", st.Skipped, st.Lines)
	}
	return nil
}

// maxPageRows bounds --page-rows: every reader takes pages of a million
// rows, and the page index stays useful far below that.
const maxPageRows = 1 << 20

// checkRejectsPath refuses a rejects file that is one of the files the
// conversion reads or writes (or standard input, when it is a file):
// creating it would truncate that file before a line is read.
func checkRejectsPath(path string, stdinInput bool, others []string) error {
	st, err := os.Stat(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // a new file is no other file
		}
		return err
	}
	if stdinInput {
		if in, err := os.Stdin.Stat(); err == nil && os.SameFile(st, in) {
			return usagef("--errors file:%s is the standard input; it would be truncated", path)
		}
	}
	for _, o := range others {
		if o == "" || o == "-" || o == "auto" || o == "none" {
			continue
		}
		if ost, err := os.Stat(o); err == nil && os.SameFile(st, ost) {
			return usagef("--errors file:%s is %s, which convert reads or writes; it would be truncated", path, o)
		}
	}
	return nil
}

// tempMarker is in the name of every temporary output file, followed by
// the process id, so that a later run can tell a dead run's leftovers from
// a live run's file.
const tempMarker = ".pqsink-tmp-"

// writeOutput runs write into output ("-" for stdout). A file is written
// beside its final name and renamed into place only when write succeeds, so
// a failed or interrupted run never leaves a partial file. write runs
// beside a watch for ctx: when it is cancelled (SIGINT, SIGTERM),
// writeOutput removes the temporary file and returns at once, whatever
// write is doing, and the process exits.
func writeOutput(ctx context.Context, output string, stdout io.Writer, write func(io.Writer) (convert.Stats, error)) (convert.Stats, error) {
	if output == "-" {
		return runWatched(ctx, func() (convert.Stats, error) { return writeBuffered(stdout, write) })
	}
	dir, base := filepath.Dir(output), filepath.Base(output)
	removeStaleTemps(dir, base)
	tmp, err := os.CreateTemp(dir, "."+base+tempMarker+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return convert.Stats{}, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp's 0600 is too private for a data file
		tmp.Close()
		return convert.Stats{}, err
	}
	st, err := runWatched(ctx, func() (convert.Stats, error) {
		st, err := writeBuffered(tmp, write)
		if err == nil {
			err = tmp.Sync()
		}
		return st, err
	})
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err() // a signal that came as the write ended still wins
	}
	if err != nil {
		return st, err
	}
	return st, os.Rename(tmp.Name(), output)
}

// writeBuffered runs write into w through a buffer of a megabyte, and
// flushes it when write succeeds. The writer hands over each page (and
// each page header) on its own, about 16 KiB at a time: a write system
// call for each cost 4% of a convert's CPU.
func writeBuffered(w io.Writer, write func(io.Writer) (convert.Stats, error)) (convert.Stats, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	st, err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	return st, err
}

// runWatched runs fn, returning early with ctx's error when ctx is done
// first.
func runWatched(ctx context.Context, fn func() (convert.Stats, error)) (convert.Stats, error) {
	type result struct {
		st  convert.Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := fn()
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-ctx.Done():
		return convert.Stats{}, fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
}

// removeStaleTemps removes the temporary files of output base in dir
// whose process is gone: what a killed run left behind.
func removeStaleTemps(dir, base string) {
	names, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+tempMarker+"*"))
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), "."+base+tempMarker)
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if pid != os.Getpid() && !processAlive(pid) {
			os.Remove(name)
		}
	}
}

// processAlive reports whether a process pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// globEscape escapes the pattern characters of filepath.Match in s.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// encodingList names the encodings --encoding takes.
const encodingList = "plain, rle, delta_binary_packed, delta_length_byte_array, delta_byte_array, byte_stream_split"

// settingUsage words a writer.SettingError after the flag that gave the
// value, as a usage error.
func settingUsage(err error) error {
	var se *writer.SettingError
	if !errors.As(err, &se) {
		return err
	}
	switch se.Setting {
	case "Codec":
		return usagef("--codec: %v", se.Err)
	case "ColumnCodecs":
		return usagef("--column-codec %q: want COLUMN=codec[:level]: %v", se.Column+"="+se.Value, se.Err)
	case "BloomFilters":
		return usagef("--bloom-filter %q: %v", se.Value, se.Err)
	case "Encodings":
		return usagef("--encoding %q: want COLUMN=ENCODING with ENCODING one of %s", se.Column+"="+se.Value, encodingList)
	}
	return usagef("%v", err)
}
