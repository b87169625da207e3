package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/internal/safetext"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
)

const inspectUsage = `usage: pqsink inspect meta FILE
       pqsink inspect meta iceberg:NAMESPACE.TABLE --config FILE
       pqsink inspect schema FILE
       pqsink inspect rows [--columns a,b.c] [--limit N] [--json] [--max-memory SIZE] FILE

FILE is a local path or s3://bucket/key (static keys from S3_ACCESS_KEY and
S3_SECRET_KEY, with S3_SESSION_TOKEN, when S3_ACCESS_KEY is set, as in the
configuration examples; otherwise the AWS default chain; endpoint and path
style from the URL's query, e.g.
s3://bucket/key?endpoint=http://127.0.0.1:9000&path_style=true&region=us-east-1,
or from AWS_ENDPOINT_URL), or gs://bucket/key (Google Cloud Storage, with
the Application Default Credentials; an emulator from STORAGE_EMULATOR_HOST
or the URL's query, e.g. gs://bucket/key?endpoint=http://127.0.0.1:4443),
or azblob://container/key or abfss://container@account.dfs.core.windows.net/key
(Azure Blob Storage, with AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, a
SAS token in AZURE_STORAGE_SAS_TOKEN, or the default Azure credential
chain; an emulator such as Azurite from the URL's query, e.g.
azblob://container/key?endpoint=http://127.0.0.1:10000/devstoreaccount1).

iceberg:NAMESPACE.TABLE names an Iceberg table of the catalog in the
--config file's table section (pqsink run's configuration; its store
section gives the credentials of the table's files): inspect meta shows
its current snapshot (id, time, operation, summary), its data files
(count, bytes, records), its schema and partition spec, and the
exactly-once state pqsink keeps in the snapshot summaries (pqsink.state:
each group's partitions and committed offsets). It changes nothing.

A file is untrusted input: reading it holds at most --max-memory of decoded
pages, values and the record being assembled (default 1GiB); a file that
needs more is refused with an error that says so.
`

func runInspect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	// A file's names and values reach the messages: keep them inert.
	return safetext.Error(inspectCmd(ctx, args, stdin, stdout, stderr))
}

func inspectCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, inspectUsage)
		if len(args) == 0 {
			return usagef("want meta, schema or rows")
		}
		return flag.ErrHelp
	}
	what, args := args[0], args[1:]
	fs := flag.NewFlagSet("inspect "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, inspectUsage); fs.PrintDefaults() }
	columns := fs.String("columns", "", "comma-separated column `paths` to read (rows)")
	limit := fs.Int64("limit", -1, "print at most `N` rows (rows; -1: all)")
	asJSON := fs.Bool("json", false, "one JSON object per row (rows)")
	maxMemory := fs.String("max-memory", "1GiB", "memory budget of the read: decoded pages, values and the record being assembled (`SIZE`)")
	configFile := fs.String("config", "", "with iceberg:NAMESPACE.TABLE: the configuration `FILE` whose table and store sections say where the table is")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return usagef("want one FILE, got %d arguments", len(pos))
	}
	if strings.HasPrefix(pos[0], tableScheme) {
		if what != "meta" {
			return usagef("inspect %s reads a Parquet file; for a table, inspect meta %s --config FILE", what, pos[0])
		}
		return inspectTable(ctx, stdout, pos[0], *configFile)
	}
	if *configFile != "" {
		return usagef("--config is for iceberg:NAMESPACE.TABLE; %s is a file", pos[0])
	}
	switch what {
	case "meta", "schema", "rows":
	default:
		return usagef("unknown inspect command %q: want meta, schema or rows", what)
	}
	budget, err := config.ParseSize(*maxMemory)
	if err != nil || budget <= 0 {
		return usagef("--max-memory %q: want a positive size, e.g. 1GiB", *maxMemory)
	}
	limitGoMemory(budget)
	// The read runs beside the signal watch, so that SIGINT or SIGTERM
	// stop inspect at once even in the middle of a page that takes long to
	// decode: the process exits, and the reading goroutine with it.
	done := make(chan error, 1)
	go func() {
		done <- inspect(ctx, what, pos[0], stdout, *columns, *limit, *asJSON, reader.MaxMemory(budget))
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", context.Cause(ctx))
	}
}

func inspect(ctx context.Context, what, name string, stdout io.Writer, columns string, limit int64, asJSON bool, opts ...reader.Option) error {
	f, closeFile, err := openParquet(ctx, name, opts...)
	if err != nil {
		return err
	}
	defer closeFile()
	out := bufio.NewWriterSize(stdout, 64<<10)
	switch what {
	case "meta":
		err = printMeta(out, name, f)
	case "schema":
		_, err = fmt.Fprintln(out, f.Schema().String())
	case "rows":
		err = printRows(ctx, out, f, columns, limit, asJSON)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return err
}

// limitGoMemory sets the Go runtime's soft memory limit a little above the
// read's budget, unless GOMEMLIMIT set one: the budget counts live decoded
// bytes, and the limit makes the collector reclaim the garbage of pages
// already read before the heap doubles.
func limitGoMemory(budget int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(budget + budget/2 + 64<<20)
}

// objectSchemes are the URL schemes inspect reads from an object store;
// any other name is a local path.
var objectSchemes = []string{"s3://", "gs://", "azblob://", "abfss://"}

// openParquet opens a local file, or an object of one of objectSchemes, for
// reading.
func openParquet(ctx context.Context, name string, ropts ...reader.Option) (*reader.File, func(), error) {
	if !slices.ContainsFunc(objectSchemes, func(p string) bool { return strings.HasPrefix(name, p) }) {
		fh, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, nil, err
		}
		f, err := reader.Open(fh, st.Size(), ropts...)
		if err != nil {
			fh.Close()
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return f, func() { fh.Close() }, nil
	}
	u, err := url.Parse(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	key := strings.TrimPrefix(u.Path, "/")
	if u.Host == "" || key == "" {
		return nil, nil, usagef("%s: want %s://bucket/key", name, u.Scheme)
	}
	// abfss:// names its container in the user part.
	storeURL := url.URL{Scheme: u.Scheme, User: u.User, Host: u.Host, RawQuery: u.RawQuery}
	var opts []objstore.Option
	if u.Scheme == "s3" {
		if opts, err = s3EnvKeys(); err != nil {
			return nil, nil, err
		}
		if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" && !u.Query().Has("endpoint") {
			opts = append(opts, objstore.Endpoint(ep))
		}
	}
	// A gs:// object is read with the Application Default Credentials, or
	// from the emulator that STORAGE_EMULATOR_HOST or ?endpoint= names; an
	// Azure one with the credentials of the environment (objstore.Open).
	store, err := objstore.Open(ctx, storeURL.String(), opts...)
	if err != nil {
		return nil, nil, err
	}
	ra, err := store.NewReaderAt(ctx, key)
	if err != nil {
		store.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	f, err := reader.Open(ra, ra.Size(), ropts...)
	if err != nil {
		ra.Close()
		store.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, func() { ra.Close(); store.Close() }, nil
}

// s3EnvKeys returns the static credentials of S3_ACCESS_KEY, S3_SECRET_KEY
// and S3_SESSION_TOKEN, the variables the configuration examples read, when
// S3_ACCESS_KEY is set: with them the store signs with those keys and never
// walks the AWS default chain, which would end in probing EC2 instance
// metadata and logging the SDK's warning. Without S3_ACCESS_KEY it returns
// no option, and the default chain decides.
func s3EnvKeys() ([]objstore.Option, error) {
	access := os.Getenv("S3_ACCESS_KEY")
	if access == "" {
		if os.Getenv("S3_SECRET_KEY") != "" {
			return nil, usagef("S3_SECRET_KEY is set but S3_ACCESS_KEY is not: set both, or neither for the AWS default credential chain")
		}
		return nil, nil
	}
	secret := os.Getenv("S3_SECRET_KEY")
	if secret == "" {
		return nil, usagef("S3_ACCESS_KEY is set but S3_SECRET_KEY is not: set both, or neither for the AWS default credential chain")
	}
	return []objstore.Option{objstore.StaticCredentials(access, secret, os.Getenv("S3_SESSION_TOKEN"))}, nil
}

func printMeta(w io.Writer, name string, f *reader.File) error {
	md := f.Metadata()
	fmt.Fprintf(w, "file:        %s\n", name)
	fmt.Fprintf(w, "size:        %d bytes\n", f.Size())
	fmt.Fprintf(w, "created by:  %s\n", deref(md.CreatedBy))
	fmt.Fprintf(w, "version:     %d\n", md.Version)
	fmt.Fprintf(w, "rows:        %d in %d row groups\n", md.NumRows, len(md.RowGroups))
	if len(md.KeyValueMetadata) > 0 {
		fmt.Fprintln(w, "key-value metadata:")
		for _, kv := range md.KeyValueMetadata {
			v := deref(kv.Value)
			if len(v) > 200 {
				v = v[:200] + fmt.Sprintf("… (%d bytes)", len(v))
			}
			fmt.Fprintf(w, "  %s = %s\n", kv.Key, v)
		}
	}
	fmt.Fprintln(w, "schema:")
	for _, line := range strings.Split(strings.TrimRight(f.Schema().String(), "\n"), "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	leaves := f.Schema().Leaves()
	for ri, rg := range md.RowGroups {
		fmt.Fprintf(w, "row group %d: %d rows, %d bytes uncompressed", ri, rg.NumRows, rg.TotalByteSize)
		if rg.TotalCompressedSize != nil {
			fmt.Fprintf(w, ", %d compressed", *rg.TotalCompressedSize)
		}
		fmt.Fprintln(w)
		for ci, cc := range rg.Columns {
			cm := cc.MetaData
			if cm == nil {
				fmt.Fprintf(w, "  column %d: no metadata (encrypted?)\n", ci)
				continue
			}
			var leaf *schema.Node
			if ci < len(leaves) {
				leaf = leaves[ci]
			}
			fmt.Fprintf(w, "  %s: %s", strings.Join(cm.PathInSchema, "."), cm.Type)
			if leaf != nil && leaf.Logical.Kind != schema.None {
				fmt.Fprintf(w, " %s", leaf.Logical)
			}
			fmt.Fprintf(w, ", %s, %d values, %d → %d bytes\n", cm.Codec, cm.NumValues, cm.TotalUncompressedSize, cm.TotalCompressedSize)
			encs := make([]string, len(cm.Encodings))
			for i, e := range cm.Encodings {
				encs[i] = e.String()
			}
			fmt.Fprintf(w, "    encodings: %s", strings.Join(encs, ", "))
			if len(cm.EncodingStats) > 0 {
				var pages []string
				for _, st := range cm.EncodingStats {
					pages = append(pages, fmt.Sprintf("%d %s %s", st.Count, st.PageType, st.Encoding))
				}
				fmt.Fprintf(w, " (pages: %s)", strings.Join(pages, ", "))
			}
			fmt.Fprintln(w)
			if st := cm.Statistics; st != nil {
				fmt.Fprint(w, "    statistics:")
				if st.NullCount != nil {
					fmt.Fprintf(w, " nulls %d", *st.NullCount)
				}
				if st.NanCount != nil {
					fmt.Fprintf(w, ", NaNs %d", *st.NanCount)
				}
				if st.DistinctCount != nil {
					fmt.Fprintf(w, ", distinct %d", *st.DistinctCount)
				}
				if leaf != nil && st.MinValue != nil && st.MaxValue != nil {
					fmt.Fprintf(w, ", min %s%s, max %s%s", statText(leaf, st.MinValue), inexact(st.IsMinValueExact), statText(leaf, st.MaxValue), inexact(st.IsMaxValueExact))
				}
				fmt.Fprintln(w)
			}
			var extras []string
			if cc.ColumnIndexOffset != nil {
				extras = append(extras, fmt.Sprintf("column index %d bytes", deref(cc.ColumnIndexLength)))
			}
			if cc.OffsetIndexOffset != nil {
				extras = append(extras, fmt.Sprintf("offset index %d bytes", deref(cc.OffsetIndexLength)))
			}
			if cm.BloomFilterOffset != nil {
				extras = append(extras, fmt.Sprintf("bloom filter %d bytes", deref(cm.BloomFilterLength)))
			}
			if len(extras) > 0 {
				fmt.Fprintf(w, "    %s\n", strings.Join(extras, ", "))
			}
		}
	}
	return nil
}

func statText(leaf *schema.Node, plain []byte) string {
	v, err := reader.StatValue(leaf, plain)
	if err != nil {
		return fmt.Sprintf("0x%x", plain)
	}
	return string(v.AppendJSON(nil))
}

func inexact(exact *bool) string {
	if exact != nil && !*exact {
		return " (truncated)"
	}
	return ""
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func printRows(ctx context.Context, w io.Writer, f *reader.File, columns string, limit int64, asJSON bool) error {
	var opts []reader.RowsOption
	if columns != "" {
		opts = append(opts, reader.Columns(strings.Split(columns, ",")...))
	}
	rows, err := f.Rows(opts...)
	if err != nil {
		return err
	}
	for n := int64(0); limit < 0 || n < limit; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := rows.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("row %d: %w", n, err)
		}
		if !asJSON {
			// The plain form is the same JSON with a row number, for reading.
			if _, err := fmt.Fprintf(w, "%d: ", n); err != nil {
				return err
			}
		}
		// Streamed: a record's JSON may be far larger than the record
		// (a bit per null list element, five bytes of text).
		if err := v.WriteJSON(w); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return nil
}
