package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pqsink/pqsink/compress"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/convert"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/rowgroup"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/writer"
)

const convertUsage = `usage: pqsink convert [flags] INPUT OUTPUT

Converts JSON Lines (INPUT, or - for stdin) into one Parquet file (OUTPUT,
or - for stdout). The output appears only when the conversion succeeds.

flags:
`

func runConvert(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, convertUsage); fs.PrintDefaults() }
	var (
		schemaFile   = fs.String("schema", "", "Parquet message-syntax schema `FILE` (required)")
		codec        = fs.String("codec", "zstd", "compression `codec[:level]`: none, snappy, gzip, zstd, lz4_raw, lz4, brotli")
		rowGroupSize = fs.String("row-group-size", "128MiB", "in-memory `size` at which a row group is written")
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
	if !*asVariant { // --variant decides its own schema
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
	c, level, err := compress.Parse(*codec)
	if err != nil {
		return usagef("--codec: %v", err)
	}
	wopts := []writer.Option{
		writer.Compression(c, level),
		writer.PageRowLimit(*pageRows),
		writer.Dictionary(*dictionary),
		writer.DataPageVersion(*pageVersion),
		writer.StatisticsTruncate(*truncate),
		writer.PageChecksums(*checksums),
		writer.PageIndex(*pageIndex),
		writer.Statistics(*stats),
	}
	for flagName, v := range map[string]*string{"page-size": pageSize, "dictionary-page-size": dictSize} {
		n, err := config.ParseSize(*v)
		if err != nil || n <= 0 || n > 1<<30 {
			return usagef("--%s: want a size between 1B and 1GiB, got %q", flagName, *v)
		}
		if flagName == "page-size" {
			wopts = append(wopts, writer.PageSize(int(n)))
		} else {
			wopts = append(wopts, writer.DictionaryPageSize(int(n)))
		}
	}
	for _, e := range encodings {
		col, name, ok := strings.Cut(e, "=")
		enc, err := parseEncoding(name)
		if !ok || err != nil {
			return usagef("--encoding %q: want COLUMN=ENCODING with ENCODING one of plain, rle, delta_binary_packed, delta_length_byte_array, delta_byte_array, byte_stream_split", e)
		}
		wopts = append(wopts, writer.ColumnEncoding(col, enc))
	}
	for _, e := range codecs {
		col, name, ok := strings.Cut(e, "=")
		cc, lvl, err := compress.Parse(name)
		if !ok || err != nil {
			return usagef("--column-codec %q: want COLUMN=codec[:level]: %v", e, err)
		}
		wopts = append(wopts, writer.ColumnCompression(col, cc, lvl))
	}
	for _, b := range blooms {
		col, fppText, hasFPP := strings.Cut(b, ":")
		fpp := 0.01
		if hasFPP {
			if fpp, err = strconv.ParseFloat(fppText, 64); err != nil {
				return usagef("--bloom-filter %q: want COLUMN[:fpp], e.g. user_id:0.01", b)
			}
		}
		wopts = append(wopts, writer.BloomFilter(col, fpp))
	}
	for _, col := range noDict {
		wopts = append(wopts, writer.ColumnDictionary(col, false))
	}
	for _, kv := range keyValues {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return usagef("--metadata %q: want KEY=VALUE", kv)
		}
		wopts = append(wopts, writer.KeyValue(k, v))
	}
	opts.Writer = wopts
	if *unknown {
		opts.JSON = append(opts.JSON, rowgroup.IgnoreUnknownFields())
	}
	if !*quiet {
		opts.Progress = stderr
	}

	var rejects *os.File
	switch {
	case *errorsFlag == "fail":
	case *errorsFlag == "skip":
		opts.Errors, opts.Rejects = convert.Skip, stderr
	case strings.HasPrefix(*errorsFlag, "file:") && len(*errorsFlag) > len("file:"):
		opts.Errors = convert.Skip
		if rejects, err = os.Create(strings.TrimPrefix(*errorsFlag, "file:")); err != nil {
			return err
		}
		defer rejects.Close()
		opts.Rejects = rejects
	default:
		return usagef("--errors %q: want fail, skip or file:PATH", *errorsFlag)
	}

	in := stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	var st convert.Stats
	if *asVariant {
		st, err = convertVariant(ctx, pos[1], stdout, stderr, in, opts, variantFlags{column: *column, shred: *shred, verbose: *verbose})
	} else {
		st, err = writeOutput(pos[1], stdout, func(w io.Writer) (convert.Stats, error) { return convert.Run(ctx, in, w, opts) })
	}
	if err != nil {
		return err
	}
	if rejects != nil {
		if err := rejects.Close(); err != nil {
			return err
		}
	}
	if st.Skipped > 0 {
		fmt.Fprintf(stderr, "pqsink convert: skipped %d of %d lines that did not fit the schema\n", st.Skipped, st.Lines)
	}
	return nil
}

// writeOutput runs write into output ("-" for stdout). A file is written
// beside its final name and renamed into place only when write succeeds, so
// a failed run never leaves a partial file.
func writeOutput(output string, stdout io.Writer, write func(io.Writer) (convert.Stats, error)) (convert.Stats, error) {
	if output == "-" {
		return write(stdout)
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".tmp-*")
	if err != nil {
		return convert.Stats{}, err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp's 0600 is too private for a data file
		tmp.Close()
		return convert.Stats{}, err
	}
	st, err := write(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return st, err
	}
	return st, os.Rename(tmp.Name(), output)
}

func parseEncoding(name string) (meta.Encoding, error) {
	switch strings.ToLower(name) {
	case "plain":
		return meta.EncodingPlain, nil
	case "rle":
		return meta.EncodingRLE, nil
	case "delta_binary_packed":
		return meta.EncodingDeltaBinaryPacked, nil
	case "delta_length_byte_array":
		return meta.EncodingDeltaLengthByteArray, nil
	case "delta_byte_array":
		return meta.EncodingDeltaByteArray, nil
	case "byte_stream_split":
		return meta.EncodingByteStreamSplit, nil
	}
	return 0, fmt.Errorf("unknown encoding %q", name)
}
