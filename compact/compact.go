// Package compact rewrites the small data files of pqsink's Iceberg tables
// into files near a target size, exactly: the rows of the files it
// replaces, each once, in one replace snapshot per run and table that
// carries the table's exactly-once state unchanged, so that sinks writing
// to the table go on where they were. The files are merged at the column
// chunk level (package merge), never record by record.
//
// A plan groups the live data files by folder (a pqsink table's folder is
// its partition tuple), takes those smaller than three quarters of the
// target and older than a minimum age, and packs them into bins of at most
// the target's size, each of files of one Parquet schema (a table whose
// schema evolved has several in one folder); a bin of fewer than the
// minimum number of inputs is left alone. The files of earlier
// compactions are taken again like any other, first in their folder: a
// daemon compacting every hour would otherwise leave a small file per
// hour, never merged again. Their ranges interleave with newer files'
// (each holds a stretch of every partition of the folder), which the merge
// copies as runs, so the new file is again in (partition, offset) order.
// Another engine's row-level deletes (merge-on-read DELETE in Spark,
// Trino, Flink) are applied: a small file that delete files (position
// deletes, deletion vectors, equality deletes) may apply to
// (table.LiveFile.Deletes, by the Iceberg spec's rules) is taken like any
// other, the rows they delete are read (table.Handle.Deletes) and left out
// of the new file (merge.Input.Deleted), and the rewrite removes the
// delete files that then apply to no live data file
// (table.Handle.RewriteApplying). A bin that holds such a file is
// rewritten even with fewer than the minimum of files: applying the
// deletes is worth a rewrite of its own. A file too large to compact is
// rewritten alone when deletes that name it delete 30% of its records or
// more, as Spark's delete-ratio-threshold. Files whose deletes cannot be
// applied (delete files of a format pqsink does not read; a deleted row
// of a file whose records' offsets are unknown, see merge.ErrUnplaced)
// are left alone.
//
// A file without Kafka ranges in its footer that another engine rewrote
// from the sink's (a copy-on-write DELETE or UPDATE keeps the columns,
// the _kafka envelope included, but not the sink's footer metadata) is
// taken back: its ranges are read from its envelope columns
// (archive/envelope), and it joins a bin with the sink's files whose
// columns it has the shape of (integer annotations and field ids aside;
// merge.Input.Ranges), or, with other such files only, takes the schema
// and records' schema of a sink's file of the table (merge.Like), so
// that the new file has the sink's footer and replay produces its
// records in their wire format. It holds only the rows the other engine
// kept, so merging it adds nothing back. Other files the sink did not
// write (no envelope, rows not one run per partition in offset order,
// columns of another shape) are left alone, counted in Report.Foreign.
//
// A run that dies leaves only uncommitted files (orphans), and a run whose
// inputs another rewrite replaced first gives up without committing
// (table.ErrRewriteConflict), as does one of which an input got a delete
// file after the plan that the plan did not apply
// (table.ErrRewriteDeletes); the next run plans again.
package compact

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/pqsink/pqsink/archive"
	"github.com/pqsink/pqsink/archive/envelope"
	"github.com/pqsink/pqsink/merge"
	"github.com/pqsink/pqsink/meta"
	"github.com/pqsink/pqsink/objstore"
	"github.com/pqsink/pqsink/reader"
	"github.com/pqsink/pqsink/schema"
	"github.com/pqsink/pqsink/table"
	"github.com/pqsink/pqsink/writer"
)

// outputPrefix begins the names of the files a compaction writes. They
// hold ranges of several Kafka partitions, each a run of rows, and are
// taken again by later compactions while they are small: Plan puts them
// first in their folder, and the merge interleaves their runs with those
// of the newer files, in offset order.
const outputPrefix = "compacted-"

// ErrTooSlow is the error of a run that merged for longer than
// Options.CommitWithin and gave up without committing.
var ErrTooSlow = errors.New("compaction too slow to commit safely")

// Options configure a compaction.
type Options struct {
	// TargetFileSize is the size the rewritten files aim at; files of
	// three quarters of it or more are left as they are. Defaults to
	// 256 MiB.
	TargetFileSize int64
	// MinInputFiles is the fewest files a bin must have to be rewritten.
	// Defaults to 5.
	MinInputFiles int
	// OlderThan leaves files committed more recently alone. Defaults to
	// 10 minutes.
	OlderThan time.Duration
	// MemoryLimit bounds a merge (see merge.MemoryLimit). Defaults to
	// 512 MiB.
	MemoryLimit int64
	// DryRun plans without rewriting anything.
	DryRun bool
	// CommitWithin, when positive, is how long after its start a run may
	// still commit: past it, the run gives up before the commit and
	// deletes what it wrote (ErrTooSlow). Orphan removal deletes files
	// that no snapshot references once they are older than its age; a
	// run's files are such files until its commit, so with orphan removal
	// (table.maintenance.remove_orphans_older_than) it must be well under
	// that age. Half of it is what callers in this module use.
	CommitWithin time.Duration
	// Progress, when set, is told of each bin as it is merged.
	Progress func(Progress)
	// Now is the time the ages are measured from. Defaults to time.Now.
	Now func() time.Time
	// ConvertMillis reads the footer of every live file old enough, to
	// find and convert the large ones with millisecond timestamps too (an
	// older pqsink's files; millisFiles): a read per file, once after an
	// upgrade. Without it only the small files, whose footers a run reads
	// anyway, are looked at, and converted when they are compacted.
	ConvertMillis bool

	// Folders, when set, are the only folders (as Bin.Folder names them)
	// planned: a compaction the small files of a few folders triggered
	// leaves the others to the scheduled runs.
	Folders map[string]bool
	// Tiered takes a compacted file only while it is no larger than the
	// files it joins (the folder's small sink files, and the smaller
	// compacted files taken before it, smallest first), or while more
	// than KeepCompacted would stay out: runs triggered every few seconds
	// then rewrite a byte a few times (about log2(target / files' size)),
	// not once per run, and a folder keeps a few small compacted files,
	// of sizes about doubling. Without it, every small compacted file is
	// taken, as a scheduled run does.
	Tiered bool
	// KeepCompacted, with Tiered, is the most small compacted files a
	// folder keeps out of the run (0: no limit): files of similar sizes,
	// each larger than the sink files of a run, are merged once there
	// are more.
	KeepCompacted int

	// convert are the files with millisecond timestamp columns, which
	// Plan takes whatever their size (millisFiles).
	convert map[string]bool
}

// Progress is how far a table's compaction has come.
type Progress struct {
	// Table is the table being compacted.
	Table string
	// Bin is the bin being merged, from 1, of Bins.
	Bin, Bins int
	// Bytes and TotalBytes are the input bytes merged so far, of all the
	// table's bins.
	Bytes, TotalBytes int64
}

// Bin is a group of files of one folder rewritten together.
type Bin struct {
	// Folder is the files' folder URI (their partition tuple).
	Folder string
	// Files are the inputs, by location.
	Files []table.LiveFile
	// Bytes and Records are the inputs' total size and records.
	Bytes, Records int64
	// Deleted is how many of the Records other engines' delete files
	// delete: the new files leave them out. Table sets it.
	Deleted int64
	// Rewritten is how many of the Files another engine wrote (a
	// copy-on-write DELETE's output), placed by their envelope columns.
	// Table sets it.
	Rewritten int
	// Converted is how many of the Files hold timestamps in
	// milliseconds (TIMESTAMP(MILLIS), an older pqsink's files): the new
	// files hold them in microseconds. Table sets it.
	Converted int
	// like is, for a bin of such files only, the sink's file whose
	// schema and records' schema the new file takes.
	like *footer
	// millis are the locations of the files with millisecond
	// timestamps, which make a bin worth rewriting whatever its number
	// of files.
	millis []string
}

// hasDeletes says whether delete files may apply to a file of b.
func (b Bin) hasDeletes() bool {
	return slices.ContainsFunc(b.Files, func(f table.LiveFile) bool { return f.Deletes > 0 })
}

// enough says whether b is rewritten: it has min files or more, or a
// file with deletes to apply.
func (b Bin) enough(min int) bool { return len(b.Files) >= min || b.hasDeletes() || len(b.millis) > 0 }

// Report says what a compaction of one table did (or, in a dry run, would
// do).
type Report struct {
	// Table is the table's identifier.
	Table string
	// Snapshot is the replace snapshot made; 0 when nothing was rewritten.
	Snapshot int64
	// Bins is the plan.
	Bins []Bin
	// FilesIn, BytesIn and Rows are the inputs'; FilesOut and BytesOut
	// the files written. Rows are the rows written: the inputs' records
	// but the DeletedRows.
	FilesIn, FilesOut int
	BytesIn, BytesOut int64
	Rows              int64
	// DeletedRows is how many rows of the inputs other engines' delete
	// files (position deletes, deletion vectors) delete: applied, they
	// are not in the new files.
	DeletedRows int64
	// DeleteFilesApplied is how many delete files were read to apply
	// them; DeleteFilesRemoved how many of those the rewrite removed (in
	// a dry run, would remove), as they apply to no data file left live.
	DeleteFilesApplied, DeleteFilesRemoved int
	// LiveFiles is how many data files the table had before the run.
	LiveFiles int
	// TooYoung is how many of them were left alone because they were
	// committed less than Options.OlderThan before the run.
	TooYoung int
	// WithDeletes is how many of them the plan took but left as they
	// are because it could not apply the delete files that may apply to
	// them: delete files of a format it does not read, or a file whose
	// records' offsets it cannot tell (see merge.ErrUnplaced).
	WithDeletes int
	// Foreign is how many files the plan would have taken but left as
	// they are because the sink did not write them (their footers have
	// no Kafka ranges) and it cannot take them back: no _kafka envelope
	// columns, rows not placeable by offset, or payload columns of
	// another shape than the sink's files'.
	Foreign int
	// TakenBack is how many of the inputs another engine wrote (the
	// output of a copy-on-write DELETE or UPDATE of the sink's files),
	// placed by their envelope columns and merged with the sink's.
	TakenBack int
	// Converted is how many of the inputs hold timestamps in
	// milliseconds (an older pqsink's files), which the new files hold
	// in microseconds, as Iceberg's timestamps are.
	Converted int
	// Twice is how many data files the table listed more than once (an
	// older pqsink's doing, when two consumer groups wrote to one
	// table), holding their records twice: the run lists them once
	// (table.Handle.ListOnce) before it plans, or, in a dry run, would.
	Twice int
	// Took is the run's time.
	Took time.Duration
}

func (o *Options) defaults() {
	if o.TargetFileSize <= 0 {
		o.TargetFileSize = 256 << 20
	}
	if o.MinInputFiles <= 0 {
		o.MinInputFiles = 5
	}
	if o.OlderThan < 0 {
		o.OlderThan = 0
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = 512 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Plan groups files into the bins a compaction rewrites (see the package
// documentation), packing each folder's files in the order of planOrder.
// Files that delete files may apply to are taken like others, and a bin
// that holds one is kept whatever its number of files. A file too large
// to be taken is taken alone, in a bin of its own, when the deletion
// vectors and position delete files that name it delete deleteRatio of
// its records or more (table.LiveFile.NamedDeletes).
// A compacted file that too few files would join within the target (a
// bin of fewer than MinInputFiles) stays out of the run, and the files
// after it are packed without it.
func Plan(files []table.LiveFile, o Options) []Bin {
	o.defaults()
	small := o.TargetFileSize / 4 * 3
	cutoff := o.Now().Add(-o.OlderThan)
	byFolder := map[string][]table.LiveFile{}
	var alone []Bin
	for _, f := range files {
		if f.Added.After(cutoff) || (o.Folders != nil && !o.Folders[folderOf(f.Location)]) {
			continue
		}
		if f.Size >= small && !o.convert[f.Location] {
			if f.Records > 0 && float64(f.NamedDeletes) >= deleteRatio*float64(f.Records) {
				dir := f.Location[:max(strings.LastIndexByte(f.Location, '/'), 0)]
				alone = append(alone, Bin{Folder: dir, Files: []table.LiveFile{f}, Bytes: f.Size, Records: f.Records})
			}
			continue
		}
		// Not path.Dir, which would fold a URI's "//".
		dir := f.Location[:max(strings.LastIndexByte(f.Location, '/'), 0)]
		byFolder[dir] = append(byFolder[dir], f)
	}
	folders := make([]string, 0, len(byFolder))
	for dir := range byFolder {
		folders = append(folders, dir)
	}
	slices.Sort(folders)
	var bins []Bin
	for _, dir := range folders {
		fs := byFolder[dir]
		if o.Tiered {
			fs = tiered(fs, o.KeepCompacted)
		}
		slices.SortFunc(fs, planOrder)
		cur := Bin{Folder: dir}
		flush := func() {
			if cur.enough(o.MinInputFiles) {
				bins = append(bins, cur)
			}
			cur = Bin{Folder: dir}
		}
		for _, f := range fs {
			for len(cur.Files) > 0 && cur.Bytes+f.Size > o.TargetFileSize {
				if !cur.enough(o.MinInputFiles) && isCompacted(cur.Files[0].Location) {
					// Too few files to make a bin: rather than losing the
					// sink files it holds to a bin left alone, the
					// compacted file (near the target already) stays out
					// of this run.
					cur.Bytes -= cur.Files[0].Size
					cur.Records -= cur.Files[0].Records
					cur.millis = slices.DeleteFunc(cur.millis, func(l string) bool { return l == cur.Files[0].Location })
					cur.Files = cur.Files[1:]
					continue
				}
				flush()
			}
			cur.Files = append(cur.Files, f)
			cur.Bytes += f.Size
			cur.Records += f.Records
			if o.convert[f.Location] {
				cur.millis = append(cur.millis, f.Location)
			}
		}
		flush()
	}
	slices.SortFunc(alone, func(a, b Bin) int { return strings.Compare(a.Files[0].Location, b.Files[0].Location) })
	return append(bins, alone...)
}

// folderOf is the folder of the file at loc: not path.Dir, which would
// fold a URI's "//".
func folderOf(loc string) string { return loc[:max(strings.LastIndexByte(loc, '/'), 0)] }

// tiered leaves out of a folder's small files the compacted ones larger
// than what they would join (Options.Tiered): the sink's files, then the
// compacted files smallest first, each taken while no larger than the
// sum of those taken before it, or while more than keep (when positive)
// would be left. A compacted file that delete files may apply to is
// taken whatever its size.
func tiered(fs []table.LiveFile, keep int) []table.LiveFile {
	var sum int64
	var out, compacted []table.LiveFile
	for _, f := range fs {
		if isCompacted(f.Location) && f.Deletes == 0 {
			compacted = append(compacted, f)
			continue
		}
		out = append(out, f)
		sum += f.Size
	}
	slices.SortStableFunc(compacted, func(a, b table.LiveFile) int { return cmp.Compare(a.Size, b.Size) })
	for i, f := range compacted {
		if f.Size > sum && (keep <= 0 || len(compacted)-i <= keep) {
			break
		}
		out = append(out, f)
		sum += f.Size
	}
	return out
}

// tooYoung counts the files committed after cutoff, which Plan leaves
// alone.
func tooYoung(files []table.LiveFile, cutoff time.Time) int {
	n := 0
	for _, f := range files {
		if f.Added.After(cutoff) {
			n++
		}
	}
	return n
}

// deleteRatio is the share of a large file's records that deletes naming
// it must delete for Plan to rewrite it alone: Spark's
// rewrite_data_files rewrites a file of which delete-ratio-threshold
// (0.3 by default) of the rows are deleted.
const deleteRatio = 0.3

// planOrder is the order in which Plan packs a folder's files: the files
// of earlier compactions first, oldest first (their names begin with a
// snapshot id, which says nothing of age), then the sink's files by name,
// which orders a partition's files by offset. The oldest records of the
// folder's partitions are in the compacted files, so the first bin takes
// them with the sink files that follow: its new file continues theirs,
// and the folder keeps one small compacted file, not one per run. Which
// files share a bin is a matter of size alone: the merge orders any
// files of a folder by partition and offset.
func planOrder(a, b table.LiveFile) int {
	ca, cb := isCompacted(a.Location), isCompacted(b.Location)
	switch {
	case ca && !cb:
		return -1
	case cb && !ca:
		return 1
	case ca && !a.Added.Equal(b.Added):
		return a.Added.Compare(b.Added)
	}
	return strings.Compare(a.Location, b.Location)
}

// isCompacted reports whether the file at loc was written by a compaction.
func isCompacted(loc string) bool {
	return strings.HasPrefix(path.Base(loc), outputPrefix)
}

// Table compacts the table of h, whose data files are in store (a file's
// key is its location without storeURL and a slash).
func Table(ctx context.Context, h *table.Handle, store objstore.Store, storeURL string, o Options) (Report, error) {
	o.defaults()
	start := o.Now()
	rep := Report{Table: h.Name()}
	if !o.DryRun {
		res, err := h.ListOnce(ctx)
		if err != nil {
			return rep, err
		}
		rep.Twice = res.Files
	}
	live, snapshot, err := h.Live(ctx)
	if err != nil {
		return rep, err
	}
	var twice int
	if live, twice = once(live); o.DryRun {
		rep.Twice = twice
	}
	rep.LiveFiles = len(live)
	prefix := strings.TrimSuffix(storeURL, "/") + "/"
	keyOf := func(loc string) (string, error) {
		key, ok := strings.CutPrefix(loc, prefix)
		if !ok {
			return "", fmt.Errorf("data file %s is not under store.url %s", loc, storeURL)
		}
		return key, nil
	}
	footers := map[string]footer{}
	if o.convert, err = millisFiles(ctx, store, keyOf, live, o, footers); err != nil {
		return rep, fmt.Errorf("table %s: %w", rep.Table, err)
	}
	// One instant for the count and the plan, so that they agree.
	planned := o
	at := o.Now()
	planned.Now = func() time.Time { return at }
	rep.TooYoung = tooYoung(live, at.Add(-o.OlderThan))
	bins := Plan(live, planned)
	if err := readFooters(ctx, store, keyOf, bins, footers); err != nil {
		return rep, fmt.Errorf("table %s: %w", rep.Table, err)
	}
	bins, rep.Foreign = sinkFilesOnly(bins, footers)
	var unplaced int
	bins, unplaced = without(bins, func(f table.LiveFile) bool { return f.Deletes > 0 && !footers[f.Location].placed })
	rep.WithDeletes += unplaced
	likes := &donors{ctx: ctx, store: store, keyOf: keyOf, live: live, footers: footers}
	var unshaped int
	rep.Bins, unshaped, err = byShape(bins, o.MinInputFiles, footers, likes.like)
	if err != nil {
		return rep, fmt.Errorf("table %s: %w", rep.Table, err)
	}
	rep.Foreign += unshaped
	deletes, err := readDeletes(ctx, h, snapshot, &rep, o.MinInputFiles)
	if err != nil {
		return rep, err
	}
	for i := range rep.Bins {
		b := &rep.Bins[i]
		for _, f := range b.Files {
			if footers[f.Location].envelope != nil {
				b.Rewritten++
			}
		}
		b.Converted = converted(*b, footers)
		rep.TakenBack += b.Rewritten
		rep.Converted += b.Converted
	}
	for _, b := range rep.Bins {
		rep.FilesIn += len(b.Files)
		rep.BytesIn += b.Bytes
		rep.Rows += b.Records - b.Deleted
		rep.DeletedRows += b.Deleted
	}
	if o.DryRun || len(rep.Bins) == 0 {
		rep.Took = time.Since(start)
		return rep, nil
	}
	var tag [6]byte
	rand.Read(tag[:])
	name := fmt.Sprintf("%s%d-%s", outputPrefix, snapshot, hex.EncodeToString(tag[:]))
	var remove []string
	var add []table.File
	var done int64
	for i, b := range rep.Bins {
		outs, files, err := mergeBin(ctx, store, keyOf, b, footers, deletes.Rows, fmt.Sprintf("%s-%03d", name, i), o, func(p merge.Progress) {
			if o.Progress != nil {
				o.Progress(Progress{Table: rep.Table, Bin: i + 1, Bins: len(rep.Bins), Bytes: done + p.Bytes, TotalBytes: rep.BytesIn})
			}
		})
		if err != nil {
			return rep, fmt.Errorf("table %s, folder %s: %w", rep.Table, b.Folder, err)
		}
		done += b.Bytes
		for _, f := range b.Files {
			remove = append(remove, f.Location)
		}
		for j, out := range outs {
			add = append(add, table.File{Location: files[j], Size: out.Bytes, Footer: out.Metadata})
			rep.FilesOut++
			rep.BytesOut += out.Bytes
		}
	}
	if o.CommitWithin > 0 {
		if took := o.Now().Sub(start); took > o.CommitWithin {
			// Not committed, so nobody references them: ours to delete,
			// before orphan removal might delete them after a commit.
			var errs []error
			for _, f := range add {
				key, err := keyOf(f.Location)
				if err == nil {
					err = store.Delete(ctx, key)
				}
				errs = append(errs, err)
			}
			rep.Took = time.Since(start)
			err := fmt.Errorf("table %s: %w: merging took %s, more than %s; nothing committed, and the %d files it wrote are deleted",
				rep.Table, ErrTooSlow, took.Round(time.Second), o.CommitWithin, len(add))
			if derr := errors.Join(errs...); derr != nil {
				err = fmt.Errorf("%w (deleting them: %v)", err, derr)
			}
			return rep, err
		}
	}
	res, err := h.RewriteApplying(ctx, remove, add, deletes.Applied)
	if err != nil {
		return rep, err
	}
	rep.Snapshot, rep.DeleteFilesRemoved = res.SnapshotID, res.DeleteFilesRemoved
	rep.Took = time.Since(start)
	return rep, nil
}

// once lists each file of live once (the first time it is listed), and
// says how many were listed more than once.
func once(live []table.LiveFile) ([]table.LiveFile, int) {
	seen := make(map[string]int, len(live))
	out := live[:0:0]
	twice := 0
	for _, f := range live {
		switch seen[f.Location]++; seen[f.Location] {
		case 1:
			out = append(out, f)
		case 2:
			twice++
		}
	}
	return out, twice
}

// mergeBin merges the files of b into new objects in its folder named
// after name, leaving out the rows of deleted (by file location), and
// returns what the merge wrote and their locations.
func mergeBin(ctx context.Context, store objstore.Store, keyOf func(string) (string, error), b Bin, footers map[string]footer, deleted map[string]*table.Positions, name string, o Options, progress func(merge.Progress)) ([]merge.Output, []string, error) {
	inputs := make([]merge.Input, 0, len(b.Files))
	for _, f := range b.Files {
		key, err := keyOf(f.Location)
		if err != nil {
			return nil, nil, err
		}
		r, err := store.NewReaderAt(ctx, key)
		if err != nil {
			return nil, nil, fmt.Errorf("opening %s: %w", f.Location, err)
		}
		defer r.Close()
		in := merge.Input{Name: f.Location, R: r, Size: r.Size(), Ranges: footers[f.Location].envelope}
		if p := deleted[f.Location]; p != nil {
			in.Deleted = p.Sorted()
		}
		inputs = append(inputs, in)
	}
	var uploads []objstore.Upload
	var locations []string
	defer func() {
		for _, u := range uploads {
			u.Abort(context.WithoutCancel(ctx))
		}
	}()
	folderKey, err := keyOf(b.Folder)
	if err != nil {
		return nil, nil, err
	}
	create := func(n int) (io.Writer, error) {
		key := fmt.Sprintf("%s/%s-%d.parquet", folderKey, name, n)
		u, err := store.Create(ctx, key)
		if err != nil {
			return nil, err
		}
		uploads = append(uploads, u)
		locations = append(locations, b.Folder+"/"+path.Base(key))
		return u, nil
	}
	opts := []merge.Option{merge.TargetFileSize(o.TargetFileSize), merge.MemoryLimit(o.MemoryLimit), merge.OnProgress(progress)}
	if b.like != nil {
		opts = append(opts, merge.Like(b.like.sch, b.like.lend))
	}
	// Millisecond timestamps become microseconds, Iceberg's unit; a JSON
	// schema file's columns are named for replay.
	opts = append(opts, merge.WidenMillis())
	if units, ok, err := unitsEntry(b, footers); err != nil {
		return nil, nil, err
	} else if ok {
		opts = append(opts, merge.WriterOptions(writer.KeyValue(archive.JSONTimestampUnitsKey, units)))
	}
	outs, err := merge.Merge(ctx, inputs, create, opts...)
	if err != nil {
		return nil, nil, err
	}
	for i, u := range uploads {
		if _, err := u.Commit(ctx); err != nil {
			if errors.Is(err, objstore.ErrExists) {
				err = fmt.Errorf("%s exists already: %w", locations[i], err)
			}
			return nil, nil, err
		}
	}
	uploads = nil
	return outs, locations, nil
}

// bySchema splits each bin into bins of files of one Parquet schema, in
// their order: a table whose schema evolved has files of several schemas
// in one folder, which one merge cannot take. A part with fewer than min
// files is left out. It reads each file's footer.
func bySchema(ctx context.Context, store objstore.Store, keyOf func(string) (string, error), bins []Bin, min int) ([]Bin, error) {
	return splitBySchema(bins, min, func(loc string) (string, error) {
		f, err := readFooter(ctx, store, keyOf, loc)
		return f.schema, err
	})
}

// splitBySchema is bySchema, with schemaOf giving a file's schema.
func splitBySchema(bins []Bin, min int, schemaOf func(loc string) (string, error)) ([]Bin, error) {
	var out []Bin
	for _, b := range bins {
		var parts []Bin
		index := map[string]int{}
		for _, f := range b.Files {
			text, err := schemaOf(f.Location)
			if err != nil {
				return nil, err
			}
			i, ok := index[text]
			if !ok {
				i = len(parts)
				index[text] = i
				parts = append(parts, Bin{Folder: b.Folder})
			}
			p := &parts[i]
			p.Files = append(p.Files, f)
			p.Bytes += f.Size
			p.Records += f.Records
		}
		for _, p := range parts {
			if p.enough(min) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

// footer is what a plan reads of a file's footer.
type footer struct {
	// schema is the file's Parquet schema, as text.
	schema string
	// sink says whether the file's footer has Kafka ranges (the sink's
	// files and compactions' have).
	sink bool
	// placed says whether the merge can tell the offsets of the file's
	// records, to write the ranges of what remains of it once deleted
	// rows are left out: it has a _kafka.offset column, or its ranges
	// have no gaps (see merge.ErrUnplaced).
	placed bool
	// envelope are, for a file without Kafka ranges in its footer that
	// another engine rewrote from the sink's, the ranges its envelope
	// columns say it holds (envelope.Place); nil for others, and for
	// such a file whose rows cannot be placed by offset.
	envelope []archive.Range
	// sch is the file's Parquet schema; lend, for a sink's file, the
	// entries of its footer that say the records' schema
	// (envelope.SchemaEntries).
	sch  *schema.Schema
	lend []meta.KeyValue
	// held are the Kafka ranges the file holds: its footer's, or
	// envelope.
	held []archive.Range
	// millis are the file's INT64 TIMESTAMP(MILLIS) columns, which the
	// merge converts to microseconds (schema and sch have them in
	// microseconds already, so that the file shares a bin with the
	// newer files of its columns); units its archive.JSONTimestampUnitsKey
	// entry. ownSchema says that its records have a schema of their own
	// in the footer (Avro, Protobuf, JSON Schema: envelope.SchemaEntries),
	// which tells replay their millisecond columns; a JSON schema file's
	// records, and a VARIANT's, have none.
	millis    []string
	units     string
	ownSchema bool
}

// readFooters reads into out the footers of the files of bins, by
// location, but those out has already.
func readFooters(ctx context.Context, store objstore.Store, keyOf func(string) (string, error), bins []Bin, out map[string]footer) error {
	for _, b := range bins {
		for _, f := range b.Files {
			if _, ok := out[f.Location]; ok {
				continue
			}
			ft, err := readFooter(ctx, store, keyOf, f.Location)
			if err != nil {
				return err
			}
			out[f.Location] = ft
		}
	}
	return nil
}

// sinkFilesOnly leaves out of bins the files whose footers have no Kafka
// ranges and that cannot be placed by their envelope columns, and says
// how many it left out. Such a file is another engine's (an INSERT's, or
// a copy-on-write DELETE's output of rows the merge could not put in
// offset order): the merge takes archive files only with archive files
// and files placed by their envelope columns, and the table is no worse
// for a few of them. A footer whose ranges do not read is taken for one
// too: a file the plan is unsure of is left as it is. A bin of fewer
// files than the minimum is dropped later (by shape).
func sinkFilesOnly(bins []Bin, footers map[string]footer) ([]Bin, int) {
	return without(bins, func(f table.LiveFile) bool {
		ft := footers[f.Location]
		return !ft.sink && ft.envelope == nil
	})
}

// readFooter reads the footer of the file at loc.
func readFooter(ctx context.Context, store objstore.Store, keyOf func(string) (string, error), loc string) (footer, error) {
	key, err := keyOf(loc)
	if err != nil {
		return footer{}, err
	}
	r, err := store.NewReaderAt(ctx, key)
	if err != nil {
		return footer{}, fmt.Errorf("opening %s: %w", loc, err)
	}
	defer r.Close()
	f, err := reader.Open(r, r.Size())
	if err != nil {
		return footer{}, fmt.Errorf("reading the footer of %s: %w", loc, err)
	}
	kv := f.Metadata().KeyValueMetadata
	ranges, err := archive.ReadRanges(kv)
	wide := widened(f.Schema())
	ft := footer{schema: wide.String(), sink: err == nil && len(ranges) > 0, sch: wide, held: ranges,
		millis: millisColumns(f.Schema()), ownSchema: len(envelope.SchemaEntries(kv)) > 0}
	for _, e := range kv {
		if e.Key == archive.JSONTimestampUnitsKey && e.Value != nil {
			ft.units = *e.Value
		}
	}
	ft.placed = f.Schema().Leaf(offsetColumn) != nil || !slices.ContainsFunc(ranges, func(r archive.Range) bool { return r.Last-r.First+1 != r.Records })
	switch {
	case ft.sink:
		ft.lend = envelope.SchemaEntries(kv)
	case errors.Is(err, archive.ErrForeign):
		if ft.envelope, err = placeRewritten(ctx, f); err != nil {
			return footer{}, fmt.Errorf("placing %s by its envelope columns: %w", loc, err)
		}
		ft.held = ft.envelope
	}
	return ft, nil
}
