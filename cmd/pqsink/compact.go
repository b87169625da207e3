package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pqsink/pqsink/compact"
	"github.com/pqsink/pqsink/config"
	"github.com/pqsink/pqsink/objstore/fromconfig"
	"github.com/pqsink/pqsink/table"
)

const compactUsage = `usage: pqsink compact --config FILE [--table NAMESPACE.TABLE] [--target-file-size 256MiB]
                      [--min-input-files 5] [--older-than 10m] [--rewrite-manifests-above N] [--convert-millis] [--dry-run]

Rewrites the small data files of the Iceberg tables that pqsink run lands
(the config's table section; every table of its namespace, or the one
named) into files near the target size, exactly: the same rows, each
once, in one replace snapshot per table that carries the tables'
exactly-once state, so that running sinks go on where they were. Files of
three quarters of the target or more, and files committed less than
--older-than ago, are left alone; so is a folder (a partition tuple) with
fewer than --min-input-files small files. With --rewrite-manifests-above,
a table whose current snapshot then lists more manifests than that has
them merged too (every commit of a sink writes one). --dry-run prints the
plan.

flags:
`

func runCompact(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, compactUsage); fs.PrintDefaults() }
	configFile := fs.String("config", "", "the YAML configuration `FILE` of pqsink run (its table and store sections; required)")
	tableName := fs.String("table", "", "compact only this table, `NAMESPACE.TABLE` (default: every table of table.namespace)")
	target := fs.String("target-file-size", "256MiB", "the `SIZE` the rewritten files aim at")
	minInputs := fs.Int("min-input-files", 5, "the fewest small files of a folder worth rewriting")
	olderThan := fs.Duration("older-than", 10*time.Minute, "leave files committed more recently than this alone")
	manifestsAbove := fs.Int("rewrite-manifests-above", 0, "also merge a table's manifests when its current snapshot lists more than `N` (0: leave them)")
	dryRun := fs.Bool("dry-run", false, "print what would be rewritten, and rewrite nothing")
	quiet := fs.Bool("quiet", false, "no progress lines")
	convertMillis := fs.Bool("convert-millis", false, "read every file's footer, and rewrite the large files with millisecond timestamps (an older pqsink's) into microseconds too: once after an upgrade")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("compact takes no arguments, got %q", rest)
	}
	if *configFile == "" {
		return usagef("--config is required")
	}
	o := compact.Options{MinInputFiles: *minInputs, OlderThan: *olderThan, DryRun: *dryRun, ConvertMillis: *convertMillis}
	if o.TargetFileSize, err = config.ParseSize(*target); err != nil || o.TargetFileSize < 1<<20 {
		return usagef("--target-file-size %q: want a size of 1MiB or more, e.g. 256MiB", *target)
	}
	if *minInputs < 2 {
		return usagef("--min-input-files %d: want 2 or more", *minInputs)
	}
	if *olderThan < 0 {
		return usagef("--older-than %v: want a duration of 0 or more", *olderThan)
	}
	if *manifestsAbove < 0 {
		return usagef("--rewrite-manifests-above %d: want 0 (off) or more", *manifestsAbove)
	}
	cfg, err := config.Load(*configFile, os.LookupEnv)
	if err != nil {
		return err
	}
	if cfg.Table == nil {
		return fmt.Errorf("%s has no table section: compact rewrites the files of Iceberg tables", *configFile)
	}
	o.MemoryLimit = cfg.Memory.Limit
	if m := cfg.Table.Maintenance; m != nil {
		// The daemons of this configuration remove orphans of that age:
		// commit well before this run's files could be taken for some.
		o.CommitWithin = m.RemoveOrphansOlderThan / 2
	}
	cat, err := table.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer cat.Close()
	var idents [][]string
	if *tableName != "" {
		ref, err := parseTableRef(tableScheme+*tableName, cfg.Table.Namespace)
		if err != nil || ref.snapshot != 0 {
			return usagef("--table %q: want NAMESPACE.TABLE", *tableName)
		}
		idents = [][]string{ref.ident}
	} else if idents, err = cat.Tables(ctx); err != nil {
		return err
	}
	store, err := fromconfig.Open(ctx, cfg.Store.URL, &cfg.Store)
	if err != nil {
		return err
	}
	defer store.Close()
	if !*quiet {
		pp := &compactProgress{w: stderr, terminal: isTerminal(stderr)}
		o.Progress = pp.print
	}
	var failed []error
	for _, ident := range idents {
		h, err := cat.Existing(ctx, ident)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		rep, err := compact.Table(ctx, h, store, cfg.Store.URL, o)
		if o.Progress != nil && len(rep.Bins) > 0 && !o.DryRun && isTerminal(stderr) {
			fmt.Fprintln(stderr)
		}
		if err != nil {
			failed = append(failed, err)
			continue
		}
		printCompaction(stdout, rep, o.DryRun, *olderThan)
		if *manifestsAbove > 0 {
			if err := rewriteManifests(ctx, stdout, h, *manifestsAbove, o.DryRun); err != nil {
				failed = append(failed, err)
			}
		}
	}
	if len(idents) == 0 {
		fmt.Fprintf(stdout, "no table in namespace %s\n", cfg.Table.Namespace)
	}
	return errors.Join(failed...)
}

// compactProgress prints a compaction's progress: on a terminal one line
// rewritten in place (\r) at each merged row group; elsewhere (a log
// file, a pipe) plain lines, one as each bin starts and one at each
// further tenth of the table's bytes, so that a log holds a readable
// handful of lines per table.
type compactProgress struct {
	w        io.Writer
	terminal bool
	table    string
	bin      int
	tenth    int64
}

func (c *compactProgress) print(p compact.Progress) {
	line := fmt.Sprintf("compact: %s: bin %d/%d, %.1f/%.1f MB", p.Table, p.Bin, p.Bins, float64(p.Bytes)/1e6, float64(p.TotalBytes)/1e6)
	if c.terminal {
		fmt.Fprint(c.w, "\r"+line)
		return
	}
	tenth := int64(0)
	if p.TotalBytes > 0 {
		tenth = p.Bytes * 10 / p.TotalBytes
	}
	if p.Table == c.table && p.Bin == c.bin && tenth <= c.tenth {
		return
	}
	c.table, c.bin, c.tenth = p.Table, p.Bin, tenth
	fmt.Fprintln(c.w, line)
}

// printCompaction prints a table's compaction, or its plan; olderThan is
// the run's --older-than.
func printCompaction(w io.Writer, rep compact.Report, dryRun bool, olderThan time.Duration) {
	defer printLeftOut(w, rep, olderThan)
	defer printDeletes(w, rep, dryRun)
	defer printCounts(w, rep, dryRun)
	if len(rep.Bins) == 0 {
		fmt.Fprintf(w, "%s: nothing to rewrite (%d data files)\n", rep.Table, rep.LiveFiles)
		return
	}
	if dryRun {
		fmt.Fprintf(w, "%s: would rewrite %d of %d data files (%.1f MB, %d rows) in %d bins:\n", rep.Table, rep.FilesIn, rep.LiveFiles, float64(rep.BytesIn)/1e6, rep.Rows, len(rep.Bins))
		for _, b := range rep.Bins {
			deleted := ""
			if b.Deleted > 0 {
				deleted = fmt.Sprintf(", %d deleted", b.Deleted)
			}
			if b.Rewritten > 0 {
				deleted += fmt.Sprintf(", %d rewritten by another engine", b.Rewritten)
			}
			if b.Converted > 0 {
				deleted += fmt.Sprintf(", %d with millisecond timestamps", b.Converted)
			}
			fmt.Fprintf(w, "  %s: %d files, %.1f MB, %d rows%s\n", shortFolder(b.Folder), len(b.Files), float64(b.Bytes)/1e6, b.Records, deleted)
		}
		return
	}
	secs := max(rep.Took.Seconds(), 1e-9)
	fmt.Fprintf(w, "%s: rewrote %d files (%.1f MB) into %d (%.1f MB), %d rows, in %.1fs (%.1f MB/s), snapshot %d\n",
		rep.Table, rep.FilesIn, float64(rep.BytesIn)/1e6, rep.FilesOut, float64(rep.BytesOut)/1e6, rep.Rows, rep.Took.Seconds(), float64(rep.BytesIn)/1e6/secs, rep.Snapshot)
}

// printCounts says what a compaction did (or would do) to files it
// treats apart: converted millisecond timestamps, files listed twice, and
// other engines' rewrites taken back.
func printCounts(w io.Writer, rep compact.Report, dryRun bool) {
	for _, c := range []struct {
		n          int
		did, would string
		what       string
	}{
		{rep.Converted, "converted", "would convert", "data files with millisecond timestamps (TIMESTAMP(MILLIS)) to microseconds"},
		{rep.Twice, "repaired", "would repair", "data files listed twice (their records were in the table twice; now once)"},
		{rep.TakenBack, "took back", "would take back", "data files another engine rewrote (copy-on-write deletes), placed by their _kafka columns"},
	} {
		if c.n == 0 {
			continue
		}
		verb := c.did
		if dryRun {
			verb = c.would
		}
		fmt.Fprintf(w, "%s: %s %d %s\n", rep.Table, verb, c.n, c.what)
	}
}

// printDeletes says what a compaction did (or would do) of other engines'
// deletes: the deleted rows it left out of the new files, and the delete
// files it removed.
func printDeletes(w io.Writer, rep compact.Report, dryRun bool) {
	if rep.DeleteFilesApplied == 0 {
		return
	}
	if dryRun {
		fmt.Fprintf(w, "%s: would apply %d delete files (%d deleted rows left out of the new files) and remove %d of them\n",
			rep.Table, rep.DeleteFilesApplied, rep.DeletedRows, rep.DeleteFilesRemoved)
		return
	}
	fmt.Fprintf(w, "%s: applied %d delete files (%d deleted rows left out of the new files) and removed %d of them\n",
		rep.Table, rep.DeleteFilesApplied, rep.DeletedRows, rep.DeleteFilesRemoved)
}

// printLeftOut says which files a compaction left as they are whatever
// their size: those committed too recently, those with another engine's
// deletes it could not apply, and those the sink did not write.
func printLeftOut(w io.Writer, rep compact.Report, olderThan time.Duration) {
	if rep.TooYoung > 0 {
		fmt.Fprintf(w, "%s: left %d data files as they are: committed less than %s ago (--older-than %s; --older-than 0 takes them too)\n", rep.Table, rep.TooYoung, shortDuration(olderThan), shortDuration(olderThan))
	}
	if rep.WithDeletes > 0 {
		fmt.Fprintf(w, "%s: left %d data files as they are: delete files (another engine's row-level deletes) may apply to them that compaction could not apply (delete files in a format pqsink does not read, or records whose offsets are unknown)\n", rep.Table, rep.WithDeletes)
	}
	if rep.Foreign > 0 {
		fmt.Fprintf(w, "%s: left %d data files as they are: pqsink did not write them (no Kafka ranges in their footers), and it cannot place their rows by their _kafka columns beside its own\n", rep.Table, rep.Foreign)
	}
}

// rewriteManifests merges h's manifests when its current snapshot lists
// more than above, and says what it did (or would do).
func rewriteManifests(ctx context.Context, w io.Writer, h *table.Handle, above int, dryRun bool) error {
	if dryRun {
		n, err := h.ManifestCount(ctx)
		if err != nil {
			return err
		}
		verdict := "would merge them"
		if n <= above {
			verdict = fmt.Sprintf("%d or fewer: left as they are", above)
		}
		fmt.Fprintf(w, "%s: %d manifests, %s\n", h.Name(), n, verdict)
		return nil
	}
	res, err := h.RewriteManifests(ctx, above)
	if err != nil {
		return err
	}
	if res.Snapshot == 0 {
		fmt.Fprintf(w, "%s: %d manifests, %d or fewer: left as they are\n", h.Name(), res.Before, above)
		return nil
	}
	fmt.Fprintf(w, "%s: merged %d of %d manifests into %d (%d now), snapshot %d\n", h.Name(), res.Rewritten, res.Before, res.Added, res.After, res.Snapshot)
	return nil
}

// shortDuration is d as time.Duration prints it without its zero
// trailing units: 10m, not 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortFolder is a folder's part from the table's data/ on.
func shortFolder(folder string) string {
	if i := strings.Index(folder, "/data/"); i >= 0 {
		return folder[i+1:]
	}
	return folder
}
